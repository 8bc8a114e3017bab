// The operator's run: the compiled operator as its own process under its ServiceAccount, on a fresh
// control plane: create and scale, edit latency, steady state, restart, the kind-settings rollout and
// (--unrelated) the same with objects of no CR around it.
import { type V1Deployment } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { RestClient } from 'appkind-operator/runtime';
import { DEFAULT_STATUS_INTERVAL_MS } from 'appkind-operator/settings';
import { ControlPlane } from '../tools/controlplane/controlplane.js';
import { httpGet, waitFor } from '../tools/controlplane/readiness.js';
import type { Settings } from './cli.js';
import { kind, NS, OPERATOR_MAIN, setUpOperator } from './operator-setup.js';
import {
  CR_API, createThenScale, crConverged, deploymentRolledOut, log, machineCpu, metricSum, OPERATOR_USER, patchSize, pool, range, requests,
  ROLLOUT_IMAGE, rolloutKindOf, root, seconds, settingsEnv, startControlPlane, statusPatchesPerCr, sum, timedRestart, writesBesidesLeases,
  type Resource,
} from './phase.js';
import { cpuMeter, memoryMiB } from './proc.js';
import { ApiserverRecorder } from './profile.js';
import { isWrite, writesPerApp } from './report.js';
import type { OperatorRun } from './results.js';
import { Tracker } from './tracker.js';

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

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 10) / 10;
}

export async function operator(n: number, s: Settings, unrelated = 0): Promise<OperatorRun> {
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
 * The most a metric of the operator's /metrics (summed over its label sets, those `pick` keeps) showed,
 * once a second until stop() (one GET a second: nothing the API server sees).
 */
function sampleMetric(port: number, name: string, pick: (line: string) => boolean = () => true): { stop: () => Promise<number> } {
  let most = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const body = (await httpGet(`http://127.0.0.1:${port}/metrics`).catch(() => ({ body: '' }))).body;
      most = Math.max(most, metricSum(body.split('\n').filter(pick).join('\n'), name));
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  return { stop: async () => ((running = false), await loop, most) };
}

/**
 * Where the operator's time went over create and scale, from its /metrics: its reconciles and their
 * mean time (mostly waiting on the API server: its CPU is the busy share), the mean wait of a key in
 * the work queue before a worker took it, and the most keys queued at once (sampled).
 */
export function queueOf(body: string, mostQueued: number): NonNullable<OperatorRun['queue']> {
  return { ...queueBetween('', body), mostQueued };
}

/** The same between two reads of /metrics (`before` empty: since start), for one phase. */
export function queueBetween(before: string, after: string): Omit<NonNullable<OperatorRun['queue']>, 'mostQueued'> {
  const delta = (name: string) => metricSum(after, name) - (before ? metricSum(before, name) : 0);
  const mean = (name: string) => {
    const count = delta(`${name}_count`);
    return count > 0 ? Math.round((delta(`${name}_sum`) / count) * 1000 * 100) / 100 : 0;
  };
  return {
    reconciles: delta('controller_runtime_reconcile_time_seconds_count'),
    reconcileMsMean: mean('controller_runtime_reconcile_time_seconds'),
    queueWaitMsMean: mean('workqueue_queue_duration_seconds'),
  };
}

/**
 * The most Deployments rolling at once, counted from their own status as the watch shows them (every
 * 200 ms): at the rollout image and not yet every replica updated and ready.
 */
function sampleRolling(deployments: Tracker<V1Deployment>): { stop: () => number } {
  let most = 0;
  const rolling = (d: V1Deployment) => d.spec?.template.spec?.containers[0]?.image === ROLLOUT_IMAGE && !deploymentRolledOut(d);
  const timer = setInterval(() => {
    most = Math.max(most, deployments.list().filter(rolling).length);
  }, 200);
  return { stop: () => (clearInterval(timer), most) };
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
    const { rest, port, env } = await setUpOperator(cp, s.rollout ? [ROLLOUT_IMAGE] : []);
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

      const queued = sampleMetric(port, 'workqueue_depth');
      const { tCreateIso, tScaleIso, tScaledIso, createSeconds, scaleSeconds, sentSeconds } = await createThenScale('operator', n, s, rest, crs, recorder);
      const apiserverCpuSeconds = apiserverCpu();
      const cpuSeconds = operatorCpu();
      const cpuSecondsByProcess = allCpu();
      const queue = queueOf(await metrics(), await queued.stop());
      log(`bench: operator N=${n}: ${queue.reconciles} reconciles over create and scale, ${queue.reconcileMsMean} ms each on average, ${queue.queueWaitMsMean} ms in the queue before it, at most ${queue.mostQueued} keys queued`);

      // The edits' watch on Deployments starts only now: during create and scale the bench watches one
      // resource in either run (the floor's Deployments, the operator's CRs), so the operator's figures
      // carry no watch of the bench's own that the floor's lack.
      const deployments = new Tracker<V1Deployment>(rest, { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespace: NS });
      await deployments.start();
      await recorder?.mark('edits');
      log(`bench: operator N=${n}: ${Math.min(s.edits, n)} edits, one at a time`);
      const tEditsIso = at();
      const beforeEdits = await metrics();
      const latencies: number[] = [];
      for (const i of range(Math.min(s.edits, n))) {
        const name = `app-${i}-deployment`;
        const seen = deployments.next((d) => d.metadata?.name === name && d.spec?.replicas === s.size);
        await patchSize(rest, i, s.size);
        const answered = performance.now();
        latencies.push(Math.max(0, (await seen) - answered));
      }
      latencies.sort((a, b) => a - b);
      // Whether an edit waited for a worker (the queue) or on the API server (the reconcile's own time).
      const editsQueue = queueBetween(beforeEdits, await metrics());
      log(`bench: operator N=${n}: over the edits ${editsQueue.reconciles} reconciles, ${editsQueue.reconcileMsMean} ms each on average, ${editsQueue.queueWaitMsMean} ms in the queue before it`);

      const statusIntervalMs = Number(settingsEnv.APPKIND_STATUS_INTERVAL_MS || DEFAULT_STATUS_INTERVAL_MS);
      const settleMs = Math.max(15_000, statusIntervalMs + 5_000);
      log(`bench: operator N=${n}: ${settleMs / 1000} s to settle, then ${s.steadySeconds} s of steady state`);
      await crs.waitFor(`operator: ${n} CRs converged after the edits`, n, (r) => crConverged(r.spec?.size ?? 0)(r), 600_000);
      await new Promise((r) => setTimeout(r, settleMs));
      const reconciles = async () => metricSum(await metrics(), 'controller_runtime_reconcile_total');
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
        const inFlight = s.waves ? sampleMetric(port, 'appkind_kind_rollout_apps', (l) => l.includes('state="in_flight"')) : undefined;
        const rolling = sampleRolling(deployments);
        const rolloutCpu = cpuMeter(op.pid);
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
          mostRolling: rolling.stop(),
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
        queue,
        editsQueue,
        editLatencyMs: { count: latencies.length, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: percentile(latencies, 100) },
        requests: { create, scale, ...(rollout ? { rollout: rolloutRequests } : {}) },
        writesPerApp: {
          create: writesPerApp(audit, n, tCreateIso, tScaleIso),
          scale: writesPerApp(audit, n, tScaleIso, tScaledIso),
          ...(rollout ? { rollout: writesPerApp(audit, n, tRolloutIso, tRolloutEndIso) } : {}),
        },
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
