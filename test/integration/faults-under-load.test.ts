// Faults while hundreds of CRs change (issue 11 items 1-2), on a control plane of its own: the
// operator SIGKILLed mid-batch and started again; kube-apiserver restarted, etcd restarted, and
// kube-apiserver paused (SIGSTOP) longer than the watch watchdog, each in the middle of a batch of
// creates, scales and deletes. After each, the end state is checked for every CR: Ready with
// observedGeneration == generation, status.nodes equal to the pods in the cluster, the children
// carrying every field render() sets, no child without its CR, deleted CRs' children gone.
//
// LOAD_CRS (default 300) sets the batch size (a smaller one is for developing the test only);
// LOAD_DEBUG=1 prints what is still unconverged on each poll.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CoreV1Api, KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { ContainerApp } from 'cdk8s-appkind';
import { SAMPLE_KIND } from '../../operator/config.js';
import { CHILD_SELECTOR } from '../../operator/reconcile.js';
import { render, type AppResource, type KubeObject } from '../../operator/render.js';
import { ApiError, RestClient } from '../../operator/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { crObject } from './cluster.js';
import { installCrds, installOperatorIdentity, OPERATOR_SA, OperatorProcess } from './operator-process.js';

type Condition = { type: string; status: string };
type Resource = AppResource & KubernetesObject & {
  status?: { nodes?: string[]; observedGeneration?: number; readyReplicas?: number; conditions?: Condition[] };
};

const kind = SAMPLE_KIND;
const N = Number(process.env.LOAD_CRS ?? 300);
const NS = 'load';
const WATCH_STALE_SECONDS = 5;
const IN_FLIGHT = 8;
const CONVERGE_MS = Number(process.env.LOAD_CONVERGE_MS ?? 240_000);

let cp: ControlPlane;
let rest: RestClient;
let core: CoreV1Api;
let operator: OperatorProcess;
let kubeconfig: string;

/** What the test asked for: name -> size, for the CRs that should exist. */
const wanted = new Map<string, number>();
/** Names of CRs deleted so far (their children must be gone). */
const deleted = new Set<string>();
let serial = 0;

const crRef = (name: string): KubernetesObject => crObject(kind, NS, name);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function startOperator(): Promise<OperatorProcess> {
  return OperatorProcess.spawn({
    kubeconfig,
    env: { WATCH_NAMESPACE: NS, WATCH_STALE_SECONDS: String(WATCH_STALE_SECONDS), LOG_LEVEL: 'info' },
  });
}

/** Retries `op` until it succeeds: the API server may be restarting or paused meanwhile. */
async function retrying(what: string, op: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      await op();
      return;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(e as Error).message}`);
      await sleep(250);
    }
  }
}

type Op = () => Promise<void>;

const createOp = (): Op => {
  const name = `app-${serial++}`;
  wanted.set(name, 1);
  return () => retrying(`create ${name}`, async () => { await rest.apply({ ...crRef(name), spec: { size: 1 } }, 'load-test'); });
};
const scaleOp = (name: string): Op => {
  const size = wanted.get(name) === 1 ? 2 : 1;
  wanted.set(name, size);
  return () => retrying(`scale ${name}`, async () => { await rest.apply({ ...crRef(name), spec: { size } }, 'load-test'); });
};
const deleteOp = (name: string): Op => {
  wanted.delete(name);
  deleted.add(name);
  return () => retrying(`delete ${name}`, async () => {
    try {
      await rest.delete(crRef(name));
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
  });
};

/** A third each of creates, scales and deletes (of CRs that exist), interleaved. */
function mixedBatch(n: number): Op[] {
  const existing = [...wanted.keys()];
  const third = Math.floor(n / 3);
  const toDelete = existing.slice(0, third);
  const toScale = existing.slice(third, 2 * third);
  const ops: Op[] = [];
  for (let i = 0; i < n - 2 * third; i++) {
    ops.push(createOp());
    if (toScale[i]) ops.push(scaleOp(toScale[i]!));
    if (toDelete[i]) ops.push(deleteOp(toDelete[i]!));
  }
  return ops;
}

/**
 * Runs the ops IN_FLIGHT at a time, and `fault` once `faultAfter` of them are done (the rest still
 * in flight or to come), and resolves when both are done.
 */
async function runBatch(ops: Op[], faultAfter: number, fault: () => Promise<void>): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (next < ops.length) {
      const op = ops[next++]!;
      await op();
      done++;
    }
  };
  const injected = (async () => {
    while (done < faultAfter) await sleep(50);
    await fault();
  })();
  await Promise.all([...Array.from({ length: IN_FLIGHT }, worker), injected]);
}

/** Every leaf `want` sets has the same value in `have` (arrays element by element); what differs goes to `out`. */
function missingFields(want: unknown, have: unknown, path: string, out: string[]): void {
  if (want !== null && typeof want === 'object') {
    if (have === null || typeof have !== 'object' || Array.isArray(want) !== Array.isArray(have)) {
      out.push(`${path}: want ${JSON.stringify(want)}, have ${JSON.stringify(have)}`);
      return;
    }
    if (Array.isArray(want) && want.length !== (have as unknown[]).length) {
      out.push(`${path}: want ${want.length} items, have ${(have as unknown[]).length}`);
      return;
    }
    for (const [k, v] of Object.entries(want)) missingFields(v, (have as Record<string, unknown>)[k], `${path}.${k}`, out);
  } else if (want !== have && !(have === undefined && (want === 0 || want === false || want === ''))) {
    // The API server leaves Go zero values (omitempty) out of what it returns: minReadySeconds 0, hostNetwork false.
    out.push(`${path}: want ${JSON.stringify(want)}, have ${JSON.stringify(have)}`);
  }
}

const isReady = (pod: V1Pod): boolean => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** What is wrong with the end state now (empty: converged). Reads everything fresh from the API server. */
async function problems(): Promise<string[]> {
  const out: string[] = [];
  const crs = (await rest.list<Resource>(`${kind.group}/${kind.version}`, kind.kind, NS)).items;
  const pods = (await core.listNamespacedPod({ namespace: NS })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const [deployments, services] = await Promise.all([
    rest.list<KubeObject & KubernetesObject>('apps/v1', 'Deployment', NS, CHILD_SELECTOR),
    rest.list<KubeObject & KubernetesObject>('v1', 'Service', NS, CHILD_SELECTOR),
  ]);
  const children = new Map([...deployments.items, ...services.items].map((o) => [`${o.kind}/${o.metadata.name}`, o]));

  const names = new Set(crs.map((c) => c.metadata.name));
  for (const name of wanted.keys()) if (!names.has(name)) out.push(`CR ${name} missing`);
  for (const name of deleted) if (names.has(name)) out.push(`CR ${name} deleted but still there`);

  const expectedChildren = new Set<string>();
  const uids = new Map<string, string>();
  for (const cr of crs) {
    const name = cr.metadata.name;
    uids.set(cr.metadata.uid!, name);
    const size = wanted.get(name);
    if (size !== undefined && cr.spec?.size !== size) out.push(`CR ${name}: spec.size ${cr.spec?.size}, asked ${size}`);
    const status = cr.status;
    if (status?.observedGeneration !== cr.metadata.generation) out.push(`CR ${name}: observedGeneration ${status?.observedGeneration} != generation ${cr.metadata.generation}`);
    if (status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') out.push(`CR ${name}: not Ready`);
    if (status?.conditions?.find((c) => c.type === 'Degraded')?.status !== 'False') out.push(`CR ${name}: Degraded not False`);
    const selector = ContainerApp.selectorLabelsOf(name, kind.appName);
    const own = pods.filter((p) => Object.entries(selector).every(([k, v]) => p.metadata?.labels?.[k] === v));
    const podNames = own.map((p) => p.metadata!.name!).sort();
    if (JSON.stringify(status?.nodes ?? []) !== JSON.stringify(podNames)) out.push(`CR ${name}: status.nodes ${JSON.stringify(status?.nodes)} != pods ${JSON.stringify(podNames)}`);
    if (podNames.length !== (cr.spec?.size ?? 1) || !own.every(isReady)) out.push(`CR ${name}: ${own.filter(isReady).length}/${podNames.length} pods ready, size ${cr.spec?.size}`);
    if (status?.readyReplicas !== (cr.spec?.size ?? 1)) out.push(`CR ${name}: status.readyReplicas ${status?.readyReplicas}`);

    for (const desired of render(kind, cr)) {
      const key = `${desired.kind}/${desired.metadata.name}`;
      expectedChildren.add(key);
      const live = children.get(key);
      if (!live) {
        out.push(`CR ${name}: ${key} missing`);
        continue;
      }
      const owner = live.metadata.ownerReferences?.find((r) => r.controller);
      if (owner?.uid !== cr.metadata.uid) out.push(`${key}: controller owner ${owner?.uid}, CR uid ${cr.metadata.uid}`);
      const diff: string[] = [];
      missingFields({ metadata: { labels: desired.metadata.labels }, spec: desired.spec }, live, key, diff);
      out.push(...diff);
    }
  }
  // No child without its CR (orphans), none left of a deleted CR.
  for (const [key, live] of children) {
    if (expectedChildren.has(key)) continue;
    const owner = live.metadata.ownerReferences?.find((r) => r.controller);
    out.push(`${key}: not rendered by any CR (controller owner ${owner?.name ?? 'none'}, ${owner && uids.has(owner.uid) ? 'exists' : 'gone'})`);
  }
  return out;
}

/** Waits for problems() to come back empty; fails with what is still wrong. */
async function converged(what: string): Promise<void> {
  const started = Date.now();
  let last: string[] = [];
  while (Date.now() - started < CONVERGE_MS) {
    try {
      last = await problems();
      if (process.env.LOAD_DEBUG) process.stderr.write(`${what}: ${last.length} problems: ${last.slice(0, 3).join(' | ')}\n`);
      if (last.length === 0) {
        console.log(`${what}: converged ${((Date.now() - started) / 1000).toFixed(1)} s after the batch; ${wanted.size} CRs, ${deleted.size} deleted`);
        return;
      }
    } catch (e) {
      last = [`reading the end state: ${(e as Error).message}`];
    }
    await sleep(2_000);
  }
  throw new Error(`${what}: not converged after ${CONVERGE_MS / 1000} s; ${last.length} problems, first 30:\n${last.slice(0, 30).join('\n')}`);
}

/** The operator kept running (no exit, no restart) and logged no error. */
function expectOperatorAlive(op: OperatorProcess): void {
  expect(op.exited).toBe(false);
  expect(op.logs.filter((l) => l.level === 'error').map((l) => `${l.msg} ${l.key ?? ''}`)).toEqual([]);
}

beforeAll(async () => {
  // With the scheduler and kwok: pods turn Ready on fake nodes, so status.nodes and Ready mean something.
  cp = await ControlPlane.start({ scheduler: true, pods: 4 * N });
  rest = new RestClient(cp.kubeConfig());
  core = cp.kubeConfig().makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await installCrds(cp.kubeConfig(), [kind]);
  await installOperatorIdentity(cp.kubeConfig(), [kind], NS);
  kubeconfig = await cp.serviceAccountKubeconfig(NS, OPERATOR_SA);
  operator = await startOperator();
}, 120_000);

afterAll(async () => {
  await operator?.stop('SIGTERM');
  rest?.close();
  await cp?.stop();
});

describe(`faults while ${N} CRs are created, scaled or deleted`, () => {
  test(`the operator SIGKILLed while ${N} CRs are created, and started again: every CR converges, nothing orphaned`, async () => {
    const ops = Array.from({ length: N }, () => createOp());
    await runBatch(ops, Math.floor(N / 3), async () => {
      expect(await operator.stop('SIGKILL')).toBeNull();
      operator = await startOperator();
    });
    await converged('operator SIGKILL');
    expectOperatorAlive(operator);
  }, 400_000);

  test(`kube-apiserver restarted mid-batch (${N} creates, scales and deletes): the operator reconverges without restarting`, async () => {
    const pid = operator.child.pid;
    const linesBefore = operator.logs.length;
    await runBatch(mixedBatch(N), Math.floor(N / 3), () => cp.restart('kube-apiserver'));
    await converged('kube-apiserver restart');
    expectOperatorAlive(operator);
    expect(operator.child.pid).toBe(pid);
    // The restart did reach the operator: its watches dropped and resumed or relisted.
    expect(operator.logs.slice(linesBefore).map((l) => l.msg)).toEqual(expect.arrayContaining(['watch failed; resuming']));
  }, 400_000);

  test(`etcd restarted mid-batch (${N} creates, scales and deletes): the operator reconverges without restarting`, async () => {
    const pid = operator.child.pid;
    await runBatch(mixedBatch(N), Math.floor(N / 3), () => cp.restart('etcd'));
    await converged('etcd restart');
    expectOperatorAlive(operator);
    expect(operator.child.pid).toBe(pid);
  }, 400_000);

  test(`kube-apiserver paused (SIGSTOP) longer than WATCH_STALE_SECONDS mid-batch (${N} creates, scales and deletes), then resumed`, async () => {
    const pid = operator.child.pid;
    const apiserver = cp.pids()['kube-apiserver']!;
    let relistsDuringPause = 0;
    await runBatch(mixedBatch(N), Math.floor(N / 3), async () => {
      const before = operator.logs.length;
      process.kill(apiserver, 'SIGSTOP');
      try {
        await sleep((WATCH_STALE_SECONDS + 5) * 1000);
      } finally {
        process.kill(apiserver, 'SIGCONT');
      }
      relistsDuringPause = operator.logs.slice(before).filter((l) => l.msg === 'watch silent too long; relisting').length;
    });
    await converged('kube-apiserver SIGSTOP');
    expectOperatorAlive(operator);
    expect(operator.child.pid).toBe(pid);
    // The pause did outlast the watchdog: it gave up on the silent watches while the server was stopped.
    expect(relistsDuringPause).toBeGreaterThan(0);
  }, 400_000);
});
