// The benchmark's figures made from its results: medians, writes per app, bench/results.json and the tables of docs/benchmark.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditEvent } from '../tools/controlplane/audit.js';
import { charts } from './charts.js';
import type { BenchResults, BenchRun, FloorRun, RatioMedians, Repetition, RequestCounts, Restart, Spread, WritesPerApp } from './results.js';

/**
 * Writes to the API server per app between two instants, by every client (the bench, the operator,
 * kube-controller-manager, kube-scheduler, kwok, the API server itself): what the control plane had
 * to do for a phase, a count the machine's load does not change. Lease renewals are left out: they
 * are heartbeats on a clock, not work per app.
 */
export function writesPerApp(audit: readonly AuditEvent[], n: number, from: string, to: string): number {
  const [t0, t1] = [Date.parse(from), Date.parse(to)]; // as instants: the audit log's microseconds and ISO milliseconds do not compare as strings
  const count = audit.filter((e) => {
    const t = Date.parse(e.stageTimestamp);
    return t >= t0 && t < t1 && WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== 'leases';
  }).length;
  return ratioOf(count, n);
}

/** a / b to two decimals: every ratio and per-CR figure of the bench. */
export const ratioOf = (a: number, b: number) => Math.round((a / b) * 100) / 100;

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
/** Whether a `verb resource` key of RequestCounts is a write. */
export const isWrite = (what: string) => WRITE_VERBS.has(what.split(' ', 1)[0]!);

export function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return Math.round((v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2) * 100) / 100;
}

function spread(values: number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** One repetition's summary, kept beside the last repetition's full figures. */
export function repetitionOf(run: BenchRun): Repetition {
  const { floor: f, crFloor: c, operator: o, goOperator: g, withUnrelated: u } = run;
  const rss = (r: { readonly idle: number; readonly peak: number }) => ({ idle: r.idle, peak: r.peak });
  return {
    date: run.date,
    loadAverage: run.loadAverage,
    floor: { createSeconds: f.createSeconds, scaleSeconds: f.scaleSeconds, rolloutSeconds: f.rolloutSeconds, apiserverCpuSeconds: f.apiserverCpuSeconds },
    operator: {
      createSeconds: o.createSeconds, scaleSeconds: o.scaleSeconds, rolloutSeconds: o.rollout?.seconds, apiserverCpuSeconds: o.apiserverCpuSeconds,
      cpuSeconds: o.cpuSeconds, editP99Ms: o.editLatencyMs.p99, statusPatchesPerCrScaled: o.statusPatchesPerCr.scale,
      steadyState: { writes: o.steadyState.writes, reconciles: o.steadyState.reconciles },
      rssMiB: rss(o.rssMiB), ...(o.restart ? { restart: o.restart } : {}),
    },
    ...(c ? { crFloor: { createSeconds: c.createSeconds, scaleSeconds: c.scaleSeconds, apiserverCpuSeconds: c.apiserverCpuSeconds } } : {}),
    ...(g ? {
      goOperator: {
        createSeconds: g.createSeconds, scaleSeconds: g.scaleSeconds, apiserverCpuSeconds: g.apiserverCpuSeconds,
        rssMiB: rss(g.rssMiB), ...(g.restart ? { restart: g.restart } : {}),
      },
    } : {}),
    ...(u ? { withUnrelated: { startSeconds: u.startSeconds, rssMiB: rss(u.rssMiB), cpuSeconds: u.cpuSeconds, editP99Ms: u.editLatencyMs.p99 } } : {}),
    ratios: run.ratios,
  };
}

/** Medians (and ranges) of the repetitions' ratios; a ratio some repetition lacks has none. */
export function mediansOf(reps: Repetition[]): RatioMedians {
  const of = (pick: (r: BenchRun['ratios']) => number | undefined) => {
    const values = reps.map((r) => pick(r.ratios)).filter((v): v is number => v !== undefined);
    return values.length === reps.length ? spread(values) : undefined;
  };
  const optional = <K extends string>(key: K, value: Spread | undefined) => (value ? { [key]: value } as Record<K, Spread> : {});
  const goCreate = of((r) => r.go?.create);
  const crCreate = of((r) => r.crFloor?.create);
  const unrelatedStart = of((r) => r.unrelated?.start);
  return {
    runs: reps.length,
    create: of((r) => r.create)!, scale: of((r) => r.scale)!, apiserverCpu: of((r) => r.apiserverCpu)!,
    ...optional('allCpu', of((r) => r.allCpu)),
    ...optional('rollout', of((r) => r.rollout)),
    ...(goCreate ? { go: { create: goCreate, scale: of((r) => r.go?.scale)!, apiserverCpu: of((r) => r.go?.apiserverCpu)!, ...optional('allCpu', of((r) => r.go?.allCpu)) } } : {}),
    ...(crCreate ? {
      crFloor: {
        create: crCreate, scale: of((r) => r.crFloor?.scale)!, apiserverCpu: of((r) => r.crFloor?.apiserverCpu)!,
        ...optional('allCpu', of((r) => r.crFloor?.allCpu)),
      },
    } : {}),
    ...(unrelatedStart ? {
      unrelated: {
        start: unrelatedStart, rssIdle: of((r) => r.unrelated?.rssIdle)!, rssPeak: of((r) => r.unrelated?.rssPeak)!,
        cpu: of((r) => r.unrelated?.cpu)!, editP99: of((r) => r.unrelated?.editP99)!,
      },
    } : {}),
  };
}

const writes = (counts: RequestCounts) => Object.entries(counts).filter(([w]) => isWrite(w)).reduce((s, [, n]) => s + n, 0);
const reads = (counts: RequestCounts) => Object.entries(counts).filter(([w]) => /^(get|list) /.test(w)).reduce((s, [, n]) => s + n, 0);
const perCr = (count: number, n: number) => (count / n).toFixed(2);

const dash = (v: number | string | undefined, unit = '') => (v === undefined ? '-' : `${v}${unit}`);

type RatioName = 'create' | 'scale' | 'rollout' | 'apiserverCpu' | 'allCpu';

/** A ratio in bold: the median and range over the repetitions when there are some, else the run's own. */
const spreadCell = (spread: Spread | undefined, single: number | undefined) =>
  (spread ? `**${spread.median}** (${spread.min}-${spread.max})` : `**${dash(single)}**`);

/** A ratio in the tables: the run's own, or with --repeat the median and range over the repetitions. */
function ratioCell(run: BenchRun, name: RatioName, go = false): string {
  const goName = name === 'rollout' ? undefined : name;
  const spread = go ? (goName ? run.medians?.go?.[goName] : undefined) : run.medians?.[name];
  const single = go ? (goName ? run.ratios.go?.[goName] : undefined) : run.ratios[name];
  return spreadCell(run.medians ? spread : undefined, single);
}

/** Status patches (`patch <plural>/status`) per CR in one phase's request counts. */
const statusPatches = (counts: RequestCounts, n: number) =>
  ratioOf(Object.entries(counts).filter(([what]) => what.startsWith('patch ') && what.endsWith('/status')).reduce((t, [, c]) => t + c, 0), n);

/** Seconds in the tables: the run's own, or with --repeat the median over the repetitions. */
function secs(run: BenchRun, pick: (p: Repetition) => number | undefined): string {
  const values = (run.repetitions ?? [repetitionOf(run)]).map(pick).filter((v): v is number => v !== undefined);
  return values.length ? `${median(values)} s` : '-';
}

/** A table's header row and the separator row markdown needs under it, one `---` per column. */
const head = (header: string) => [header, `|${'---|'.repeat(header.split(' | ').length)}`];

/** A table after another: a blank line, the sentence that says what it holds, a blank line, its header. */
const section = (intro: string, header: string) => ['', intro, '', ...head(header)];

/** docs/benchmark.md's tables: time against the floor, then cost, one row per N; then how each row was run. */
export function table(r: BenchResults): string {
  const lines = [
    `${r.machine.cpus} cores (${r.machine.cpuModel}), ${r.machine.memoryGiB} GiB, Node ${r.machine.node}, Kubernetes ${r.machine.kubernetes}; the machine is shared ` +
      '(load averages per row below). Each row is one run: floor and operator one after the other, each on a fresh control plane.',
    '',
    ...head('| N | create: floor / operator | ratio | scale +1: floor / operator | ratio | new default image, operator restarted: floor / operator | ratio | edit latency p50 / p90 / p99 (max) | status patches per CR, create / scale / rollout | steady state: writes / reconciles |'),
  ];
  for (const run of r.runs) {
    const { operator: o } = run;
    const e = o.editLatencyMs;
    lines.push(`| ${run.n} | ${secs(run, (p) => p.floor.createSeconds)} / ${secs(run, (p) => p.operator.createSeconds)} | ${ratioCell(run, 'create')} | ` +
      `${secs(run, (p) => p.floor.scaleSeconds)} / ${secs(run, (p) => p.operator.scaleSeconds)} | ${ratioCell(run, 'scale')} | ` +
      `${secs(run, (p) => p.floor.rolloutSeconds)} / ${secs(run, (p) => p.operator.rolloutSeconds)} | ${ratioCell(run, 'rollout')} | ` +
      `${e.p50} / ${e.p90} / ${e.p99} ms (${e.max}) | ${o.statusPatchesPerCr.create} / ${o.statusPatchesPerCr.scale} / ${dash(o.statusPatchesPerCr.rollout)} | ${o.steadyState.writes} / ${o.steadyState.reconciles} in ${o.steadyState.seconds} s |`);
  }
  lines.push(
    '',
    ...head('| N | kube-apiserver CPU: floor / operator | ratio | operator CPU (create + scale; whole run) | operator RSS idle / peak (heap in use after) | writes per CR created: floor / operator | reads (get, list) per CR created: operator | writes per CR scaled: floor / operator |'),
  );
  for (const run of r.runs) {
    const { floor: f, operator: o, n } = run;
    lines.push(`| ${n} | ${secs(run, (p) => p.floor.apiserverCpuSeconds)} / ${secs(run, (p) => p.operator.apiserverCpuSeconds)} | ${ratioCell(run, 'apiserverCpu')} | ${o.cpuSeconds} s; ${o.cpuTotalSeconds} s | ${o.rssMiB.idle} / ${o.rssMiB.peak} MiB (${dash(o.heapUsedMiB, ' MiB')}) | ` +
      `${perCr(writes(f.requests.create), n)} / ${perCr(writes(o.requests.create), n)} | ${perCr(reads(o.requests.create), n)} | ${perCr(writes(f.requests.scale), n)} / ${perCr(writes(o.requests.scale), n)} |`);
  }
  const restarts = r.runs.filter((run) => run.operator.restart);
  if (restarts.length > 0) {
    lines.push(...section(
      'Start and restart (the last repetition of a row): from the process\'s spawn until its caches are synced and every CR was checked ' +
        '(`controller_runtime_reconcile_total` >= N, work queue empty), on the N converged CRs, and the writes it made meanwhile (Leases left out):',
      '| N | start on an empty cluster: operator | restart on N converged CRs: operator / Go | ratio | writes during the restart: operator / Go |',
    ));
    for (const run of restarts) {
      const o = run.operator.restart!;
      const g = run.goOperator?.restart;
      lines.push(`| ${run.n} | ${dash(run.operator.startSeconds, ' s')} | ${o.seconds} s / ${dash(g?.seconds, ' s')} | **${g ? ratioOf(o.seconds, g.seconds) : '-'}** | ${o.writes} / ${dash(g?.writes)} |`);
    }
  }
  const withCpu = r.runs.filter((run) => run.floor.cpuSecondsByProcess && run.operator.cpuSecondsByProcess);
  if (withCpu.length > 0) {
    const names = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok', 'operator', 'bench'];
    lines.push(...section(
      `Where the CPU went over create and scale, every process of the run (the last repetition of a row; cores busy: their total over the wall time of ${r.machine.cpus} cores):`,
      `| N | run | create + scale | cores busy | ${names.join(' | ')} | total | ratio | the bench's last request answered after: create / scale |`,
    ));
    for (const run of withCpu) {
      const row = (who: string, wall: number, cpu: Record<string, number>, ratio: string, sent?: { create: number; scale: number }) =>
        lines.push(`| ${run.n} | ${who} | ${Math.round(wall * 10) / 10} s | ${Math.round((cpu.total ?? 0) / wall / r.machine.cpus * 100)}% | ` +
          `${names.map((k) => (cpu[k] === undefined ? '-' : `${cpu[k]} s`)).join(' | ')} | ${cpu.total} s | ${ratio} | ${sent ? `${sent.create} s / ${sent.scale} s` : '-'} |`);
      const { floor: f, operator: o, goOperator: g } = run;
      row('floor', f.createSeconds + f.scaleSeconds, f.cpuSecondsByProcess!, '1', f.sentSeconds);
      row('operator', o.createSeconds + o.scaleSeconds, o.cpuSecondsByProcess!, ratioCell(run, 'allCpu'), o.sentSeconds);
      if (g?.cpuSecondsByProcess) row('Go operator', g.createSeconds + g.scaleSeconds, g.cpuSecondsByProcess, ratioCell(run, 'allCpu', true));
    }
  }
  const withBusy = r.runs.filter((run) => run.operator.cpuSecondsByProcess);
  if (withBusy.length > 0) {
    lines.push(...section(
      'Where the operator\'s time went over create and scale (the last repetition of a row): busy is its CPU over the wall time, of one core; ' +
        'the rest it waits on the API server. From its /metrics, where recorded: its reconciles, their mean time, the mean wait of a key in the work queue before a worker took it, and the most keys queued at once (sampled each second).',
      '| N | create + scale, wall | operator CPU | operator busy (of one core) | kube-apiserver CPU | every process, cores busy | CPU per app and phase: operator / kube-apiserver | reconciles | mean reconcile | mean wait in the queue | most keys queued |',
    ));
    for (const run of withBusy) {
      const o = run.operator;
      const wall = o.createSeconds + o.scaleSeconds;
      const q = o.queue;
      const perPhase = (cpu: number) => `${Math.round((cpu * 1000) / (2 * run.n) * 10) / 10} ms`;
      lines.push(`| ${run.n} | ${Math.round(wall * 10) / 10} s | ${o.cpuSeconds} s | ${Math.round((o.cpuSeconds / wall) * 100)}% | ${o.apiserverCpuSeconds} s | ` +
        `${Math.round(((o.cpuSecondsByProcess!.total ?? 0) / wall) * 100) / 100} of ${r.machine.cpus} | ${perPhase(o.cpuSeconds)} / ${perPhase(o.apiserverCpuSeconds)} | ` +
        `${dash(q?.reconciles)} | ${dash(q?.reconcileMsMean, ' ms')} | ${dash(q?.queueWaitMsMean, ' ms')} | ${dash(q?.mostQueued)} |`);
    }
  }
  const withWrites = r.runs.filter((run) => run.floor.writesPerApp && run.operator.writesPerApp);
  if (withWrites.length > 0) {
    lines.push(...section(
      'Writes to the API server per app, by every client (the bench, the operator, kube-controller-manager, kube-scheduler, kwok, the API server; Lease renewals left out), from the audit log of the last repetition of a row. ' +
        'A count the load does not change. With the cores saturated, time follows the total work; beside the floor\'s writes, a CR-based operator adds at least two per app in each phase: the CR\'s own create or edit, and one status write.',
      '| N | run | create | ratio | scale +1 | ratio |',
    ));
    for (const run of withWrites) {
      const f = run.floor.writesPerApp!;
      const row = (who: string, w: WritesPerApp) => lines.push(`| ${run.n} | ${who} | ${w.create} | ${ratioOf(w.create, f.create)} | ${w.scale} | ${ratioOf(w.scale, f.scale)} |`);
      row('floor', f);
      row('operator', run.operator.writesPerApp!);
      if (run.goOperator?.writesPerApp) row('Go operator', run.goOperator.writesPerApp);
    }
  }
  const withGo = r.runs.filter((run) => run.goOperator && run.ratios.go);
  if (withGo.length > 0) {
    lines.push(...section(
      'Beside a controller-runtime (Go) operator (`--go`, [bench/go-operator](../bench/go-operator/), 4 workers, the same objects and status), each ratio against the floor of the same run:',
      '| N | create: ours / Go (ratios to floor) | scale +1: ours / Go (ratios to floor) | kube-apiserver CPU: ours / Go (ratios to floor) | operator CPU (create + scale): ours / Go | RSS peak: ours / Go | writes per CR created: ours / Go | status patches per CR, create / scale |',
    ));
    for (const run of withGo) {
      const { operator: o, goOperator: g, n } = run;
      const goSecs = (pick: (p: NonNullable<Repetition['goOperator']>) => number) => secs(run, (p) => (p.goOperator ? pick(p.goOperator) : undefined));
      lines.push(`| ${n} | ${secs(run, (p) => p.operator.createSeconds)} / ${goSecs((p) => p.createSeconds)} (${ratioCell(run, 'create')} / ${ratioCell(run, 'create', true)}) | ` +
        `${secs(run, (p) => p.operator.scaleSeconds)} / ${goSecs((p) => p.scaleSeconds)} (${ratioCell(run, 'scale')} / ${ratioCell(run, 'scale', true)}) | ` +
        `${secs(run, (p) => p.operator.apiserverCpuSeconds)} / ${goSecs((p) => p.apiserverCpuSeconds)} (${ratioCell(run, 'apiserverCpu')} / ${ratioCell(run, 'apiserverCpu', true)}) | ` +
        `${o.cpuSeconds} s / ${g!.cpuSeconds} s | ${o.rssMiB.peak} / ${g!.rssMiB.peak} MiB | ` +
        `${perCr(writes(o.requests.create), n)} / ${perCr(writes(g!.requests.create), n)} | ${o.statusPatchesPerCr.create} / ${o.statusPatchesPerCr.scale} (ours); ${g!.statusPatchesPerCr.create} / ${g!.statusPatchesPerCr.scale} (Go) |`);
    }
  }
  const repeated = r.runs.filter((run) => (run.repetitions?.length ?? 0) > 1);
  if (repeated.length > 0) {
    lines.push(...section(
      'Repetitions (`--repeat K`), in the order run; each ratio divides by the floor of its own repetition:',
      '| N | repetition (UTC) | load before | create: floor / operator (ratio) | scale +1 (ratio) | new default image (ratio) | kube-apiserver CPU (ratio) | all processes\' CPU, ratio | operator CPU, create + scale | edit p99 | steady state: writes / reconciles | Go: create / scale / kube-apiserver CPU ratios |',
    ));
    for (const run of repeated) {
      for (const p of run.repetitions!) {
        const { floor: f, operator: o, ratios: q } = p;
        lines.push(`| ${run.n} | ${p.date.slice(0, 16).replace('T', ' ')} | ${p.loadAverage.start[0]} | ${f.createSeconds} / ${o.createSeconds} s (${q.create}) | ` +
          `${f.scaleSeconds} / ${o.scaleSeconds} s (${q.scale}) | ${dash(f.rolloutSeconds)} / ${dash(o.rolloutSeconds, ' s')} (${dash(q.rollout)}) | ` +
          `${f.apiserverCpuSeconds} / ${o.apiserverCpuSeconds} s (${q.apiserverCpu}) | ${dash(q.allCpu)} | ${o.cpuSeconds} s | ${o.editP99Ms} ms | ${o.steadyState ? `${o.steadyState.writes} / ${o.steadyState.reconciles}` : '-'} | ${q.go ? `${q.go.create} / ${q.go.scale} / ${q.go.apiserverCpu}` : '-'} |`);
      }
    }
  }
  const repeated25 = repeated.filter((run) => run.repetitions!.some((p) => p.ratios.crFloor || p.operator.rssMiB || p.ratios.unrelated));
  if (repeated25.length > 0) {
    lines.push(...section(
      'The same repetitions against the CR floor, with memory, restart and the unrelated-objects run:',
      '| N | repetition (UTC) | operator / CR floor: create / scale / kube-apiserver CPU / all CPU | RSS idle / peak: operator; Go | restart on N converged CRs: operator / Go (writes) | with unrelated objects: start / RSS idle / RSS peak / CPU / edit p99 ratios |',
    ));
    for (const run of repeated25) {
      for (const p of run.repetitions!) {
        const c = p.ratios.crFloor;
        const u = p.ratios.unrelated;
        const [o, g] = [p.operator, p.goOperator];
        const rss = (x?: { idle: number; peak: number }) => (x ? `${x.idle} / ${x.peak} MiB` : '-');
        const restart = (x?: Restart) => (x ? `${x.seconds} s (${x.writes})` : '-');
        lines.push(`| ${run.n} | ${p.date.slice(0, 16).replace('T', ' ')} | ${c ? `${c.create} / ${c.scale} / ${c.apiserverCpu} / ${dash(c.allCpu)}` : '-'} | ` +
          `${rss(o.rssMiB)}; ${rss(g?.rssMiB)} | ${restart(o.restart)} / ${restart(g?.restart)} | ${u ? `${u.start} / ${u.rssIdle} / ${u.rssPeak} / ${u.cpu} / ${u.editP99}` : '-'} |`);
      }
    }
  }
  const withCrFloor = r.runs.filter((run) => run.crFloor && run.ratios.crFloor);
  if (withCrFloor.length) {
    lines.push(...section(
      'Against the **CR floor** (a plain client on its own fresh control plane creating the CRs, applying render()\'s children with the operator\'s ownerReference and patching each CR\'s status once per phase with computeStatus\'s result as soon as its Deployment is ready): operator / CR floor beside operator / floor, same run; and the writes per app by every client:',
      '| N | create: CR floor / operator | ratio (raw floor) | scale +1: CR floor / operator | ratio (raw floor) | kube-apiserver CPU: CR floor / operator | ratio (raw floor) | all processes\' CPU ratio (raw floor) | writes per app created: floor / CR floor / operator | scaled: floor / CR floor / operator | CR floor\'s status patches per CR, create / scale |',
    ));
    for (const run of withCrFloor) {
      const c = run.crFloor!;
      const o = run.operator;
      const q = run.ratios.crFloor!;
      const m = run.medians?.crFloor;
      const w = (x: FloorRun, p: 'create' | 'scale') => x.writesPerApp?.[p] ?? '-';
      // With --repeat: medians of the repetitions (times and ratios, the raw floor's in brackets); the writes are the last repetition's.
      const raw = (name: RatioName) => (run.medians?.[name]?.median ?? run.ratios[name] ?? '-');
      const cr = (pick: (x: NonNullable<Repetition['crFloor']>) => number) => secs(run, (p) => (p.crFloor ? pick(p.crFloor) : undefined));
      lines.push(`| ${run.n} | ${cr((x) => x.createSeconds)} / ${secs(run, (p) => p.operator.createSeconds)} | ${spreadCell(m?.create, q.create)} (${raw('create')}) | ` +
        `${cr((x) => x.scaleSeconds)} / ${secs(run, (p) => p.operator.scaleSeconds)} | ${spreadCell(m?.scale, q.scale)} (${raw('scale')}) | ` +
        `${cr((x) => x.apiserverCpuSeconds)} / ${secs(run, (p) => p.operator.apiserverCpuSeconds)} | ${spreadCell(m?.apiserverCpu, q.apiserverCpu)} (${raw('apiserverCpu')}) | ${spreadCell(m?.allCpu, q.allCpu)} (${raw('allCpu')}) | ` +
        `${w(run.floor, 'create')} / ${w(c, 'create')} / ${w(o, 'create')} | ${w(run.floor, 'scale')} / ${w(c, 'scale')} / ${w(o, 'scale')} | ` +
        `${statusPatches(c.requests.create, run.n)} / ${statusPatches(c.requests.scale, run.n)} |`);
    }
  }
  const withUnrelated = r.runs.filter((run) => run.withUnrelated && run.ratios.unrelated);
  if (withUnrelated.length) {
    lines.push(...section(
      'The operator in a cluster full of other objects (`--unrelated K`): its run again on a fresh control plane that holds K Deployments and K Services of no CR in other namespaces, created before it starts (ratio: with / without them, same code and N):',
      '| N | unrelated objects | start (spawn to ready) | RSS idle | RSS peak | operator CPU (create + scale) | edit latency p50 / p99 | create / scale |',
    ));
    for (const run of withUnrelated) {
      const o = run.operator;
      const u = run.withUnrelated!;
      const q = run.ratios.unrelated!;
      const m = run.medians?.unrelated; // with --repeat: each ratio's median (range); the figures beside it are the last repetition's
      lines.push(`| ${run.n} | ${u.unrelated?.count ?? '-'} Deployments + Services | ${o.startSeconds ?? '-'} s / ${u.startSeconds ?? '-'} s (${spreadCell(m?.start, q.start)}) | ` +
        `${o.rssMiB.idle} / ${u.rssMiB.idle} MiB (${spreadCell(m?.rssIdle, q.rssIdle)}) | ${o.rssMiB.peak} / ${u.rssMiB.peak} MiB (${spreadCell(m?.rssPeak, q.rssPeak)}) | ` +
        `${o.cpuSeconds} s / ${u.cpuSeconds} s (${spreadCell(m?.cpu, q.cpu)}) | ` +
        `${o.editLatencyMs.p50} / ${o.editLatencyMs.p99} ms; ${u.editLatencyMs.p50} / ${u.editLatencyMs.p99} ms (**${q.editP50}** / ${spreadCell(m?.editP99, q.editP99)}) | ${q.create} / ${q.scale} |`);
    }
  }
  const waves = r.wavesRuns ?? [];
  if (waves.length > 0) {
    lines.push(...section(
      'A kind-wide image change in waves (`--waves`): the rollout phase with the kind\'s `rollout.maxConcurrent`; the floor ' +
        'applies every new Deployment at once. The most Deployments rolling at once is counted from their status (at the new image, ' +
        'not every replica updated and ready; sampled every 200 ms), beside the most in flight the operator\'s `/metrics` showed. ' +
        'Create and scale of the same run against the floors, to show the waves cost the other phases nothing:',
      '| N | maxConcurrent | roll all: floor (at once) / operator (waves) | most Deployments rolling at once (status) / in flight (operator metrics) | writes per app in the rollout, every client: floor / operator | operator status patches per CR in the rollout | create / scale: operator / floor (/ CR floor) | steady state: writes / reconciles | run (UTC), code, load average before / after |',
    ));
    for (const run of waves) {
      const o = run.operator;
      const ro = o.rollout;
      const q = run.ratios;
      lines.push(`| ${run.n} | ${dash(ro?.maxConcurrent)} | ${dash(run.floor.rolloutSeconds, ' s')} / ${dash(ro?.seconds, ' s')} | ${dash(ro?.mostRolling)} / ${dash(ro?.mostInFlight)} | ` +
        `${dash(run.floor.writesPerApp?.rollout)} / ${dash(o.writesPerApp?.rollout)} | ${dash(o.statusPatchesPerCr.rollout)} | ${q.create} / ${q.scale}${q.crFloor ? ` (${q.crFloor.create} / ${q.crFloor.scale})` : ''} | ` +
        `${o.steadyState.writes} / ${o.steadyState.reconciles} in ${o.steadyState.seconds} s | ${run.date.slice(0, 16).replace('T', ' ')}, ${run.commit}, ${run.loadAverage.start.join(' ')} / ${run.loadAverage.after.join(' ')} |`);
    }
  }
  lines.push(
    '',
    ...head('| N | run (UTC) | command | code | load average before / after (1, 5, 15 min) | settings |'),
  );
  for (const run of r.runs) {
    const s = run.settings;
    lines.push(`| ${run.n} | ${run.date.slice(0, 16).replace('T', ' ')} | \`${run.command}\` | ${run.commit} | ${run.loadAverage.start.join(' ')} / ${run.loadAverage.after.join(' ')} | ` +
      `size ${s.size} scaled to ${s.size + 1}, ${s.concurrency} in flight, ${s.edits} edits, APPKIND_WORKERS=${s.operator.workers}, APPKIND_STATUS_INTERVAL_MS=${s.operator.statusIntervalMs}` +
      `${s.rolloutImage ? `, rollout to ${s.rolloutImage}` : ', no rollout'}${s.repeat ? `, ${s.repeat} repetitions` : ''}${run.goOperator ? ', with --go' : ''}${s.unrelated ? `, --unrelated ${s.unrelated}` : ''} |`);
  }
  return lines.join('\n');
}

export const REPORT_START = '<!-- bench:start (written by npm run bench) -->';
export const REPORT_END = '<!-- bench:end -->';

/**
 * Writes bench/results.json, keeping the runs of other N from the file (each run records its own
 * date, command, code and load), and replaces the tables between the markers of docs/benchmark.md
 * and the charts beside them (docs/benchmark-*.svg, charts.ts).
 */
export function writeResults(root: string, fresh: BenchResults, opts: { waves?: boolean } = {}): BenchResults {
  const path = join(root, 'bench', 'results.json');
  let old: Partial<BenchResults> & { badNeighbours?: unknown } = {};
  try {
    old = JSON.parse(readFileSync(path, 'utf8')) as typeof old;
  } catch {
    // no file yet, or not JSON: start over
  }
  // What `npm run bench:bad-neighbours` wrote there is its own run: keep it.
  const badNeighbours = old.badNeighbours;
  // Runs written before runs carried their own date and command are not comparable: dropped.
  const dated = (runs: BenchRun[] | undefined) => (runs ?? []).filter((r) => typeof r.date === 'string');
  const merged = (runs: BenchRun[] | undefined) =>
    [...dated(runs).filter((r) => !fresh.runs.some((f) => f.n === r.n)), ...fresh.runs].sort((a, b) => a.n - b.n);
  // A --waves run is a study of the rollout phase: kept beside the main runs of each N, not in their place.
  const results: BenchResults = opts.waves
    ? { ...fresh, runs: dated(old.runs), wavesRuns: merged(old.wavesRuns) }
    : { ...fresh, runs: merged(old.runs), ...(old.wavesRuns ? { wavesRuns: dated(old.wavesRuns) } : {}) };
  writeFileSync(path, `${JSON.stringify({ ...results, badNeighbours }, null, 2)}\n`);
  const reportPath = join(root, 'docs', 'benchmark.md');
  const report = readFileSync(reportPath, 'utf8');
  const start = report.indexOf(REPORT_START);
  const end = report.indexOf(REPORT_END);
  if (start < 0 || end < start) {
    process.stderr.write(`bench: docs/benchmark.md has no ${REPORT_START} ... ${REPORT_END} markers; table not written\n`);
    return results;
  }
  writeFileSync(reportPath, `${report.slice(0, start + REPORT_START.length)}\n${table(results)}\n${report.slice(end)}`);
  for (const [name, svg] of Object.entries(charts(results))) writeFileSync(join(root, 'docs', name), svg);
  return results;
}
