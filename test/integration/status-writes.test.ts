// How often the operator writes a CR's status. An ordinary rollout, a CR's create or an edit of its
// spec, that completes within APPKIND_STATUS_INTERVAL_MS gets one status write, Ready=True of the new
// generation (plus one completing it for each cache that showed the rollout late). Meanwhile the CR keeps its previous status, stale by its observedGeneration, which
// `kubectl wait --for=condition=Ready` checks. Counted from the API server's audit log.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, Watch } from '@kubernetes/client-node';
import { SAMPLE_KIND } from '../../operator/kinds/config.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, readSharedAuditLog, sharedCluster } from './cluster.js';
import { OPERATOR_SA, OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; observedGeneration?: number };
type Resource = KubernetesObject & { status?: { nodes?: string[]; observedGeneration?: number; conditions?: Condition[] } };

const kind = SAMPLE_KIND;
/** Ready of the new generation, and at most one write for each cache that showed the rollout late. */
const MOST_WRITES_PER_ROLLOUT = 3;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const crRef = (name: string): KubernetesObject => crObject(kind, ns, name);
const ready = (cr: Resource | undefined, generation: number, pods: number): boolean => {
  const c = cr?.status?.conditions?.find((x) => x.type === 'Ready');
  return cr?.status?.observedGeneration === generation && c?.status === 'True' && c.observedGeneration === generation && cr.status.nodes?.length === pods;
};

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
        const c = cr.status?.conditions?.find((x) => x.type === 'Ready');
        const state = cr.status?.observedGeneration === undefined ? 'none' : `${cr.status.observedGeneration}/${c?.status}`;
        if (states.at(-1) !== state) states.push(state);
      }, () => undefined);
    try {
      const since = new Date().toISOString();
      await rest.apply({ ...crRef('edited'), spec: { size: 1 } }, 'test-user');
      await eventually('created: Ready at generation 1', async () => ready(await rest.get<Resource>(crRef('edited')), 1, 1));
      // The pod cache may list the pod a moment after the Deployment says it is ready, and the
      // Deployment controller may report the rollout in more than one status update: each lag can
      // cost one write that completes the status (status.nodes, the replica counts), never a
      // Ready=False step (the states check below). Under a full CI on 2 cores both lags came in one
      // rollout (3 writes, twice in CI runs), so the bound is the Ready write plus one for each.
      expect(await statusWrites('edited', since)).toBeGreaterThanOrEqual(1);
      expect(await statusWrites('edited', since)).toBeLessThanOrEqual(MOST_WRITES_PER_ROLLOUT);

      const edited = new Date().toISOString();
      await rest.apply({ ...crRef('edited'), spec: { size: 2 } }, 'test-user');
      await eventually('edited: Ready at generation 2 with both pods', async () => ready(await rest.get<Resource>(crRef('edited')), 2, 2));
      await eventually('the watch saw it', async () => states.at(-1) === '2/True', 10_000);
      expect(await statusWrites('edited', edited)).toBeGreaterThanOrEqual(1);
      expect(await statusWrites('edited', edited)).toBeLessThanOrEqual(MOST_WRITES_PER_ROLLOUT);
    } finally {
      watch.abort();
    }
    // No status until Ready, then Ready of each generation: no Ready=False step for either rollout.
    expect(states.filter((s) => s !== 'none')).toEqual(['1/True', '2/True']);
  }, 120_000);

  test('the operator logged no error', () => {
    expect(operator.exited).toBe(false);
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
