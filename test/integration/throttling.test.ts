// Throttling, on a control plane of its own: API Priority and Fairness squeezes the
// operator's ServiceAccount into a priority level of its own with the least concurrency the server
// can give (nominalConcurrencyShares 1, nothing borrowed or lent, excess rejected with 429 at once),
// while N CRs are created and a third of them scaled, and one CR fails for good (a Deployment of its
// name that it does not own). Asserted:
// - 429s really happened: the API server's apiserver_flowcontrol_rejected_requests_total for the flow
//   schema, and the operator's appkind_rest_client_throttled_total;
// - the operator backed off instead of hot-looping: the requests the server rejected, and all the
//   operator sent, are bounded by a small multiple of the work (a tight retry loop would send
//   thousands a second for as long as the squeeze lasts);
// - throttling never marked a CR Degraded (a watch on the CRs saw Degraded=True only on the failing
//   one) nor raised a Warning Event for it;
// - every CR converges (Ready, observedGeneration, status.nodes equal to its pods), the failing one
//   stays Degraded NameConflict without being retried in a tight loop, and the operator kept running.
//
// THROTTLE_CRS (default 300) sets N; a smaller one is for developing the test only.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CoreV1Api, KubernetesObject } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { Informer } from '../../operator/runtime/informer.js';
import { createLogger } from '../../operator/runtime/log.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { crObject, foreignDeployment } from './cluster.js';
import { convergenceProblems } from './load.js';
import { installCrds, installOperatorIdentity, metricValue, OPERATOR_SA, OperatorProcess } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & {
  spec?: { size?: number };
  status?: { nodes?: string[]; observedGeneration?: number; conditions?: Condition[] };
};
type Event = KubernetesObject & { reason: string; type: string; involvedObject: { kind: string; name: string } };

const kind = SAMPLE_KIND;
const N = Number(process.env.THROTTLE_CRS ?? 300);
const SCALED = Math.floor(N / 3);
const NS = 'squeezed';
const SQUEEZE = 'appkind-squeeze';
const STUCK = 'stuck';
const IN_FLIGHT = 8;
const CONVERGE_MS = 400_000;

let cp: ControlPlane;
let rest: RestClient;
let core: CoreV1Api;
let operator: OperatorProcess;
let crWatch: Informer<Resource>;
/** CRs a watch saw with Degraded=True, and the reasons. */
const degradedSeen = new Map<string, Set<string>>();

const crRef = (name: string): KubernetesObject => crObject(kind, NS, name);
const names = Array.from({ length: N }, (_, i) => `app-${i}`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The priority level and flow schema that squeeze every request of the operator's ServiceAccount, and
 * a ballast priority level that matches nothing. A level's nominal concurrency is
 * ceil(server limit * its shares / all levels' shares): 600 seats (400 + 200 in flight) * 1 / (the
 * suggested levels' 245 + 1 + the ballast's 1000) = 1 seat, the least there is (0 shares would be a
 * jail that runs nothing). Borrowing nothing and lending nothing, it rejects (429) whatever finds the
 * seat taken. The ballast takes seats only from the other levels' nominal shares, which nothing in
 * this control plane uses but the operator: the controllers, scheduler and kwok run as admin (exempt).
 */
function squeeze(): KubernetesObject[] {
  const level = (name: string, limited: Record<string, unknown>): KubernetesObject => ({
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name }, spec: { type: 'Limited', limited },
  } as KubernetesObject);
  return [
    level(`${SQUEEZE}-ballast`, { nominalConcurrencyShares: 1000, lendablePercent: 100, limitResponse: { type: 'Reject' } }),
    level(SQUEEZE, { nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } }),
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', metadata: { name: SQUEEZE },
      spec: {
        priorityLevelConfiguration: { name: SQUEEZE },
        // Ahead of every suggested schema (the mandatory exempt and probes ones take 1 and 2).
        matchingPrecedence: 50,
        distinguisherMethod: { type: 'ByUser' },
        rules: [{
          subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: OPERATOR_SA, namespace: NS } }],
          resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }],
          nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
        }],
      },
    } as KubernetesObject,
  ];
}

/** The API server's own metrics (admin only), as Prometheus text. */
async function serverMetrics(): Promise<string> {
  // The body is text, not JSON: RestClient hands unparseable bodies back as `message`.
  return (await rest.request<{ message: string }>('GET', '/metrics')).message;
}

async function inParallel(items: string[], op: (name: string) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < items.length) await op(items[next++]!);
  }));
}

/** What is still not converged (empty: every CR is Ready at its generation, status.nodes its pods). */
async function problems(want: Map<string, number>): Promise<string[]> {
  const out: string[] = [];
  const crs = new Map((await rest.list<Resource>(`${kind.group}/${kind.version}`, kind.kind, NS)).items.map((c) => [c.metadata!.name!, c]));
  const pods = (await core.listNamespacedPod({ namespace: NS })).items.filter((p) => !p.metadata?.deletionTimestamp);
  for (const [name, size] of want) {
    const cr = crs.get(name);
    if (!cr) {
      out.push(`CR ${name}: missing`);
      continue;
    }
    out.push(...convergenceProblems(kind, name, cr, size, pods));
  }
  return out;
}

beforeAll(async () => {
  cp = await ControlPlane.start({ scheduler: true, pods: 3 * N });
  const kc = cp.kubeConfig();
  rest = new RestClient(kc);
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await installCrds(kc, [kind]);
  await installOperatorIdentity(kc, [kind], NS);
  // Our own watch of the CRs (as admin: exempt from the squeeze) records every Degraded=True it sees.
  crWatch = new Informer<Resource>({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, plural: kind.plural, namespace: NS }, (_t, cr) => {
    const degraded = cr.status?.conditions?.find((c) => c.type === 'Degraded');
    if (degraded?.status === 'True') {
      const seen = degradedSeen.get(cr.metadata!.name!) ?? new Set<string>();
      degradedSeen.set(cr.metadata!.name!, seen.add(`${degraded.reason}: ${degraded.message}`));
    }
  }, { staleMs: 600_000, log: createLogger('warn'), rest });
  await crWatch.start();
  // A Deployment of the failing CR's child name that it does not own, there before the operator's first
  // list (one created just before its CR could still be missing from a lagging cache, and be applied over).
  await rest.apply(foreignDeployment(NS, `${STUCK}-deployment`), 'someone-else');
  // Squeezed from the start: the operator's first lists and watches are throttled too.
  await applyManifests(kc, squeeze());
  const kubeconfig = await cp.serviceAccountKubeconfig(NS, OPERATOR_SA);
  operator = await OperatorProcess.spawn({ kubeconfig, env: { APPKIND_WATCH_NAMESPACE: NS, APPKIND_LOG_LEVEL: 'debug' }, timeoutMs: 180_000 });
}, 300_000);

afterAll(async () => {
  crWatch?.stop();
  await operator?.stop('SIGTERM');
  // The squeeze goes with the control plane; removed first all the same, as a test on a shared one must.
  for (const obj of squeeze().reverse()) await rest?.delete(obj).catch(() => undefined);
  rest?.close();
  await cp?.stop();
});

describe(`API Priority and Fairness squeezes the operator while ${N} CRs are created and ${SCALED} scaled`, () => {
  test('it honours 429, backs off, converges every CR, and one failing CR starves none', async () => {
    // The failing CR (its Deployment name taken before the operator started: NameConflict for ever).
    await rest.apply({ ...crRef(STUCK), spec: { size: 1 } } as KubernetesObject, 'load-test');

    const started = Date.now();
    const want = new Map(names.map((n) => [n, 1]));
    await inParallel(names, (name) => rest.apply({ ...crRef(name), spec: { size: 1 } } as KubernetesObject, 'load-test'));
    for (const name of names.slice(0, SCALED)) want.set(name, 2);
    await inParallel(names.slice(0, SCALED), (name) => rest.apply({ ...crRef(name), spec: { size: 2 } } as KubernetesObject, 'load-test'));

    let last: string[] = [];
    while (Date.now() - started < CONVERGE_MS) {
      last = await problems(want);
      if (last.length === 0) break;
      await sleep(2_000);
    }
    expect(last.slice(0, 20)).toEqual([]);
    const seconds = (Date.now() - started) / 1000;

    // 429s really happened, for this flow schema, and the operator saw them.
    const server = await serverMetrics();
    const rejected = metricValue(server, 'apiserver_flowcontrol_rejected_requests_total', { flow_schema: SQUEEZE });
    const dispatched = metricValue(server, 'apiserver_flowcontrol_dispatched_requests_total', { flow_schema: SQUEEZE });
    const opMetrics = (await operator.http('/metrics')).body;
    const throttled = metricValue(opMetrics, 'appkind_rest_client_throttled_total');
    const sent = metricValue(opMetrics, 'rest_client_requests_total');
    const seats = metricValue(server, 'apiserver_flowcontrol_nominal_limit_seats', { priority_level: SQUEEZE });
    const stuckReconciles = operator.logs.filter((l) => l.msg === 'reconcile started' && l.key === `${kind.kind}/${NS}/${STUCK}`).length;
    const changes = N + SCALED;
    console.log(`throttling: ${N} CRs + ${SCALED} scaled converged in ${seconds.toFixed(1)} s under the squeeze (${seats} seat); server: ${rejected} rejected, ${dispatched} dispatched ` +
      `for flow schema ${SQUEEZE}; operator: ${throttled} throttled answers, ${sent} requests in all (${(sent / changes).toFixed(1)} per CR change); ` +
      `the failing CR reconciled ${stuckReconciles} times`);
    expect(seats).toBe(1);
    expect(rejected).toBeGreaterThan(0);
    expect(throttled).toBeGreaterThan(0);
    // Every rejection the server counted reached the operator as a throttled answer (a watch's too).
    expect(throttled).toBeGreaterThanOrEqual(rejected * 0.9);
    // Backed off, no hot loop: a tight retry loop against 3 seats would be rejected thousands of times
    // a second for the whole squeeze. Bounded by the work instead: a few rejections and requests per CR change.
    expect(rejected).toBeLessThanOrEqual(5 * changes);
    expect(sent).toBeLessThanOrEqual(20 * changes);

    // Throttling marked no CR Degraded and raised no Warning Event for it; only the failing CR is Degraded.
    expect([...degradedSeen.keys()]).toEqual([STUCK]);
    expect([...degradedSeen.get(STUCK)!].filter((d) => !d.startsWith('NameConflict: '))).toEqual([]);
    // (Events on CRs only: the API server's own ClusterIP repair loop may warn about a Service it sees mid-create.)
    const warnings = (await rest.list<Event>('v1', 'Event', NS)).items
      .filter((e) => e.type === 'Warning' && e.involvedObject.kind === kind.kind && e.involvedObject.name !== STUCK);
    expect(warnings.map((e) => `${e.involvedObject.name} ${e.reason}`)).toEqual([]);

    // The failing CR: Degraded NameConflict, its Deployment untouched, retried with backoff (a handful of
    // times over the run: 5 ms doubling per failure), not in a loop.
    const stuck = (await rest.get<Resource>(crRef(STUCK)))!;
    expect(stuck.status?.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({ status: 'True', reason: 'NameConflict' });
    const foreign = (await rest.get<KubernetesObject & { spec: { replicas: number } }>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${STUCK}-deployment`, namespace: NS } }))!;
    expect(foreign.metadata?.ownerReferences).toBeUndefined();
    expect(foreign.spec.replicas).toBe(0);
    expect(stuckReconciles).toBeGreaterThan(1);
    expect(stuckReconciles).toBeLessThanOrEqual(Math.ceil(Math.log2((Date.now() - started) / 5)) + 5);

    // The operator kept running and logged no error.
    expect(operator.exited).toBe(false);
    expect(operator.logs.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([]);
  }, CONVERGE_MS + 200_000);
});
