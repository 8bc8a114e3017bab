// What only a kubelet reports, on the CR, on the kwok node: the test writes a pod's status
// through the pods/status subresource as the kubelet does (the API server's own behaviour, not a mock:
// the operator watches what any kubelet would write). An image not found, a root image in a
// runAsNonRoot kind, a container that exits 3: the CR's Ready condition says so with the kubelet's
// reason and message and a Warning Event, and the kubelet's retries (ErrImagePull and ImagePullBackOff
// in turn, back-off messages, restarts) write no status. The real node shows the same without a patch:
// see the real-node tests.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { ContainerApp } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, readSharedAuditLog, sharedCluster } from './cluster.js';
import { OPERATOR_SA, OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { readyReplicas?: number; conditions?: Condition[] } };
type Event = KubernetesObject & { reason: string; message: string; type: string; involvedObject: { name: string; kind: string } };
type Pod = V1Pod & KubernetesObject;

const kind = SAMPLE_KIND;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const ready = async (name: string) => (await rest.get<Resource>(crObject(kind, ns, name)))?.status?.conditions?.find((c) => c.type === 'Ready');

/** The operator's status writes of CR `name` so far (the audit log has each before its answer is sent). */
async function statusWrites(name: string): Promise<number> {
  const user = `system:serviceaccount:${ns}:${OPERATOR_SA}`;
  return (await readSharedAuditLog()).filter(
    (e) => e.user.username === user && e.verb === 'patch' && e.objectRef?.resource === kind.plural && e.objectRef.subresource === 'status' && e.objectRef.namespace === ns && e.objectRef.name === name,
  ).length;
}

async function warnings(name: string, reason: string): Promise<Event[]> {
  return (await rest.list<Event>('v1', 'Event', ns)).items.filter((e) => e.involvedObject.name === name && e.type === 'Warning' && e.reason === reason);
}

/** Writes a container status of `pod` as the kubelet would: Running, not Ready, `container` as given. */
async function kubeletReports(pod: Pod, container: Partial<V1ContainerStatus>): Promise<void> {
  const name = pod.spec!.containers[0]!.name;
  await rest.request('PATCH', `/api/v1/namespaces/${ns}/pods/${pod.metadata!.name}/status`, {
    contentType: 'application/strategic-merge-patch+json',
    body: {
      status: {
        phase: 'Running',
        conditions: [
          { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: `containers with unready status: [${name}]` },
          { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: `containers with unready status: [${name}]` },
        ],
        containerStatuses: [{ name, image: pod.spec!.containers[0]!.image, imageID: '', ready: false, restartCount: 0, started: false, ...container }],
      },
    },
  });
}

beforeAll(async () => {
  expect(sharedCluster().hasScheduler).toBe(true);
  // Every status change written at once: any write a kubelet retry caused would show.
  ({ rest, ns, operator } = await startOperatorTest('kubelet', [kind], { STATUS_INTERVAL_MS: '0' }));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  rest?.close();
});

describe("the kubelet's reasons on the CR", () => {
  test('ErrImagePull, CreateContainerConfigError, CrashLoopBackOff with the exit code: Ready=False and a Warning Event each, no status write per retry', async () => {
    await rest.apply(crObject(kind, ns, 'app', { size: 1 }), 'cr-author');
    await eventually('app Ready', async () => (await ready('app'))?.status === 'True');
    const pod = (await rest.list<Pod>('v1', 'Pod', ns)).items.find((p) => p.metadata?.labels?.[ContainerApp.INSTANCE_LABEL] === 'app')!;
    const image = pod.spec!.containers[0]!.image!;

    // An image in no registry: the kubelet's ErrImagePull.
    const pullError = `failed to pull and unpack image "docker.io/${image}": failed to resolve reference "docker.io/${image}": not found`;
    await kubeletReports(pod, { state: { waiting: { reason: 'ErrImagePull', message: pullError } } });
    await eventually('Ready=False ErrImagePull', async () => (await ready('app'))?.reason === 'ErrImagePull');
    expect((await ready('app'))!).toMatchObject({ status: 'False', message: expect.stringContaining(pullError) });
    await eventually('status settled: readyReplicas 0', async () => (await rest.get<Resource>(crObject(kind, ns, 'app')))?.status?.readyReplicas === 0);
    await eventually('a Warning Event ErrImagePull', async () => (await warnings('app', 'ErrImagePull')).length > 0);

    // The kubelet's retries: ImagePullBackOff and ErrImagePull in turn, each message a little different.
    let writes = await statusWrites('app');
    for (let i = 1; i <= 3; i++) {
      await kubeletReports(pod, { state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}" (attempt ${i})` } } });
      await kubeletReports(pod, { state: { waiting: { reason: 'ErrImagePull', message: `${pullError} (attempt ${i})` } } });
    }
    // A root image in a runAsNonRoot kind: what the CR shows next is written after every retry above was watched.
    const rootMessage = `container has runAsNonRoot and image will run as root (pod: "${pod.metadata!.name}_${ns}(${pod.metadata!.uid})", container: ${pod.spec!.containers[0]!.name})`;
    await kubeletReports(pod, { state: { waiting: { reason: 'CreateContainerConfigError', message: rootMessage } } });
    await eventually('Ready=False CreateContainerConfigError', async () => (await ready('app'))?.reason === 'CreateContainerConfigError');
    expect((await ready('app'))!.message).toContain('container has runAsNonRoot and image will run as root');
    expect(await statusWrites('app')).toBe(writes + 1);
    await eventually('a Warning Event CreateContainerConfigError', async () => (await warnings('app', 'CreateContainerConfigError')).length > 0);

    // A container that exits 3, restarted with back-off.
    const exited = { lastState: { terminated: { exitCode: 3, reason: 'Error' } } } as Partial<V1ContainerStatus>;
    await kubeletReports(pod, { ...exited, restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off 10s restarting failed container` } } });
    await eventually('Ready=False CrashLoopBackOff', async () => (await ready('app'))?.reason === 'CrashLoopBackOff');
    expect((await ready('app'))!.message).toContain('exited with code 3 (Error)');
    await eventually('a Warning Event CrashLoopBackOff with the exit code', async () =>
      (await warnings('app', 'CrashLoopBackOff')).some((e) => e.message.includes('exited with code 3')));
    writes = await statusWrites('app');
    for (let restart = 2; restart <= 4; restart++) {
      await kubeletReports(pod, { ...exited, restartCount: restart, state: { running: { startedAt: new Date() } } });
      await kubeletReports(pod, { ...exited, restartCount: restart, state: { terminated: { exitCode: 3, reason: 'Error' } } });
      await kubeletReports(pod, { ...exited, restartCount: restart, state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off ${10 * 2 ** restart}s restarting failed container` } } });
    }
    await kubeletReports(pod, { state: { waiting: { reason: 'CreateContainerConfigError', message: rootMessage } } });
    await eventually('Ready=False CreateContainerConfigError again', async () => (await ready('app'))?.reason === 'CreateContainerConfigError');
    expect(await statusWrites('app')).toBe(writes + 1);
    expect(await warnings('app', 'ErrImagePull')).toHaveLength(1);
    expect(await warnings('app', 'CrashLoopBackOff')).toHaveLength(1);
  });
});
