// Status comes only from what the CR controls: a Deployment and Service of the CR's child
// names that someone else owns, running, lend the CR neither replicas nor a NodePort, and a pod carrying
// the app's selector labels that no ReplicaSet of the CR's Deployment owns is not listed in status.nodes.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment, V1Pod, V1Service } from '@kubernetes/client-node';
import { ContainerApp } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, FOREIGN_IMAGE, sharedCluster } from './cluster.js';
import { OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Status = { nodes?: string[]; replicas?: number; readyReplicas?: number; nodePort?: number; observedGeneration?: number; conditions?: Condition[] };
type Resource = KubernetesObject & { status?: Status };

const kind = SAMPLE_KIND;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const status = async (name: string) => (await rest.get<Resource>(crObject(kind, ns, name)))?.status;
const condition = (s: Status | undefined, type: string) => s?.conditions?.find((c) => c.type === type);
/** The labels the construct gives the pods of CR `name`: the operator's pod cache selects on them. */
const appLabels = (name: string) => ContainerApp.selectorLabelsOf(name, kind.appName!);

beforeAll(async () => {
  expect(sharedCluster().hasScheduler).toBe(true); // pods must run (kwok) for the foreign ones to be there
  ({ rest, ns, operator } = await startOperatorTest('owned', [kind]));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  rest?.close();
});

describe('status from owned objects only', () => {
  test("a running Deployment and a NodePort Service of the CR's child names, owned by someone else: Degraded NameConflict, and none of their replicas, pods or NodePort in status", async () => {
    const labels = appLabels('taken');
    const deployment: V1Deployment & KubernetesObject = {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'taken-deployment', namespace: ns },
      spec: { replicas: 2, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: FOREIGN_IMAGE }] } } },
    };
    const service: V1Service & KubernetesObject = {
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'taken-svc', namespace: ns },
      spec: { type: 'NodePort', selector: labels, ports: [{ port: 80 }] },
    };
    await rest.apply(deployment, 'someone-else');
    const foreignService = await rest.apply(service, 'someone-else');
    expect(foreignService.spec?.ports?.[0]?.nodePort).toBeGreaterThan(0);
    await eventually('the foreign Deployment has 2 ready pods', async () =>
      (await rest.get<V1Deployment & KubernetesObject>(deployment))?.status?.readyReplicas === 2);

    await rest.apply(crObject(kind, ns, 'taken', { size: 2 }), 'cr-author');
    await eventually('Degraded NameConflict', async () => condition(await status('taken'), 'Degraded')?.reason === 'NameConflict');
    const s = (await status('taken'))!;
    expect(s).toMatchObject({ nodes: [], replicas: 0, readyReplicas: 0 });
    expect(s.nodePort).toBeUndefined();
    expect(condition(s, 'Ready')).toMatchObject({ status: 'False', reason: 'NameConflict' });
  });

  test("a pod carrying the app's selector labels that the CR's Deployment does not own is not listed", async () => {
    await rest.apply(crObject(kind, ns, 'mine', { size: 1 }), 'cr-author');
    await eventually('mine Ready with its pod', async () => {
      const s = await status('mine');
      return condition(s, 'Ready')?.status === 'True' && s?.nodes?.length === 1;
    });
    // A bare pod with the Deployment's selector labels: no pod-template-hash, so no ReplicaSet adopts it.
    const intruder: V1Pod & KubernetesObject = {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'intruder', namespace: ns, labels: appLabels('mine') },
      spec: { containers: [{ name: 'c', image: FOREIGN_IMAGE }] },
    };
    await rest.apply(intruder, 'someone-else');
    await eventually('the intruder is Ready', async () =>
      !!(await rest.get<V1Pod & KubernetesObject>(intruder))?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    // An edit the operator reports on: once status says Ready at the new generation, it was computed
    // with the intruder (Ready, watched) in the operator's pod cache.
    const edited = await rest.apply(crObject(kind, ns, 'mine', { size: 2 }), 'cr-author');
    await eventually('mine Ready at size 2', async () => {
      const s = await status('mine');
      return s?.observedGeneration === edited.metadata!.generation && condition(s, 'Ready')?.status === 'True';
    });
    const pods = (await rest.list<V1Pod & KubernetesObject>('v1', 'Pod', ns)).items.filter(
      (p) => p.metadata?.labels?.[ContainerApp.INSTANCE_LABEL] === 'mine' && p.metadata?.ownerReferences?.some((o) => o.kind === 'ReplicaSet'),
    );
    expect(pods).toHaveLength(2);
    const s = (await status('mine'))!;
    expect(s.nodes).toEqual(pods.map((p) => p.metadata!.name!).sort());
    expect(s.nodes).not.toContain('intruder');
    expect(s.readyReplicas).toBe(2);
  });
});
