// What a real-app kind's settings do inside a running container, on the real node (containerd,
// kubelet, kube-proxy): env from a Secret reaches the process, args take effect (the kind's, then a
// CR's override), the kind's volume and /tmp are writable under a read-only root filesystem, and a
// failing readiness probe keeps the CR not Ready until the pods pass it. The app is
// test/integration/realapp, which answers over HTTP what it sees. Needs root and Linux.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CoreV1Api, CoreV1Event, KubeConfig, KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually } from './cluster.js';
import { OperatorProcess } from './operator-process.js';
import { RealAppNode, startRealAppNode } from './real-app-node.js';
import { getLocal } from './real-node-pods.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { observedGeneration?: number; nodePort?: number; nodes?: string[]; conditions?: Condition[] } };

const DATABASE_URL = 'postgres://shop:s3cret@db.shop.svc/shop';

let node: RealAppNode | undefined;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let kind: AppKind;
let operator: OperatorProcess | undefined;

/** The kind as a config file would say it: a Secret variable, args, a read-only root with a cache volume, a readiness probe. */
const kindConfig = (image: string) => ({
  group: 'realnode.example.com',
  version: 'v1',
  kind: 'RealApp',
  image,
  port: 8080,
  args: ['-greeting=hello from the kind'],
  env: [{ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'realapp-db', key: 'url' } } }],
  readOnlyRootFilesystem: true,
  volumes: [{ name: 'cache', emptyDir: {} }],
  volumeMounts: [{ name: 'cache', mountPath: '/var/cache/realapp' }],
  readinessProbe: { httpGet: { path: '/ready' }, periodSeconds: 1, failureThreshold: 1 },
  overrides: { args: true },
});

const cr = (name: string, spec?: Record<string, unknown>) => crObject(kind, ns, name, spec);
const live = (name: string) => rest.get<Resource>(cr(name));
const ready = async (name: string) => (await live(name))?.status?.conditions?.find((c) => c.type === 'Ready');
const pods = async (name: string): Promise<V1Pod[]> =>
  (await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` })).items;

/** The CR's status is of its current spec and says Ready=True; resolves with its NodePort. */
async function readyOn(name: string): Promise<number> {
  let nodePort = 0;
  await eventually(`${name} Ready`, async () => {
    const r = await live(name);
    nodePort = r?.status?.nodePort ?? 0;
    return r?.status?.observedGeneration === r?.metadata?.generation && (await ready(name))?.status === 'True' && nodePort > 0;
  }, 180_000);
  return nodePort;
}

/** GET on the app through its localhost NodePort, once it answers at all. */
async function get(nodePort: number, path: string) {
  let answer = { status: 0, body: '' };
  await eventually(`GET ${path} answered`, async () => (answer = await getLocal(nodePort, path)).status > 0, 60_000);
  return answer;
}

beforeAll(async () => {
  node = await startRealAppNode('realnode-apps', kindConfig, (admin, namespace) =>
    admin.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'realapp-db', namespace }, stringData: { url: DATABASE_URL } } as KubernetesObject, 'test'));
  ({ kc, rest, ns, kind, operator } = node);
}, 600_000);

afterAll(async () => {
  expect(await node?.stop()).toBe(0);
}, 120_000);

describe('a real-app kind on the real node', () => {
  test('env from a Secret reaches the process, the kind\'s args take effect, the volume and /tmp are writable under a read-only root', async () => {
    await rest.apply(cr('shop', { size: 1 }), 'cr-author');
    const nodePort = await readyOn('shop');
    expect(await get(nodePort, '/env/DATABASE_URL')).toEqual({ status: 200, body: DATABASE_URL });
    expect(await get(nodePort, '/')).toEqual({ status: 200, body: 'hello from the kind\n' });
    expect(await get(nodePort, '/write?dir=/var/cache/realapp')).toMatchObject({ status: 200 });
    expect(await get(nodePort, '/write?dir=/tmp')).toMatchObject({ status: 200 });
    const root = await get(nodePort, '/write?dir=/');
    expect(root.status).toBe(500);
    expect(root.body).toContain('read-only file system');
    // Ready=True means the pod passes its readiness probe.
    expect(await get(nodePort, '/ready')).toMatchObject({ status: 200 });
    const [pod] = await pods('shop');
    expect(pod?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  }, 300_000);

  test('a CR\'s args override reaches the process, and dropping it brings back the kind\'s', async () => {
    await rest.apply(cr('shop', { size: 1, args: ['-greeting=hello from the CR'] }), 'cr-author');
    await eventually('the CR\'s greeting', async () => (await getLocal(await readyOn('shop'), '/')).body === 'hello from the CR\n', 180_000);
    await rest.apply(cr('shop', { size: 1 }), 'cr-author');
    await eventually('the kind\'s greeting again', async () => (await getLocal(await readyOn('shop'), '/')).body === 'hello from the kind\n', 180_000);
  }, 400_000);

  test('a failing readiness probe keeps the CR not Ready, with the reason; once the pods pass it, the CR is Ready', async () => {
    await rest.apply(cr('stuck', { size: 1, args: ['-ready=false'] }), 'cr-author');
    // The container runs and the kubelet has seen the probe fail.
    const core = kc.makeApiClient(CoreV1Api);
    await eventually('the readiness probe failed', async () => {
      const [pod] = await pods('stuck');
      if (!pod?.status?.containerStatuses?.[0]?.started) return false;
      const events = (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${pod.metadata!.name}` })).items;
      return events.some((e: CoreV1Event) => e.reason === 'Unhealthy' && (e.message ?? '').includes('Readiness probe failed: HTTP probe failed with statuscode: 503'));
    }, 180_000);
    await eventually('the CR\'s status observed the pod', async () => {
      const r = await live('stuck');
      return r?.status?.observedGeneration === r?.metadata?.generation && (r?.status?.nodes?.length ?? 0) === 1;
    }, 60_000);
    const condition = await ready('stuck');
    expect(condition).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    expect(condition?.message).toMatch(/^pod stuck-deployment-[a-z0-9-]+: containers with unready status: \[realapp\] \(0\/1 pods ready\)$/);
    const [pod] = await pods('stuck');
    expect(pod?.status?.phase).toBe('Running');
    expect(pod?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');

    await rest.apply(cr('stuck', { size: 1 }), 'cr-author');
    const nodePort = await readyOn('stuck');
    expect(await get(nodePort, '/ready')).toMatchObject({ status: 200 });
  }, 400_000);

  test('the operator logged no error', () => {
    expect(operator!.exited).toBe(false);
    expect(operator!.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
