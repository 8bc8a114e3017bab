// The walkthrough of the source documents, on the real control plane, for two kinds served by one
// operator process: create a CR, see the Deployment and NodePort Service, scale it, read status.nodes.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject } from '@kubernetes/client-node';
import { join } from 'node:path';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromFile } from 'appkind-operator/kinds';
import { render } from '../../operator/kinds/render.js';
import { firstDifference } from '../../operator/controller/diff.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { eventually, sharedCluster } from './cluster.js';
import { OperatorProcess, startOperatorTest } from './operator-process.js';

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
type Deployment = Obj & { spec: { replicas: number }; status?: { readyReplicas?: number } };
type Service = Obj & { spec: { type: string; ports: { port: number; nodePort?: number }[] } };
type Resource = Obj & { status?: { nodes?: string[]; replicas?: number; readyReplicas?: number; nodePort?: number; selector?: string; observedGeneration?: number; conditions?: { type: string; status: string; reason: string; observedGeneration?: number }[] } };

const root = join(import.meta.dirname, '..', '..');
const kinds = kindsFromFile(join(root, 'examples', 'appkinds.yaml'));
const [echoflask, takara] = kinds as [AppKind, AppKind];

let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const ref = (apiVersion: string, kind: string, name: string): KubernetesObject => ({ apiVersion, kind, metadata: { name, namespace: ns } });
const crRef = (k: AppKind, name: string) => ref(`${k.group}/${k.version}`, k.kind, name);
const get = <T extends KubernetesObject>(r: KubernetesObject) => rest.get<T>(r);
async function podNames(instance: string): Promise<string[]> {
  const pods = await rest.list<Obj>('v1', 'Pod', ns, `app.kubernetes.io/instance=${instance}`);
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name!).sort();
}

beforeAll(async () => {
  ({ rest, ns, operator } = await startOperatorTest('walkthrough', kinds, { APPKIND_CONFIG: join(root, 'examples', 'appkinds.yaml') }));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe.each([
  ['EchoFlask', echoflask],
  ['Takara', takara],
])('the walkthrough for %s, served by the same operator process', (_name, kind) => {
  const name = `example-${kind.appName}`;
  // Functions: the namespace exists only once beforeAll ran.
  const cr = () => crRef(kind, name);
  const deployment = () => ref('apps/v1', 'Deployment', `${name}-deployment`);
  const service = () => ref('v1', 'Service', `${name}-svc`);

  test('a CR with size 3 gets a Deployment of 3, a NodePort Service, and its pod names in status.nodes', async () => {
    await rest.apply({ ...cr(), spec: { size: 3 } }, 'test-user');
    await eventually('Deployment with 3 replicas', async () => (await get<Deployment>(deployment()))?.spec.replicas === 3);
    // The operator applies the Service right after the Deployment, one request later.
    await eventually('Service', async () => !!(await get<Service>(service())));
    const svc = (await get<Service>(service()))!;
    expect(svc.spec.type).toBe('NodePort');
    expect(svc.spec.ports[0]!.port).toBe(kind.port);
    const nodePort = svc.spec.ports[0]!.nodePort!;
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    expect(nodePort).toBeLessThanOrEqual(32767);
    // status comes from the operator's caches, which see the pods and the Service in either order.
    await eventually('status.nodes lists the 3 pods and status.nodePort is the Service\'s', async () => {
      const status = (await get<Resource>(cr()))?.status;
      return status?.nodes?.length === 3 && JSON.stringify(status.nodes) === JSON.stringify(await podNames(name)) && status.nodePort === nodePort;
    });
    const status = (await get<Resource>(cr()))!.status!;
    expect(status.nodePort).toBe(nodePort);
    expect(status.selector).toBe(`app.kubernetes.io/instance=${name},app.kubernetes.io/managed-by=cdk8s-appkind,app.kubernetes.io/name=${kind.appName}`);
    expect(status.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({ status: 'False' });
    if (sharedCluster().hasScheduler) {
      await eventually('all 3 ready', async () => (await get<Resource>(cr()))?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 90_000);
      expect((await get<Resource>(cr()))!.status!.readyReplicas).toBe(3);
    }
  });

  test('what the operator applied is what render() gives for the same CR, plus the owner reference', async () => {
    const live = (await get<Resource>(cr()))!;
    const desired = render(kind, { ...live, metadata: { name, namespace: ns }, spec: live.spec } as Parameters<typeof render>[1]);
    for (const obj of desired) {
      const applied = (await get<Obj>(ref(obj.apiVersion, obj.kind, obj.metadata.name)))!;
      expect(firstDifference(obj, applied)).toBeUndefined();
      expect(applied.metadata?.ownerReferences).toEqual([{ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, name, uid: live.metadata!.uid, controller: true, blockOwnerDeletion: true }]);
      const managers = applied.metadata!.managedFields!.filter((m) => m.manager === 'appkind-operator');
      expect(managers.map((m) => m.operation)).toEqual(['Apply']);
    }
  });

  test('patching size to 5 gives 5 replicas and 5 names; the scale subresource works too', async () => {
    await rest.apply({ ...cr(), spec: { size: 5 } }, 'test-user');
    await eventually('5 replicas', async () => (await get<Deployment>(deployment()))?.spec.replicas === 5);
    await eventually('5 names in status.nodes', async () => {
      const status = (await get<Resource>(cr()))?.status;
      return status?.nodes?.length === 5 && JSON.stringify(status.nodes) === JSON.stringify(await podNames(name));
    });
    // What `kubectl scale <kind> <name> --replicas=2` sends.
    const scalePath = `${await rest.path(`${kind.group}/${kind.version}`, kind.kind, ns, name)}/scale`;
    const scale = await rest.request<{ spec: { replicas: number }; status: { replicas: number; selector: string } }>('GET', scalePath);
    expect(scale.status.selector).toContain(`app.kubernetes.io/instance=${name}`);
    await rest.request('PATCH', scalePath, { body: { spec: { replicas: 2 } }, contentType: 'application/merge-patch+json' });
    await eventually('scaled to 2 through /scale', async () => (await get<Deployment>(deployment()))?.spec.replicas === 2);
    await eventually('2 names', async () => (await get<Resource>(cr()))?.status?.nodes?.length === 2);
    const status = (await get<Resource>(cr()))!.status!;
    expect(status.observedGeneration).toBe((await get<Resource>(cr()))!.metadata!.generation);
  });

  test('deleting the CR garbage-collects the Deployment and the Service', async () => {
    await rest.delete(cr());
    await eventually('children gone', async () => !(await get(deployment())) && !(await get(service())), 90_000);
  });
});
