// The benchmark's results: their shape, bench/results.json, and the README table made from them.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** `verb resource[/subresource]` -> requests. */
export type RequestCounts = Record<string, number>;

export interface FloorRun {
  readonly createSeconds: number;
  readonly scaleSeconds: number;
  /** Every Deployment re-applied with the kind's new image, until all rolled out. */
  readonly rolloutSeconds?: number;
  /** kube-apiserver CPU from the first create until every app is scaled and ready. */
  readonly apiserverCpuSeconds: number;
  readonly requests: { readonly create: RequestCounts; readonly scale: RequestCounts; readonly rollout?: RequestCounts };
}

export interface OperatorRun extends FloorRun {
  /** Operator CPU over the same window as apiserverCpuSeconds. */
  readonly cpuSeconds: number;
  /** Operator CPU from cache sync to the end of the steady state (edits included). */
  readonly cpuTotalSeconds: number;
  readonly rssMiB: { readonly idle: number; readonly afterRun: number; readonly peak: number };
  /** V8 heap in use after the steady state (nodejs_heap_size_used_bytes). */
  readonly heapUsedMiB?: number;
  readonly editLatencyMs: { readonly count: number; readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  readonly statusPatchesPerCr: { readonly create: number; readonly scale: number; readonly rollout?: number };
  readonly steadyState: { readonly seconds: number; readonly writes: number; readonly reconciles: number };
  /**
   * The operator restarted with a new default image in the kind's settings: from the restart until
   * every CR shows the rollout (Ready back to True after the restart) and runs the new image.
   */
  readonly rollout?: { readonly seconds: number; readonly image: string; readonly operatorCpuSeconds: number; readonly apiserverCpuSeconds: number };
  readonly exitCode?: number | null;
}

/**
 * The controller-runtime (Go) reference operator (bench/go-operator/, `--go`), measured like the
 * operator on its own fresh control plane: create and scale, its cost and its requests.
 */
export interface GoOperatorRun {
  readonly createSeconds: number;
  readonly scaleSeconds: number;
  /** kube-apiserver CPU from the first create until every CR is scaled and converged. */
  readonly apiserverCpuSeconds: number;
  /** The Go operator's CPU over the same window. */
  readonly cpuSeconds: number;
  readonly rssMiB: { readonly idle: number; readonly peak: number };
  readonly requests: { readonly create: RequestCounts; readonly scale: RequestCounts };
  readonly statusPatchesPerCr: { readonly create: number; readonly scale: number };
  /** The CR whose Deployment and Service were checked to be render()'s, field by field. */
  readonly sameChildrenAs: string;
  readonly workers: number;
}

/** The settings one bench command ran with. */
export interface BenchSettings {
  readonly size: number;
  readonly concurrency: number;
  readonly edits: number;
  readonly steadySeconds: number;
  /** The kind's new default image the operator is restarted with for the rollout phase; none when skipped. */
  readonly rolloutImage?: string;
  readonly operator: { readonly workers: number; readonly statusIntervalMs: number };
}

export interface BenchRun {
  readonly n: number;
  /** When and how this N was run (runs of several commands are kept side by side, one per N). */
  readonly date: string;
  readonly command: string;
  /** `git describe --always --dirty` of the code measured. */
  readonly commit: string;
  readonly settings: BenchSettings;
  /** 1-, 5- and 15-minute load averages before the floor and after the operator run. */
  readonly loadAverage: { readonly start: number[]; readonly after: number[] };
  readonly floor: FloorRun;
  readonly operator: OperatorRun;
  /** With --go: the Go reference operator, after the operator. */
  readonly goOperator?: GoOperatorRun;
  /** operator / floor of the same run; `go`: Go operator / the same floor. */
  readonly ratios: {
    readonly create: number; readonly scale: number; readonly rollout?: number; readonly apiserverCpu: number;
    readonly go?: { readonly create: number; readonly scale: number; readonly apiserverCpu: number };
  };
}

export interface BenchResults {
  /** The last write. */
  readonly date: string;
  readonly machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string; kubernetes: string };
  /** One per N, the latest run of each. */
  readonly runs: BenchRun[];
}

const writes = (counts: RequestCounts) => Object.entries(counts).filter(([w]) => /^(create|update|patch|delete) /.test(w)).reduce((s, [, n]) => s + n, 0);
const reads = (counts: RequestCounts) => Object.entries(counts).filter(([w]) => /^(get|list) /.test(w)).reduce((s, [, n]) => s + n, 0);
const perCr = (count: number, n: number) => (count / n).toFixed(2);

const dash = (v: number | undefined, unit = '') => (v === undefined ? '-' : `${v}${unit}`);

/** The README's tables: time against the floor, then cost, one row per N; then how each row was run. */
export function table(r: BenchResults): string {
  const lines = [
    `${r.machine.cpus} cores (${r.machine.cpuModel}), ${r.machine.memoryGiB} GiB, Node ${r.machine.node}, Kubernetes ${r.machine.kubernetes}; the machine is shared ` +
      '(load averages per row below). Each row is one run: floor and operator one after the other, each on a fresh control plane.',
    '',
    '| N | create: floor / operator | ratio | scale +1: floor / operator | ratio | new default image, operator restarted: floor / operator | ratio | edit latency p50 / p90 / p99 (max) | status patches per CR, create / scale / rollout | steady state: writes / reconciles |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const run of r.runs) {
    const { floor: f, operator: o } = run;
    const e = o.editLatencyMs;
    lines.push(`| ${run.n} | ${f.createSeconds} s / ${o.createSeconds} s | **${run.ratios.create}** | ${f.scaleSeconds} s / ${o.scaleSeconds} s | **${run.ratios.scale}** | ` +
      `${dash(f.rolloutSeconds, ' s')} / ${dash(o.rollout?.seconds, ' s')} | **${dash(run.ratios.rollout)}** | ` +
      `${e.p50} / ${e.p90} / ${e.p99} ms (${e.max}) | ${o.statusPatchesPerCr.create} / ${o.statusPatchesPerCr.scale} / ${dash(o.statusPatchesPerCr.rollout)} | ${o.steadyState.writes} / ${o.steadyState.reconciles} in ${o.steadyState.seconds} s |`);
  }
  lines.push(
    '',
    '| N | kube-apiserver CPU: floor / operator | ratio | operator CPU (create + scale; whole run) | operator RSS idle / peak (heap in use after) | writes per CR created: floor / operator | reads (get, list) per CR created: operator | writes per CR scaled: floor / operator |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const run of r.runs) {
    const { floor: f, operator: o, n } = run;
    lines.push(`| ${n} | ${f.apiserverCpuSeconds} s / ${o.apiserverCpuSeconds} s | **${run.ratios.apiserverCpu}** | ${o.cpuSeconds} s; ${o.cpuTotalSeconds} s | ${o.rssMiB.idle} / ${o.rssMiB.peak} MiB (${dash(o.heapUsedMiB, ' MiB')}) | ` +
      `${perCr(writes(f.requests.create), n)} / ${perCr(writes(o.requests.create), n)} | ${perCr(reads(o.requests.create), n)} | ${perCr(writes(f.requests.scale), n)} / ${perCr(writes(o.requests.scale), n)} |`);
  }
  const withGo = r.runs.filter((run) => run.goOperator && run.ratios.go);
  if (withGo.length > 0) {
    lines.push(
      '',
      'Beside a controller-runtime (Go) operator (`--go`, [bench/go-operator](bench/go-operator/), 4 workers, the same objects and status), each ratio against the floor of the same run:',
      '',
      '| N | create: ours / Go (ratios to floor) | scale +1: ours / Go (ratios to floor) | kube-apiserver CPU: ours / Go (ratios to floor) | operator CPU (create + scale): ours / Go | RSS peak: ours / Go | writes per CR created: ours / Go | status patches per CR, create / scale |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const run of withGo) {
      const { operator: o, goOperator: g, n } = run;
      const go = run.ratios.go!;
      lines.push(`| ${n} | ${o.createSeconds} s / ${g!.createSeconds} s (**${run.ratios.create}** / **${go.create}**) | ${o.scaleSeconds} s / ${g!.scaleSeconds} s (**${run.ratios.scale}** / **${go.scale}**) | ` +
        `${o.apiserverCpuSeconds} s / ${g!.apiserverCpuSeconds} s (**${run.ratios.apiserverCpu}** / **${go.apiserverCpu}**) | ${o.cpuSeconds} s / ${g!.cpuSeconds} s | ${o.rssMiB.peak} / ${g!.rssMiB.peak} MiB | ` +
        `${perCr(writes(o.requests.create), n)} / ${perCr(writes(g!.requests.create), n)} | ${o.statusPatchesPerCr.create} / ${o.statusPatchesPerCr.scale} (ours); ${g!.statusPatchesPerCr.create} / ${g!.statusPatchesPerCr.scale} (Go) |`);
    }
  }
  lines.push(
    '',
    '| N | run (UTC) | command | code | load average before / after (1, 5, 15 min) | settings |',
    '|---|---|---|---|---|---|',
  );
  for (const run of r.runs) {
    const s = run.settings;
    lines.push(`| ${run.n} | ${run.date.slice(0, 16).replace('T', ' ')} | \`${run.command}\` | ${run.commit} | ${run.loadAverage.start.join(' ')} / ${run.loadAverage.after.join(' ')} | ` +
      `size ${s.size} scaled to ${s.size + 1}, ${s.concurrency} in flight, ${s.edits} edits, WORKERS=${s.operator.workers}, STATUS_INTERVAL_MS=${s.operator.statusIntervalMs}` +
      `${s.rolloutImage ? `, rollout to ${s.rolloutImage}` : ', no rollout'}${run.goOperator ? ', with --go' : ''} |`);
  }
  return lines.join('\n');
}

export const README_START = '<!-- bench:start (written by npm run bench) -->';
export const README_END = '<!-- bench:end -->';

/**
 * Writes bench/results.json, keeping the runs of other N from the file (each run records its own
 * date, command, code and load), and replaces the table between the README's markers.
 */
export function writeResults(root: string, fresh: BenchResults): BenchResults {
  const path = join(root, 'bench', 'results.json');
  let kept: BenchRun[] = [];
  // What `npm run bench:bad-neighbours` wrote there is its own run: keep it.
  let badNeighbours: unknown;
  try {
    const old = JSON.parse(readFileSync(path, 'utf8')) as Partial<BenchResults> & { badNeighbours?: unknown };
    badNeighbours = old.badNeighbours;
    // Runs written before runs carried their own date and command are not comparable: dropped.
    kept = (old.runs ?? []).filter((r) => typeof r.date === 'string' && !fresh.runs.some((f) => f.n === r.n));
  } catch {
    // no file yet, or not JSON: start over
  }
  const results: BenchResults = { ...fresh, runs: [...kept, ...fresh.runs].sort((a, b) => a.n - b.n) };
  writeFileSync(path, `${JSON.stringify({ ...results, badNeighbours }, null, 2)}\n`);
  const readmePath = join(root, 'README.md');
  const readme = readFileSync(readmePath, 'utf8');
  const start = readme.indexOf(README_START);
  const end = readme.indexOf(README_END);
  if (start < 0 || end < start) {
    process.stderr.write(`bench: README.md has no ${README_START} ... ${README_END} markers; table not written\n`);
    return results;
  }
  writeFileSync(readmePath, `${readme.slice(0, start + README_START.length)}\n${table(results)}\n${readme.slice(end)}`);
  return results;
}
