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
// The phases are floor.ts, cr-floor.ts, operator-run.ts and go-run.ts (what they share: phase.ts); the options, cli.ts.
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { DEFAULT_STATUS_INTERVAL_MS, DEFAULT_WORKERS } from 'appkind-operator/settings';
import { args, type Settings } from './cli.js';
import { crFloor } from './cr-floor.js';
import { floor, kubernetes } from './floor.js';
import { goOperatorBinary } from './go-operator.js';
import { goOperatorRun } from './go-run.js';
import { buildOperator } from './operator-setup.js';
import { operator } from './operator-run.js';
import { log, ROLLOUT_IMAGE, root, settingsEnv } from './phase.js';
import { mediansOf, ratioOf, repetitionOf, table, writeResults } from './report.js';
import type { BenchRun, BenchSettings, OperatorRun, Repetition } from './results.js';

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
      const results = writeResults(root, { date: new Date().toISOString(), machine, runs }, { waves: !!s.waves });
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
