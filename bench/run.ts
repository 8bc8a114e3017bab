// `npm run bench`: the operator against the floor, in one run, on the real control plane.
// For each N: a fresh control plane runs the floor (render()'s objects server-side applied by a
// plain client, no operator), another fresh one the operator (compiled, as its ServiceAccount);
// both create N apps of size 2 at 4 requests in flight and wait until all are ready, then scale
// every app by one. The operator run then measures edit latency, request counts (audit log) and a
// steady state. Last, a kind-settings rollout: the operator restarted with a new default image
// (floor: the same new objects applied straight). Ratios divide by the floor of the same run.
// With --go, last, a controller-runtime (Go) reference operator (bench/go-operator/) on a third fresh
// control plane, create and scale, checked to apply render()'s very objects.
// Writes bench/results.json and the tables of docs/benchmark.md. Usage: npm run bench [-- --n 1000] [--growth]
// [--2500] [--edits 200] [--steady 60] [--no-rollout] [--waves 10%] [--go] [--repeat K] [--profile <dir>] [--unrelated 5000]
// The operator's own settings (APPKIND_WORKERS, APPKIND_STATUS_INTERVAL_MS) pass through from the environment.
import { KubeConfig, type KubernetesObject, type V1Deployment, type V1Pod, type V1Service } from '@kubernetes/client-node';
import { ContainerApp } from 'cdk8s-appkind';
import { execFileSync, spawn } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { appPropsFor, render, type AppResource, type KubeObject } from 'appkind-operator/kinds';
import { createLogger, Informer, RestClient } from 'appkind-operator/runtime';
import { computeStatus, type AppStatus } from '../operator/controller/status.js';
import { DEFAULT_STATUS_INTERVAL_MS, DEFAULT_WORKERS, withPrefixedSettings } from 'appkind-operator/settings';

import type { AuditEvent } from '../tools/controlplane/audit.js';
import { ControlPlane } from '../tools/controlplane/controlplane.js';
import { httpGet, waitFor } from '../tools/controlplane/readiness.js';
import { cpuMeter, cpuMeters, memoryMiB } from './proc.js';
import { ApiserverRecorder } from './profile.js';
import { checkSameChildren, goOperatorBinary, startGoOperator } from './go-operator.js';
import { isWrite, mediansOf, ratioOf, repetitionOf, table, writeResults, writesPerApp } from './report.js';
import type { BenchRun, BenchSettings, FloorRun, GoOperatorRun, OperatorRun, Repetition } from './results.js';
import { freePort } from '../tools/controlplane/ports.js';
import { buildOperator, kind, NS, OPERATOR_MAIN, OPERATOR_NS, setUpOperator } from './operator-setup.js';
import { Tracker } from './tracker.js';

/** The environment with the deprecated unprefixed settings read as their APPKIND_ names. */
const settingsEnv = withPrefixedSettings(process.env).env;

const root = join(import.meta.dirname, '..');
const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:appkind-operator`;
const FLOOR_SA = 'bench-floor';
const FLOOR_USER = `system:serviceaccount:${NS}:${FLOOR_SA}`;
const CR_API = `${kind.group}/${kind.version}`;
/** The default NodePort range holds 2768 Services; wider runs need a wider range (a real cluster too). */
const WIDE_NODE_PORTS = '30000-39999';
/** The kind's new default image of the rollout phase */
const ROLLOUT_IMAGE = 'takeyan/flask:0.0.4';
/** The kind of the rollout phase: all apps at once, as before waves, unless --waves gives maxConcurrent. */
const rolloutKindOf = (s: { waves?: string }) => ({ ...kind, image: ROLLOUT_IMAGE, rollout: { maxConcurrent: s.waves ?? '100%' } });

const log = (line: string) => void process.stderr.write(`${line}\n`);

const USAGE = `Usage: npm run bench [-- options]
  --n 1000[,300,...]  numbers of CRs, one run each (default 1000)
  --growth            N = 100, 300 and 1000
  --2500              add N = 2500
  --size 2            replicas per CR at create (scaled +1 afterwards)
  --concurrency 4     requests in flight
  --edits 200         spec.size edits, one at a time, for the edit latency
  --steady 60         seconds of steady state checked for writes
  --no-rollout        skip the restart with a new default image (the longest phase)
  --waves 10%         the rollout phase in waves of the kind's rollout.maxConcurrent (a number or a
                      percentage; default: 100%, every app at once), its most apps in flight sampled
  --go                then a controller-runtime (Go) operator, 4 workers, on its own control plane
                      (create and scale; bench/go-operator/, built once into ~/.cache/appkind/go-operator/)
  --repeat 1          run each N this many times (floor, operator and --go in turn, each time on fresh
                      control planes) and report the median and range of each ratio: runs of the
                      same code on these shared machines differ by up to a third
  --profile <dir>     operator --cpu-prof, kube-apiserver pprof and /metrics per phase into <dir>
  --no-cr-floor       skip the CR floor (a plain client doing the least any CR-based operator must, on
                      its own fresh control plane, after the raw floor)
  --unrelated K       then the operator's run again on a fresh control plane holding K Deployments
                      (0 replicas) and K Services of no CR in other namespaces, created before the
                      operator starts: its RSS, CPU, start time and edit latency with and without them
Writes bench/results.json and the tables of docs/benchmark.md.`;

const FLAGS_WITH_VALUE = ['--n', '--size', '--concurrency', '--edits', '--steady', '--repeat', '--profile', '--unrelated', '--waves'];
const FLAGS = ['--growth', '--2500', '--no-rollout', '--no-cr-floor', '--go', '--help', '-h'];

function args(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  for (let i = 0; i < argv.length; i++) {
    if (FLAGS_WITH_VALUE.includes(argv[i]!)) i++;
    else if (!FLAGS.includes(argv[i]!)) throw new Error(`bench: unknown argument ${argv[i]}\n${USAGE}`);
  }
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  let ns = (value('--n') ?? '1000').split(',').map(Number);
  if (argv.includes('--growth')) ns = [100, 300, 1000];
  if (argv.includes('--2500')) ns = [...new Set([...ns, 2500])];
  const settings = {
    size: Number(value('--size') ?? 2),
    concurrency: Number(value('--concurrency') ?? 4),
    edits: Number(value('--edits') ?? 200),
    steadySeconds: Number(value('--steady') ?? 60),
    repeat: Number(value('--repeat') ?? 1),
    unrelated: Number(value('--unrelated') ?? 0),
  };
  for (const n of [...ns, ...Object.values(settings)]) {
    if (!Number.isInteger(n) || n < 0) throw new Error(`bench: bad argument in ${argv.join(' ')}`);
  }
  if (settings.repeat < 1) throw new Error('bench: --repeat needs a count of 1 or more');
  if (settings.repeat > 1 && argv.includes('--profile')) throw new Error('bench: --profile records one run; use it without --repeat');
  const profile = value('--profile');
  if (argv.includes('--profile') && !profile) throw new Error('bench: --profile needs a directory');
  const waves = value('--waves');
  if (argv.includes('--waves') && !/^([1-9][0-9]*|[1-9][0-9]?%|100%)$/.test(waves ?? ''))
    throw new Error('bench: --waves needs a maxConcurrent: a number of apps like 50, or a percentage like 10%');
  if (waves && argv.includes('--no-rollout')) throw new Error('bench: --waves is a way to run the rollout phase; leave out --no-rollout');
  // The rollout phase replaces every pod once more; --no-rollout skips it (the longest runs).
  return { ns, ...settings, profile, waves, rollout: !argv.includes('--no-rollout'), go: argv.includes('--go'), crFloor: !argv.includes('--no-cr-floor') };
}

type Settings = ReturnType<typeof args>;
type Resource = KubernetesObject & {
  spec?: { size?: number };
  status?: { nodes?: string[]; observedGeneration?: number; conditions?: { type: string; status: string }[] };
};

const seconds = (since: number) => Math.round((performance.now() - since) / 10) / 100;

/** Runs fn over items with at most `concurrency` in flight. */
async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

/** Each app's size when the rollout starts: the first `edits` were edited back to `size`, the rest scaled to size + 1. */
const rolloutSize = (i: number, s: Settings) => (i < s.edits ? s.size : s.size + 1);

const crOf = (i: number, size: number) => ({ apiVersion: CR_API, kind: kind.kind, metadata: { name: `app-${i}`, namespace: NS }, spec: { size } });
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

function deploymentReady(size: number) {
  return (d: V1Deployment) => d.spec?.replicas === size && d.status?.readyReplicas === size && d.status?.updatedReplicas === size &&
    d.status?.replicas === size && (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
}

/** A Deployment on the rollout image, every replica updated and ready. */
function deploymentRolledOut(d: V1Deployment): boolean {
  const size = d.spec?.replicas ?? -1;
  return d.spec?.template.spec?.containers[0]?.image === ROLLOUT_IMAGE && deploymentReady(size)(d);
}

function crConverged(size: number) {
  return (r: Resource) => r.status?.nodes?.length === size && r.status.observedGeneration === r.metadata?.generation &&
    r.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

/** Requests by one user between two instants: `verb resource[/subresource]` -> count. */
function requests(audit: AuditEvent[], user: string, from: string, to: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of audit) {
    if (e.user.username !== user || e.stageTimestamp < from || e.stageTimestamp >= to) continue;
    const what = `${e.verb} ${e.objectRef?.resource ?? e.requestURI}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
    counts[what] = (counts[what] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** Status patches per CR in one phase's request counts. */
const statusPatchesPerCr = (counts: Record<string, number>, n: number) => ratioOf(counts[`patch ${kind.plural}/status`] ?? 0, n);

/** app-i's spec.size patched as a user's edit (a merge patch). */
function patchSize(rest: RestClient, i: number, size: number): Promise<unknown> {
  return rest.request('PATCH', `/apis/${CR_API}/namespaces/${NS}/${kind.plural}/app-${i}`, { body: { spec: { size } }, contentType: 'application/merge-patch+json' });
}

/**
 * What an operator's run (ours or the Go one, `who`) measures first: N CRs created, then each scaled
 * by one, at the run's concurrency, each phase until every CR is converged; the phases' start times
 * for the audit log. `recorder` (--profile) is told when the scale begins.
 */
async function createThenScale(who: string, n: number, s: Settings, rest: RestClient, crs: Tracker<Resource>, recorder?: ApiserverRecorder) {
  const at = () => new Date().toISOString();
  log(`bench: ${who} N=${n}: create`);
  const tCreateIso = at();
  const tCreate = performance.now();
  await pool(range(n), s.concurrency, (i) => rest.apply(crOf(i, s.size), 'bench'));
  const createSent = seconds(tCreate);
  await crs.waitFor(`${who}: ${n} CRs converged`, n, crConverged(s.size), 1_800_000);
  const createSeconds = seconds(tCreate);

  await recorder?.mark('scale');
  log(`bench: ${who} N=${n}: scale`);
  const tScaleIso = at();
  const tScale = performance.now();
  await pool(range(n), s.concurrency, (i) => patchSize(rest, i, s.size + 1));
  const scaleSent = seconds(tScale);
  await crs.waitFor(`${who}: ${n} CRs scaled`, n, crConverged(s.size + 1), 1_800_000);
  const scaleSeconds = seconds(tScale);
  return { tCreateIso, tScaleIso, tScaledIso: at(), createSeconds, scaleSeconds, sentSeconds: { create: createSent, scale: scaleSent } };
}

const sum = (counts: Record<string, number>, pick: (what: string) => boolean = () => true) =>
  Object.entries(counts).filter(([w]) => pick(w)).reduce((s, [, n]) => s + n, 0);

/** CPU meters of every control-plane process, and of an operator's when given. */
function machineCpu(cp: ControlPlane, operatorPid?: number): () => Record<string, number> {
  const pids: Record<string, number> = Object.fromEntries(Object.entries(cp.pids()).filter((e): e is [string, number] => e[1] !== undefined));
  return cpuMeters(operatorPid ? { ...pids, operator: operatorPid } : pids);
}

/** Namespaces the unrelated objects are spread over (none of them the CRs'). */
const UNRELATED_NAMESPACES = 10;

/**
 * `count` Deployments (0 replicas: no pods, so the cluster's load stays that of the objects) and
 * `count` ClusterIP Services, of no CR and without the children's label, in namespaces other than
 * the CRs': what a cluster full of other workloads holds. Created as the admin, 16 in flight.
 */
async function createUnrelated(cp: ControlPlane, count: number): Promise<number> {
  const admin = new RestClient(cp.kubeConfig());
  const t = performance.now();
  const nsOf = (i: number) => `unrelated-${i % UNRELATED_NAMESPACES}`;
  for (let i = 0; i < Math.min(count, UNRELATED_NAMESPACES); i++) await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: nsOf(i) } }, 'bench');
  const labels = { app: 'unrelated' };
  await pool(range(count), 16, async (i) => {
    const metadata = { name: `unrelated-${i}`, namespace: nsOf(i), labels: { ...labels, index: String(i) } };
    await admin.request('POST', `/apis/apps/v1/namespaces/${metadata.namespace}/deployments`, {
      body: {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata,
        spec: {
          replicas: 0, selector: { matchLabels: { ...labels, index: String(i) } },
          template: { metadata: { labels: { ...labels, index: String(i) } }, spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] } },
        },
      },
    });
    await admin.request('POST', `/api/v1/namespaces/${metadata.namespace}/services`, {
      body: { apiVersion: 'v1', kind: 'Service', metadata, spec: { selector: { ...labels, index: String(i) }, ports: [{ port: 80 }] } },
    });
  });
  admin.close();
  return seconds(t);
}

async function startControlPlane(n: number, s: Settings): Promise<ControlPlane> {
  // Room for the rollout's surge pods (one more per app while its pods are replaced).
  return ControlPlane.start({ auditLog: true, log, pods: n * (s.size + 2), nodePortRange: n > 2700 ? WIDE_NODE_PORTS : undefined, profiling: !!s.profile });
}

async function floor(n: number, s: Settings): Promise<FloorRun> {
  const cp = await startControlPlane(n, s);
  try {
    const admin = new RestClient(cp.kubeConfig());
    kubernetes = (await admin.request<{ gitVersion: string }>('GET', '/version')).gitVersion;
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, 'bench');
    // The floor's client has its own ServiceAccount, like the operator: its requests are told apart
    // from the controllers' (which use the admin identity) in the audit log, and both pay the same
    // token authentication. RBAC: edit in the bench namespace.
    await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: FLOOR_SA, namespace: NS } }, 'bench');
    await admin.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: FLOOR_SA, namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ kind: 'ServiceAccount', name: FLOOR_SA, namespace: NS }],
    }, 'bench');
    admin.close();
    const kc = new KubeConfig();
    kc.loadFromFile(await cp.serviceAccountKubeconfig(NS, FLOOR_SA));
    const rest = new RestClient(kc);
    await waitFor('floor RBAC', async () => !!(await rest.list('apps/v1', 'Deployment', NS).catch(() => undefined)), { timeoutMs: 60_000 });
    const deployments = new Tracker<V1Deployment>(rest, { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespace: NS });
    await deployments.start();
    const recorder = s.profile ? new ApiserverRecorder(cp.kubeConfig(), s.profile, `floor-${n}`) : undefined;
    recorder?.start();
    await recorder?.mark('create');
    const apiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
    const allCpu = machineCpu(cp);
    const at = () => new Date().toISOString();

    log(`bench: floor N=${n}: create`);
    const tCreateIso = at();
    const tCreate = performance.now();
    const objects = range(n).flatMap((i) => render(kind, crOf(i, s.size)));
    await pool(objects, s.concurrency, (o) => rest.apply(o, 'bench-floor'));
    const createSent = seconds(tCreate);
    await deployments.waitFor(`floor: ${n} Deployments ready`, n, deploymentReady(s.size), 1_800_000);
    const createSeconds = seconds(tCreate);

    await recorder?.mark('scale');
    log(`bench: floor N=${n}: scale`);
    const tScaleIso = at();
    const tScale = performance.now();
    const scaled = range(n).flatMap((i) => render(kind, crOf(i, s.size + 1)).filter((o) => o.kind === 'Deployment'));
    await pool(scaled, s.concurrency, (o) => rest.apply(o, 'bench-floor'));
    const scaleSent = seconds(tScale);
    await deployments.waitFor(`floor: ${n} Deployments scaled`, n, deploymentReady(s.size + 1), 1_800_000);
    const scaleSeconds = seconds(tScale);
    const apiserverCpuSeconds = apiserverCpu();
    const cpuSecondsByProcess = allCpu();
    const tEndIso = at();

    // The rollout's floor: the objects render() gives with the kind's new image, at the sizes the
    // operator's apps have by then, applied straight; until every Deployment has rolled out.
    let rolloutSeconds: number | undefined;
    if (s.rollout) {
      await recorder?.mark('rollout');
      log(`bench: floor N=${n}: rollout of a new image`);
      const tRollout = performance.now();
      const rolled = range(n).flatMap((i) => render(rolloutKindOf(s), crOf(i, rolloutSize(i, s))).filter((o) => o.kind === 'Deployment'));
      await pool(rolled, s.concurrency, (o) => rest.apply(o, 'bench-floor'));
      await deployments.waitFor(`floor: ${n} Deployments rolled out`, n, (d) => deploymentRolledOut(d), 1_800_000);
      rolloutSeconds = seconds(tRollout);
    }
    await recorder?.mark('end');
    await recorder?.stop();

    deployments.stop();
    rest.close();
    const audit = await cp.readAuditLog();
    return {
      createSeconds,
      scaleSeconds,
      rolloutSeconds,
      apiserverCpuSeconds,
      cpuSecondsByProcess,
      sentSeconds: { create: createSent, scale: scaleSent },
      requests: { create: requests(audit, FLOOR_USER, tCreateIso, tScaleIso), scale: requests(audit, FLOOR_USER, tScaleIso, tEndIso) },
      writesPerApp: { create: writesPerApp(audit, n, tCreateIso, tScaleIso), scale: writesPerApp(audit, n, tScaleIso, tEndIso) },
    };
  } finally {
    await cp.stop();
  }
}

/** At most `k` of the calls it wraps in flight; the others wait their turn in order. */
function limiter(k: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= k) await new Promise<void>((r) => waiting.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** The children's label: the operator's pod cache selects on it. */
const CHILD_SELECTOR = `${ContainerApp.MANAGED_BY_LABEL}=${ContainerApp.DEFAULT_MANAGED_BY}`;
/** The operator's field manager (its default APPKIND_FIELD_MANAGER). */
const OPERATOR_FIELD_MANAGER = 'appkind-operator';

/**
 * The CR floor: the least work any CR-based operator makes the control plane do,
 * at the best latency. On its own fresh control plane, with the operator's CRD, RBAC and identity:
 * the bench creates the N CRs (then patches their size) at the same concurrency as in the operator's
 * run; a plain client under the operator's ServiceAccount server-side applies, as each CR's create or
 * edit is answered, exactly the children render() gives (with the ownerReference the operator sets;
 * on scale only the Deployment, which is all that changed), at the same concurrency, and patches each
 * CR's status exactly once per phase with what computeStatus gives, as soon as that app's Deployment
 * is ready (its one watch on the Deployments; the pod names status lists come from a watch of the
 * children's pods, as the operator's do). No cache of CRs, no Services watched, no reconcile, no Events.
 */
async function crFloor(n: number, s: Settings): Promise<FloorRun> {
  const cp = await startControlPlane(n, s);
  try {
    const { rest, env } = await setUpOperator(cp);
    const kc = new KubeConfig();
    kc.loadFromFile(env.KUBECONFIG!);
    const client = new RestClient(kc);
    const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
    await crs.start();
    const quiet = { staleMs: 600_000, log: createLogger('warn'), rest: client };
    /** Each app's CR as the last create or patch answered, and its Service as applied (NodePort). */
    const crOfApp = new Map<number, Resource & AppResource>();
    const serviceOfApp = new Map<number, V1Service>();
    /** The status written in this phase (computeStatus's previous in the next). */
    const written = new Map<number, AppStatus>();
    let phase = { size: s.size, patched: new Set<number>() };
    const statusWrites: Promise<unknown>[] = [];
    const appOf = (name: string | undefined, suffix: string) => {
      const m = name ? new RegExp(`^app-(\\d+)${suffix}$`).exec(name) : null;
      return m ? Number(m[1]) : undefined;
    };
    const pods = new Informer<V1Pod>({ apiVersion: 'v1', kind: 'Pod', plural: 'pods', namespace: NS, labelSelector: CHILD_SELECTOR }, (_t, pod) => {
      const i = appOf(pod.metadata?.labels?.[ContainerApp.INSTANCE_LABEL], '');
      if (i !== undefined) check(i);
    }, quiet);
    const deployments = new Informer<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespace: NS }, (_t, d) => {
      const i = appOf(d.metadata?.name, '-deployment');
      if (i !== undefined) check(i);
    }, quiet);
    /** The app's status patch of this phase, once its Deployment is ready and its pods are all seen. */
    const check = (i: number) => {
      const { size, patched } = phase;
      const cr = crOfApp.get(i);
      const d = deployments.get(NS, `app-${i}-deployment`);
      if (patched.has(i) || !cr || cr.spec?.size !== size || !d || !deploymentReady(size)(d)) return;
      const own = pods.list().filter((p) => p.metadata?.labels?.[ContainerApp.INSTANCE_LABEL] === `app-${i}` && !p.metadata?.deletionTimestamp);
      const props = appPropsFor(kind, cr);
      const status = computeStatus({
        size, generation: cr.metadata?.generation, selectorLabels: ContainerApp.selectorLabelsOf(props.name!, props.appName!),
        deployment: d, service: serviceOfApp.get(i), pods: own, previous: written.get(i), now: new Date(),
      });
      if (status.nodes.length !== size || status.conditions.find((c) => c.type === 'Ready')?.status !== 'True') return;
      patched.add(i);
      written.set(i, status);
      statusWrites.push(client.patchStatus(cr, status));
    };
    await pods.start();
    await deployments.start();
    const owned = (obj: KubeObject, cr: Resource): KubeObject => ({
      ...obj,
      metadata: { ...obj.metadata, namespace: NS, ownerReferences: [{ apiVersion: CR_API, kind: kind.kind, name: cr.metadata!.name!, uid: cr.metadata!.uid!, controller: true, blockOwnerDeletion: true }] },
    }) as KubeObject;
    const children = limiter(s.concurrency);
    const applyChildren = async (i: number, cr: Resource & AppResource, only?: string) => {
      const objects = render(kind, cr).filter((o) => !only || o.kind === only);
      await Promise.all(objects.map(async (o) => {
        const live = await client.apply(owned(o, cr), OPERATOR_FIELD_MANAGER);
        if (o.kind === 'Service') serviceOfApp.set(i, live as V1Service);
      }));
      check(i);
    };

    const apiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
    const allCpu = machineCpu(cp);
    const at = () => new Date().toISOString();
    log(`bench: CR floor N=${n}: create`);
    const tCreateIso = at();
    const tCreate = performance.now();
    const applied: Promise<unknown>[] = [];
    await pool(range(n), s.concurrency, async (i) => {
      const cr = await rest.apply(crOf(i, s.size), 'bench') as Resource & AppResource;
      crOfApp.set(i, cr);
      applied.push(children(() => applyChildren(i, cr)));
    });
    const createSent = seconds(tCreate);
    await Promise.all(applied);
    await crs.waitFor(`CR floor: ${n} CRs converged`, n, crConverged(s.size), 1_800_000);
    const createSeconds = seconds(tCreate);

    log(`bench: CR floor N=${n}: scale`);
    phase = { size: s.size + 1, patched: new Set() };
    const tScaleIso = at();
    const tScale = performance.now();
    applied.length = 0;
    await pool(range(n), s.concurrency, async (i) => {
      const cr = await patchSize(rest, i, s.size + 1) as Resource & AppResource;
      crOfApp.set(i, cr);
      applied.push(children(() => applyChildren(i, cr, 'Deployment')));
    });
    const scaleSent = seconds(tScale);
    await Promise.all(applied);
    await crs.waitFor(`CR floor: ${n} CRs scaled`, n, crConverged(s.size + 1), 1_800_000);
    const scaleSeconds = seconds(tScale);
    const apiserverCpuSeconds = apiserverCpu();
    const cpuSecondsByProcess = allCpu();
    const tEndIso = at();
    await Promise.all(statusWrites);
    crs.stop();
    pods.stop();
    deployments.stop();
    client.close();
    rest.close();
    const audit = await cp.readAuditLog();
    return {
      createSeconds, scaleSeconds, apiserverCpuSeconds, cpuSecondsByProcess,
      sentSeconds: { create: createSent, scale: scaleSent },
      requests: { create: requests(audit, OPERATOR_USER, tCreateIso, tScaleIso), scale: requests(audit, OPERATOR_USER, tScaleIso, tEndIso) },
      writesPerApp: { create: writesPerApp(audit, n, tCreateIso, tScaleIso), scale: writesPerApp(audit, n, tScaleIso, tEndIso) },
    };
  } finally {
    await cp.stop();
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 10) / 10;
}

/** The sum of every sample of one metric family in a Prometheus text exposition. */
const metricSum = (text: string, name: string) =>
  text.split('\n').filter((l) => l.startsWith(name) && (l[name.length] === '{' || l[name.length] === ' ')).reduce((t, l) => t + Number(l.split(' ').pop()), 0);

/**
 * Start and restart at N converged CRs: the process is started again on a control
 * plane whose N CRs are converged, and timed from its spawn until its caches are synced and every CR
 * was checked: at least N reconciles counted (controller_runtime_reconcile_total, which both operators
 * export) and the work queue empty. Its writes meanwhile come from the audit log (Leases left out).
 */
async function timedRestart<P>(who: string, n: number, metricsUrl: string, start: () => Promise<P>): Promise<{ proc: P; seconds: number; fromIso: string; toIso: string }> {
  log(`bench: ${who} N=${n}: restarted on ${n} converged CRs, until every CR is checked`);
  const fromIso = new Date().toISOString();
  const t = performance.now();
  const proc = await start();
  await waitFor(`${who}: ${n} CRs checked after the restart`, async () => {
    const m = (await httpGet(metricsUrl).catch(() => ({ status: 0, body: '' }))).body;
    return metricSum(m, 'controller_runtime_reconcile_total') >= n && metricSum(m, 'workqueue_depth') === 0;
  }, { timeoutMs: 600_000, intervalMs: 100 });
  return { proc, seconds: seconds(t), fromIso, toIso: new Date().toISOString() };
}

/** Writes in a window's request counts, Lease renewals left out. */
const writesBesidesLeases = (counts: Record<string, number>) => sum(counts, (what) => isWrite(what) && !what.split(' ')[1]!.startsWith('leases'));

async function operator(n: number, s: Settings, unrelated = 0): Promise<OperatorRun> {
  let exitCode: number | null | undefined;
  const run = await operatorRun(n, s, (code) => (exitCode = code), unrelated);
  return { ...run, exitCode };
}

interface OperatorProcess {
  readonly pid: number;
  readonly exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

/**
 * The most apps the operator had in flight in its kind's rollout, from its /metrics once a second
 * until stop() (one GET a second: nothing the API server sees).
 */
function sampleInFlight(port: number): { stop: () => Promise<number> } {
  let most = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const body = (await httpGet(`http://127.0.0.1:${port}/metrics`).catch(() => ({ body: '' }))).body;
      const line = body.split('\n').find((l) => l.startsWith('appkind_kind_rollout_apps{') && l.includes('state="in_flight"'));
      if (line) most = Math.max(most, Number(line.split(' ').pop()));
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  return { stop: async () => ((running = false), await loop, most) };
}

/** The operator (build/operator/main.js) as its own process (under `--cpu-prof` with --profile); resolves when /readyz passes. */
async function startOperator(env: NodeJS.ProcessEnv, port: number, s: Settings, name: string): Promise<OperatorProcess> {
  const prof = s.profile ? ['--cpu-prof', `--cpu-prof-dir=${s.profile}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
  const child = spawn(process.execPath, [...prof, OPERATOR_MAIN], { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const stop = async () => {
    child.kill('SIGTERM');
    return exited;
  };
  try {
    await waitFor('operator ready', async () => (await httpGet(`http://127.0.0.1:${port}/readyz`).catch(() => ({ status: 0 }))).status === 200, { timeoutMs: 120_000 });
  } catch (e) {
    await stop();
    throw e;
  }
  return { pid: child.pid!, exited, stop };
}

async function operatorRun(n: number, s: Settings, onExit: (code: number | null) => void, unrelated = 0): Promise<OperatorRun> {
  const cp = await startControlPlane(n, s);
  try {
    const { rest, port, env } = await setUpOperator(cp);
    for (const name of ['APPKIND_WORKERS', 'APPKIND_STATUS_INTERVAL_MS', 'APPKIND_LOG_LEVEL']) if (settingsEnv[name]) env[name] = settingsEnv[name];
    let unrelatedObjects: OperatorRun['unrelated'];
    if (unrelated > 0) {
      log(`bench: operator N=${n}: ${unrelated} unrelated Deployments and Services in ${UNRELATED_NAMESPACES} other namespaces`);
      unrelatedObjects = { count: unrelated, createdSeconds: await createUnrelated(cp, unrelated) };
    }
    // Start: from the process's spawn until /readyz passes (every cache synced).
    const tStart = performance.now();
    let op = await startOperator(env, port, s, `operator-${n}${unrelated ? '-unrelated' : ''}`);
    const startSeconds = seconds(tStart);
    try {
      const metrics = async () => (await httpGet(`http://127.0.0.1:${port}/metrics`)).body;
      const pid = op.pid;
      const rssIdleMiB = memoryMiB(pid, 'VmRSS');
      const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
      await crs.start();
      const recorder = s.profile ? new ApiserverRecorder(cp.kubeConfig(), s.profile, `operator-${n}`) : undefined;
      recorder?.start();
      await recorder?.mark('create');
      const apiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
      const operatorCpu = cpuMeter(pid);
      const allCpu = machineCpu(cp, pid);
      const at = () => new Date().toISOString();

      const { tCreateIso, tScaleIso, tScaledIso, createSeconds, scaleSeconds, sentSeconds } = await createThenScale('operator', n, s, rest, crs, recorder);
      const apiserverCpuSeconds = apiserverCpu();
      const cpuSeconds = operatorCpu();
      const cpuSecondsByProcess = allCpu();

      // The edits' watch on Deployments starts only now: during create and scale the bench watches one
      // resource in either run (the floor's Deployments, the operator's CRs), so the operator's figures
      // carry no watch of the bench's own that the floor's lack.
      const deployments = new Tracker<V1Deployment>(rest, { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespace: NS });
      await deployments.start();
      await recorder?.mark('edits');
      log(`bench: operator N=${n}: ${Math.min(s.edits, n)} edits, one at a time`);
      const tEditsIso = at();
      const latencies: number[] = [];
      for (const i of range(Math.min(s.edits, n))) {
        const name = `app-${i}-deployment`;
        const seen = deployments.next((d) => d.metadata?.name === name && d.spec?.replicas === s.size);
        await patchSize(rest, i, s.size);
        const answered = performance.now();
        latencies.push(Math.max(0, (await seen) - answered));
      }
      latencies.sort((a, b) => a - b);

      const statusIntervalMs = Number(settingsEnv.APPKIND_STATUS_INTERVAL_MS || DEFAULT_STATUS_INTERVAL_MS);
      const settleMs = Math.max(15_000, statusIntervalMs + 5_000);
      log(`bench: operator N=${n}: ${settleMs / 1000} s to settle, then ${s.steadySeconds} s of steady state`);
      await crs.waitFor(`operator: ${n} CRs converged after the edits`, n, (r) => crConverged(r.spec?.size ?? 0)(r), 600_000);
      await new Promise((r) => setTimeout(r, settleMs));
      const reconciles = async () => { const m = await metrics(); return m.split('\n').filter((l) => l.startsWith('controller_runtime_reconcile_total')).reduce((t, l) => t + Number(l.split(' ').pop()), 0); };
      const before = await reconciles();
      const tSteadyIso = at();
      await new Promise((r) => setTimeout(r, s.steadySeconds * 1000));
      const steadyReconciles = (await reconciles()) - before;
      const tEndIso = at();
      const rssAfterMiB = memoryMiB(pid, 'VmRSS');
      // V8's heap in use after the run (prom-client's default metric): what the caches hold.
      const heapLine = (await metrics()).split('\n').find((l) => l.startsWith('nodejs_heap_size_used_bytes'));
      const heapUsedMiB = Math.round(Number(heapLine?.split(' ').pop() ?? NaN) / 2 ** 20);
      const rssPeakMiB = memoryMiB(pid, 'VmHWM');
      const cpuTotalSeconds = operatorCpu();

      // Restart on N converged CRs: to caches synced and every CR checked, with no write.
      onExit(await op.stop());
      const restarted = await timedRestart('operator', n, `http://127.0.0.1:${port}/metrics`, () => startOperator(env, port, s, `operator-${n}-restart`));
      op = restarted.proc;

      // Kind-settings rollout: the operator restarted with a new default image;
      // until every CR shows it (Ready flipped back to True after the restart, rollout complete)
      // and every Deployment runs the new image with all replicas ready.
      let rollout: OperatorRun['rollout'];
      const tRolloutIso = at();
      if (s.rollout) {
        await recorder?.mark('rollout');
        log(`bench: operator N=${n}: restart with a new default image (${ROLLOUT_IMAGE}), rollout to ${n} CRs`);
        const exitCode = await op.stop();
        onExit(exitCode);
        if (exitCode !== 0) log(`bench: operator exited with ${exitCode}`);
        const restartedAt = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
        const tRollout = performance.now();
        const rolloutApiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
        op = await startOperator({ ...env, APPKIND_KINDS: JSON.stringify({ kinds: [rolloutKindOf(s)] }) }, port, s, `operator-${n}-restarted`);
        const rolloutCpu = cpuMeter(op.pid);
        const inFlight = s.waves ? sampleInFlight(port) : undefined;
        const rolledOut = (r: Resource) => {
          const ready = r.status?.conditions?.find((c) => c.type === 'Ready') as { status: string; lastTransitionTime?: string } | undefined;
          const progressing = r.status?.conditions?.find((c) => c.type === 'Progressing');
          return crConverged(r.spec?.size ?? 0)(r) && progressing?.status === 'False' && (ready?.lastTransitionTime ?? '') >= restartedAt;
        };
        await crs.waitFor(`operator: ${n} CRs show the rollout`, n, rolledOut, 1_800_000);
        await deployments.waitFor(`operator: ${n} Deployments rolled out`, n, deploymentRolledOut, 600_000);
        // Operator CPU from its readiness (cache sync) on; kube-apiserver CPU from the restart on.
        rollout = {
          seconds: seconds(tRollout), image: ROLLOUT_IMAGE, operatorCpuSeconds: rolloutCpu(), apiserverCpuSeconds: rolloutApiserverCpu(),
          ...(inFlight ? { maxConcurrent: s.waves, mostInFlight: await inFlight.stop() } : {}),
        };
      }
      const tRolloutEndIso = at();
      await recorder?.mark('end');
      await recorder?.stop();
      crs.stop();
      deployments.stop();
      rest.close();

      const audit = await cp.readAuditLog();
      const steady = requests(audit, OPERATOR_USER, tSteadyIso, tEndIso);
      const create = requests(audit, OPERATOR_USER, tCreateIso, tScaleIso);
      const scale = requests(audit, OPERATOR_USER, tScaleIso, tEditsIso);
      const rolloutRequests = requests(audit, OPERATOR_USER, tRolloutIso, tRolloutEndIso);
      const statusPatches = (counts: Record<string, number>) => statusPatchesPerCr(counts, n);
      return {
        createSeconds,
        scaleSeconds,
        apiserverCpuSeconds,
        cpuSecondsByProcess,
        sentSeconds,
        cpuSeconds,
        cpuTotalSeconds,
        rssMiB: { idle: rssIdleMiB, afterRun: rssAfterMiB, peak: rssPeakMiB },
        heapUsedMiB,
        editLatencyMs: { count: latencies.length, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: percentile(latencies, 100) },
        requests: { create, scale, ...(rollout ? { rollout: rolloutRequests } : {}) },
        writesPerApp: { create: writesPerApp(audit, n, tCreateIso, tScaleIso), scale: writesPerApp(audit, n, tScaleIso, tScaledIso) },
        statusPatchesPerCr: { create: statusPatches(create), scale: statusPatches(scale), rollout: rollout ? statusPatches(rolloutRequests) : undefined },
        steadyState: { seconds: s.steadySeconds, writes: sum(steady, isWrite), reconciles: steadyReconciles },
        rollout,
        startSeconds,
        restart: { seconds: restarted.seconds, writes: writesBesidesLeases(requests(audit, OPERATOR_USER, restarted.fromIso, restarted.toIso)) },
        ...(unrelatedObjects ? { unrelated: unrelatedObjects } : {}),
        exitCode: undefined,
      };
    } finally {
      const code = await op.stop();
      if (code !== 0) log(`bench: operator exited with ${code}`);
    }
  } finally {
    await cp.stop();
  }
}

/**
 * The Go reference operator, as the operator's run measures it: its own fresh control plane, the
 * same ServiceAccount and RBAC, N CRs created then scaled at the same concurrency, until converged
 * by the same test; then its children of app-0 checked against render() (throws when they differ).
 */
async function goOperatorRun(n: number, s: Settings, binary: string): Promise<GoOperatorRun> {
  const cp = await startControlPlane(n, s);
  try {
    const { rest, port, env } = await setUpOperator(cp);
    const health = await freePort();
    let op = await startGoOperator(binary, kind, env, { metrics: port, health });
    try {
      const rssIdleMiB = memoryMiB(op.pid, 'VmRSS');
      const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
      await crs.start();
      const apiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
      const operatorCpu = cpuMeter(op.pid);
      const allCpu = machineCpu(cp, op.pid);
      const at = () => new Date().toISOString();

      const { tCreateIso, tScaleIso, tScaledIso, createSeconds, scaleSeconds } = await createThenScale('Go operator', n, s, rest, crs);
      const apiserverCpuSeconds = apiserverCpu();
      const cpuSeconds = operatorCpu();
      const cpuSecondsByProcess = allCpu();
      const tEndIso = at();
      const rssPeakMiB = memoryMiB(op.pid, 'VmHWM');

      // Restart on N converged CRs, timed as the operator's.
      const code = await op.stop();
      if (code !== 0) log(`bench: Go operator exited with ${code}`);
      const restarted = await timedRestart('Go operator', n, `http://127.0.0.1:${port}/metrics`, () => startGoOperator(binary, kind, env, { metrics: port, health }));
      op = restarted.proc;

      // The comparison is only fair with the very same objects: app-0's children against render().
      const cr0 = crs.list().find((r) => r.metadata?.name === 'app-0');
      crs.stop();
      if (!cr0) throw new Error('bench --go: app-0 is not in the cache');
      await checkSameChildren(rest, kind, cr0 as Resource & AppResource);
      log(`bench: Go operator N=${n}: app-0's Deployment and Service are render()'s, field by field`);
      rest.close();

      const audit = await cp.readAuditLog();
      const create = requests(audit, OPERATOR_USER, tCreateIso, tScaleIso);
      const scale = requests(audit, OPERATOR_USER, tScaleIso, tEndIso);
      const statusPatches = (counts: Record<string, number>) => statusPatchesPerCr(counts, n);
      return {
        createSeconds, scaleSeconds, apiserverCpuSeconds, cpuSeconds, cpuSecondsByProcess,
        rssMiB: { idle: rssIdleMiB, peak: rssPeakMiB },
        requests: { create, scale },
        writesPerApp: { create: writesPerApp(audit, n, tCreateIso, tScaleIso), scale: writesPerApp(audit, n, tScaleIso, tScaledIso) },
        statusPatchesPerCr: { create: statusPatches(create), scale: statusPatches(scale) },
        sameChildrenAs: 'app-0',
        workers: 4,
        restart: { seconds: restarted.seconds, writes: writesBesidesLeases(requests(audit, OPERATOR_USER, restarted.fromIso, restarted.toIso)) },
      };
    } finally {
      const code = await op.stop();
      if (code !== 0) log(`bench: Go operator exited with ${code}`);
    }
  } finally {
    await cp.stop();
  }
}

/** The run with unrelated objects over the one without (the goal: each within 1.1). */
function unrelatedRatios(u: OperatorRun, o: OperatorRun): NonNullable<BenchRun['ratios']['unrelated']> {
  return {
    rssIdle: ratioOf(u.rssMiB.idle, o.rssMiB.idle),
    rssPeak: ratioOf(u.rssMiB.peak, o.rssMiB.peak),
    cpu: ratioOf(u.cpuSeconds, o.cpuSeconds),
    start: ratioOf(u.startSeconds ?? NaN, o.startSeconds ?? NaN),
    editP50: ratioOf(u.editLatencyMs.p50, o.editLatencyMs.p50),
    editP99: ratioOf(u.editLatencyMs.p99, o.editLatencyMs.p99),
    create: ratioOf(u.createSeconds, o.createSeconds),
    scale: ratioOf(u.scaleSeconds, o.scaleSeconds),
  };
}

let kubernetes = 'unknown';

const loadAverage = () => loadavg().map((l) => Math.round(l * 100) / 100);

async function main(): Promise<void> {
  const s = args(process.argv.slice(2));
  // The operator as the image runs it, one bundled file (tsx would add its own memory to the figures).
  await buildOperator();
  // Built (or found in the cache) before any control plane starts: a build does not load a run.
  const goBinary = s.go ? goOperatorBinary(log) : undefined;
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const commit = execFileSync('git', ['describe', '--always', '--dirty'], { cwd: root, encoding: 'utf8' }).trim();
  const settings: BenchSettings = {
    size: s.size,
    concurrency: s.concurrency,
    edits: s.edits,
    steadySeconds: s.steadySeconds,
    ...(s.repeat > 1 ? { repeat: s.repeat } : {}),
    rolloutImage: s.rollout ? ROLLOUT_IMAGE : undefined,
    ...(s.waves ? { rolloutMaxConcurrent: s.waves } : {}),
    ...(s.unrelated > 0 ? { unrelated: s.unrelated } : {}),
    operator: {
      workers: Number(settingsEnv.APPKIND_WORKERS || DEFAULT_WORKERS),
      statusIntervalMs: Number(settingsEnv.APPKIND_STATUS_INTERVAL_MS || DEFAULT_STATUS_INTERVAL_MS),
    },
  };
  const runs: BenchRun[] = [];
  log(`bench: N=${s.ns.join(', ')}; settings ${JSON.stringify(settings)}; code ${commit}; load average ${loadAverage().join(' ')}`);
  for (const n of s.ns) {
    const at = runs.length; // this N's row, rewritten after each repetition
    const repetitions: Repetition[] = [];
    for (let rep = 1; rep <= s.repeat; rep++) {
      if (s.repeat > 1) log(`bench: N=${n}: repetition ${rep} of ${s.repeat}`);
      const last = await benchRun(n, s, { command, commit, settings }, goBinary);
      repetitions.push(repetitionOf(last));
      const run: BenchRun = repetitions.length > 1 ? { ...last, repetitions: [...repetitions], medians: mediansOf(repetitions) } : last;
      if (run.medians) {
        const m = run.medians;
        log(`bench: N=${n}: medians of ${m.runs}: create ${m.create.median} (${m.create.min}-${m.create.max}), scale ${m.scale.median} (${m.scale.min}-${m.scale.max}), ` +
          `kube-apiserver CPU ${m.apiserverCpu.median} (${m.apiserverCpu.min}-${m.apiserverCpu.max})`);
      }
      // Written after each repetition: a later one that fails keeps the finished ones.
      runs[at] = run;
      const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, kubernetes };
      const results = writeResults(root, { date: new Date().toISOString(), machine, runs });
      if (n === s.ns.at(-1) && rep === s.repeat) process.stdout.write(`${table(results)}\n`);
    }
  }
}

/** One run of N: the floor, the operator and (--go) the Go operator, each on its own fresh control plane. */
async function benchRun(n: number, s: Settings, how: Pick<BenchRun, 'command' | 'commit' | 'settings'>, goBinary: string | undefined): Promise<BenchRun> {
  const date = new Date().toISOString();
  const start = loadAverage();
  const f = await floor(n, s);
  log(`bench: floor N=${n}: create ${f.createSeconds} s (all sent after ${f.sentSeconds?.create} s), scale ${f.scaleSeconds} s (sent after ${f.sentSeconds?.scale} s), rollout ${f.rolloutSeconds ?? '-'} s`);
  const c = s.crFloor ? await crFloor(n, s) : undefined;
  if (c) log(`bench: CR floor N=${n}: create ${c.createSeconds} s (all sent after ${c.sentSeconds?.create} s), scale ${c.scaleSeconds} s (sent after ${c.sentSeconds?.scale} s)`);
  const o = await operator(n, s);
  log(`bench: operator N=${n}: create ${o.createSeconds} s (all sent after ${o.sentSeconds?.create} s), scale ${o.scaleSeconds} s (sent after ${o.sentSeconds?.scale} s), rollout ${o.rollout?.seconds ?? '-'} s`);
  const g = goBinary ? await goOperatorRun(n, s, goBinary) : undefined;
  // --unrelated: the operator's run again (no rollout), on a control plane full of objects not its own.
  const u = s.unrelated > 0 ? await operator(n, { ...s, rollout: false }, s.unrelated) : undefined;
  if (u) log(`bench: operator N=${n} with ${s.unrelated} unrelated: start ${u.startSeconds} s, create ${u.createSeconds} s, scale ${u.scaleSeconds} s, RSS idle ${u.rssMiB.idle} / peak ${u.rssMiB.peak} MiB`);
  if (g) log(`bench: Go operator N=${n}: create ${g.createSeconds} s, scale ${g.scaleSeconds} s`);
  const allCpu = (run: { cpuSecondsByProcess?: Record<string, number> }) =>
    run.cpuSecondsByProcess?.total && f.cpuSecondsByProcess?.total ? ratioOf(run.cpuSecondsByProcess.total, f.cpuSecondsByProcess.total) : undefined;
  const ratios = {
    create: ratioOf(o.createSeconds, f.createSeconds), scale: ratioOf(o.scaleSeconds, f.scaleSeconds),
    rollout: o.rollout && f.rolloutSeconds ? ratioOf(o.rollout.seconds, f.rolloutSeconds) : undefined,
    apiserverCpu: ratioOf(o.apiserverCpuSeconds, f.apiserverCpuSeconds),
    allCpu: allCpu(o),
    ...(g ? { go: { create: ratioOf(g.createSeconds, f.createSeconds), scale: ratioOf(g.scaleSeconds, f.scaleSeconds), apiserverCpu: ratioOf(g.apiserverCpuSeconds, f.apiserverCpuSeconds), allCpu: allCpu(g) } } : {}),
    ...(u ? { unrelated: unrelatedRatios(u, o) } : {}),
    ...(c ? {
      crFloor: {
        create: ratioOf(o.createSeconds, c.createSeconds), scale: ratioOf(o.scaleSeconds, c.scaleSeconds),
        apiserverCpu: ratioOf(o.apiserverCpuSeconds, c.apiserverCpuSeconds),
        allCpu: o.cpuSecondsByProcess?.total && c.cpuSecondsByProcess?.total ? ratioOf(o.cpuSecondsByProcess.total, c.cpuSecondsByProcess.total) : undefined,
      },
    } : {}),
  };
  log(`bench: N=${n}: ratios create ${ratios.create}, scale ${ratios.scale}, kube-apiserver CPU ${ratios.apiserverCpu}, all processes' CPU ${ratios.allCpu}`);
  if (ratios.crFloor) log(`bench: N=${n}: operator / CR floor: create ${ratios.crFloor.create}, scale ${ratios.crFloor.scale}, kube-apiserver CPU ${ratios.crFloor.apiserverCpu}, all processes' CPU ${ratios.crFloor.allCpu}`);
  log(`bench: N=${n}: CPU seconds over create and scale, floor ${JSON.stringify(f.cpuSecondsByProcess)}, operator ${JSON.stringify(o.cpuSecondsByProcess)}`);
  return { n, date, ...how, loadAverage: { start, after: loadAverage() }, floor: f, ...(c ? { crFloor: c } : {}), operator: o, ...(g ? { goOperator: g } : {}), ...(u ? { withUnrelated: u } : {}), ratios };
}

main().catch((e: unknown) => {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
