// How often the operator writes a CR's status. An ordinary rollout, a CR's create or an edit of its
// spec, that completes within APPKIND_STATUS_INTERVAL_MS gets one status write, Ready=True of the new
// generation, plus at most one that completes status.nodes when the pod cache lists the rollout's new
// pod after the Deployment said it was ready. Meanwhile the CR keeps its previous status (a new CR: the
// CRD's default, observedGeneration 0), stale by its observedGeneration, which kstatus and `kubectl
// wait --for=condition=Ready` check. Counted from the API server's audit log, each write matched with
// the operator's log line saying what it changed.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, Watch } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, readSharedAuditLog, sharedCluster } from './cluster.js';
import { OPERATOR_SA, OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; observedGeneration?: number };
type LogLine = OperatorProcess['logs'][number];
type Resource = KubernetesObject & { status?: { nodes?: string[]; observedGeneration?: number; conditions?: Condition[] } };

const kind = SAMPLE_KIND;
/** Writes after a rollout's Ready write that only complete status.nodes (see expectRolloutWrites): one new pod per rollout here. */
const CATCH_UP_WRITES = 1;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const crRef = (name: string): KubernetesObject => crObject(kind, ns, name);
const ready = (cr: Resource | undefined, generation: number, pods: number): boolean => {
  const c = cr?.status?.conditions?.find((x) => x.type === 'Ready');
  return cr?.status?.observedGeneration === generation && c?.status === 'True' && c.observedGeneration === generation && cr.status.nodes?.length === pods;
};

/** The operator's own account of its status writes of one CR after `since` (ISO time): what each changed. */
const loggedWrites = (name: string, since: string): LogLine[] =>
  operator.logs.filter((l) => l.msg === 'status updated' && l.key === `${kind.kind}/${ns}/${name}` && OperatorProcess.timeOf(l) >= Date.parse(since));

/**
 * The write budget of a rollout: one write with Ready=True of the new generation, then at most
 * CATCH_UP_WRITES that only complete status.nodes (the pod cache behind the Deployment's status).
 */
async function expectRolloutWrites(name: string, since: string): Promise<void> {
  // The audit log has a write before its answer reaches the operator, which logs it after.
  await eventually('the operator logged each audited status write', async () => (await statusWrites(name, since)) === loggedWrites(name, since).length, 10_000).catch(() => undefined);
  const [audited, logged] = [await statusWrites(name, since), loggedWrites(name, since)];
  const told = `the operator's status writes: ${JSON.stringify(logged.map(({ ts, changed, urgent, replicas, readyReplicas, nodes }) => ({ ts, changed, urgent, replicas, readyReplicas, nodes })))}`;
  // Every write the API server recorded is one the operator logged, with what it changed.
  expect([audited, told]).toEqual([logged.length, told]);
  expect([logged[0]?.changed, told]).toEqual([expect.arrayContaining(['observedGeneration', 'Ready']), told]);
  for (const later of logged.slice(1)) expect([later.changed, told]).toEqual([['nodes'], told]);
  expect([logged.length <= 1 + CATCH_UP_WRITES, told]).toEqual([true, told]);
}

/** The operator's status writes of one CR, as the audit log recorded them, after `since` (ISO time). */
async function statusWrites(name: string, since: string): Promise<number> {
  return (await readSharedAuditLog()).filter((e) => e.user.username === `system:serviceaccount:${ns}:${OPERATOR_SA}` &&
    e.verb === 'patch' && e.requestURI.split('?')[0]!.endsWith(`/${kind.plural}/${name}/status`) && e.stageTimestamp > since).length;
}

beforeAll(async () => {
  // The default APPKIND_STATUS_INTERVAL_MS (60 s): both rollouts below complete well within it.
  ({ kc, rest, ns, operator } = await startOperatorTest('statuswrites', [kind]));
});

afterAll(async () => {
  expect(await operator.stop('SIGTERM')).toBe(0);
});

describe('a rollout that completes within APPKIND_STATUS_INTERVAL_MS', () => {
  beforeAll(() => {
    // Without a scheduler no pod gets Ready, so no rollout completes.
    if (!sharedCluster().hasScheduler) throw new Error('the shared control plane has no kube-scheduler or kwok: bash tools/controlplane/build.sh builds them (or add them to KUBEBUILDER_ASSETS)');
  });

  test('a create writes status once: Ready; an edit of spec.size writes Ready of the new generation, never a stale step before it', async () => {
    // Every status the CR passes through, seen on a watch (a poll could miss one).
    const states: string[] = [];
    const watch = await new Watch(kc).watch(`/apis/${kind.group}/${kind.version}/namespaces/${ns}/${kind.plural}`,
      { fieldSelector: 'metadata.name=edited' }, (_type: string, cr: Resource) => {
        // `observedGeneration/Ready`, with any Reconciling or Stalled condition: 0/none is the CRD's default status.
        const c = cr.status?.conditions?.find((x) => x.type === 'Ready');
        const kstatus = cr.status?.conditions?.filter((x) => x.type === 'Reconciling' || x.type === 'Stalled').map((x) => `/${x.type}`).join('') ?? '';
        const state = `${cr.status?.observedGeneration ?? 'none'}/${c?.status ?? 'none'}${kstatus}`;
        if (states.at(-1) !== state) states.push(state);
      }, () => undefined);
    try {
      const since = new Date().toISOString();
      await rest.apply({ ...crRef('edited'), spec: { size: 1 } }, 'test-user');
      await eventually('created: Ready at generation 1', async () => ready(await rest.get<Resource>(crRef('edited')), 1, 1));
      // Under load the pod cache may list the pod after the Deployment's status says it is ready:
      // Ready is written with the pods listed so far, and one write completes status.nodes.
      await expectRolloutWrites('edited', since);

      const edited = new Date().toISOString();
      await rest.apply({ ...crRef('edited'), spec: { size: 2 } }, 'test-user');
      await eventually('edited: Ready at generation 2 with both pods', async () => ready(await rest.get<Resource>(crRef('edited')), 2, 2));
      await eventually('the watch saw it', async () => states.at(-1) === '2/True', 10_000);
      await expectRolloutWrites('edited', edited);
    } finally {
      watch.abort();
    }
    // The CRD's default status from the create on (no status-less moment), then Ready of each
    // generation: no Ready=False or Reconciling step for either rollout.
    expect(states).toEqual(['0/none', '1/True', '2/True']);
  }, 120_000);

  test('the operator logged no error', () => {
    expect(operator.exited).toBe(false);
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
