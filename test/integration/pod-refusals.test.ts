// Pods the API server refuses to create are visible on the CR: a ResourceQuota of `pods: 1` really
// refuses the 2nd and 3rd pod of a size-3 CR (the resourcequota controller runs), a LimitRange refuses
// a pod below its minimum, and the CR's Ready condition and a Warning Event carry the API server's
// reason and message.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually } from './cluster.js';
import { OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };
type Quota = KubernetesObject & { status?: { hard?: Record<string, string>; used?: Record<string, string> } };
type Event = KubernetesObject & { reason: string; message: string; type: string; involvedObject: { name: string; kind: string } };

const kind = SAMPLE_KIND;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const crRef = (name: string): KubernetesObject => crObject(kind, ns, name);
const ready = async (name: string) => (await rest.get<Resource>(crRef(name)))?.status?.conditions?.find((c) => c.type === 'Ready');
const pods = async () => (await rest.list<KubernetesObject>('v1', 'Pod', ns)).items.filter((p) => !p.metadata?.deletionTimestamp);

beforeAll(async () => {
  ({ rest, ns, operator } = await startOperatorTest('refusals', [kind]));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('a ResourceQuota refuses pods', () => {
  test('quota pods: 1 lets one pod of a size-3 CR run; Ready and a Warning Event say why', async () => {
    await rest.apply({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'pods', namespace: ns }, spec: { hard: { pods: '1' } } }, 'admin');
    // The resourcequota controller fills in status.hard; only then does admission enforce the quota.
    await eventually('quota status computed', async () =>
      (await rest.get<Quota>({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'pods', namespace: ns } }))?.status?.hard?.pods === '1');

    await rest.apply({ ...crRef('quota'), spec: { size: 3 } }, 'cr-author');
    await eventually('Ready names the quota refusal', async () => {
      const c = await ready('quota');
      return c?.status === 'False' && c.reason === 'FailedCreate' && c.message.includes('exceeded quota');
    }, 90_000);
    const c = (await ready('quota'))!;
    expect(c.message).toMatch(/^pods ".*" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1 \(\d\/3 pods ready\)$/);
    expect(await pods()).toHaveLength(1);

    await eventually('a Warning Event on the CR with the refusal', async () =>
      (await rest.list<Event>('v1', 'Event', ns)).items.some((e) =>
        e.involvedObject.kind === kind.kind && e.involvedObject.name === 'quota' && e.type === 'Warning' && e.reason === 'FailedCreate' && e.message.includes('exceeded quota')));
    // Still one pod: the quota is enforced, not just reported.
    expect(await pods()).toHaveLength(1);
  });
});

describe('a LimitRange refuses pods', () => {
  test('a per-pod maximum the rendered pod (no limits) does not meet: Ready names the LimitRange refusal', async () => {
    // Only this test's refusal: the quota of the previous test goes.
    await rest.delete({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'pods', namespace: ns } });
    await rest.apply({
      // Per Pod, not per Container: a Container max would also become the container's default limit.
      apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'max-memory', namespace: ns },
      spec: { limits: [{ type: 'Pod', max: { memory: '64Mi' } }] },
    }, 'admin');
    await rest.apply({ ...crRef('small'), spec: { size: 1 } }, 'cr-author');
    await eventually('Ready names the LimitRange refusal', async () => {
      const c = await ready('small');
      return c?.status === 'False' && c.reason === 'FailedCreate' && c.message.includes('maximum memory usage per Pod is 64Mi');
    }, 90_000);
    expect((await pods()).filter((p) => p.metadata?.labels?.['app.kubernetes.io/instance'] === 'small')).toHaveLength(0);
    await eventually('a Warning Event on the CR', async () =>
      (await rest.list<Event>('v1', 'Event', ns)).items.some((e) =>
        e.involvedObject.name === 'small' && e.type === 'Warning' && e.reason === 'FailedCreate' && e.message.includes('maximum memory usage')));
  });
});
