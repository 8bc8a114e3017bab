// The benchmark's results: their shape, bench/results.json, and the README table made from them.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** `verb resource[/subresource]` -> requests. */
export type RequestCounts = Record<string, number>;

export interface FloorRun {
  readonly createSeconds: number;
  readonly scaleSeconds: number;
  /** kube-apiserver CPU from the first create until every app is scaled and ready. */
  readonly apiserverCpuSeconds: number;
  readonly requests: { readonly create: RequestCounts; readonly scale: RequestCounts };
}

export interface OperatorRun extends FloorRun {
  /** Operator CPU over the same window as apiserverCpuSeconds. */
  readonly cpuSeconds: number;
  /** Operator CPU from cache sync to the end of the steady state (edits included). */
  readonly cpuTotalSeconds: number;
  readonly rssMiB: { readonly idle: number; readonly afterRun: number; readonly peak: number };
  readonly editLatencyMs: { readonly count: number; readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  readonly statusPatchesPerCr: { readonly create: number; readonly scale: number };
  readonly steadyState: { readonly seconds: number; readonly writes: number; readonly reconciles: number };
  readonly exitCode?: number | null;
}

export interface BenchRun {
  readonly n: number;
  readonly loadAverageAfter: number[];
  readonly floor: FloorRun;
  readonly operator: OperatorRun;
  /** operator / floor of the same run. */
  readonly ratios: { readonly create: number; readonly scale: number; readonly apiserverCpu: number };
}

export interface BenchResults {
  readonly date: string;
  readonly command: string;
  readonly machine: { cpus: number; cpuModel: string; memoryGiB: number; loadAverageAtStart: number[]; node: string; kubernetes: string };
  readonly settings: {
    readonly size: number;
    readonly concurrency: number;
    readonly edits: number;
    readonly steadySeconds: number;
    readonly operator: { readonly workers: number; readonly statusIntervalMs: number };
  };
  readonly runs: BenchRun[];
}

const writes = (counts: RequestCounts) => Object.entries(counts).filter(([w]) => /^(create|update|patch|delete) /.test(w)).reduce((s, [, n]) => s + n, 0);
const reads = (counts: RequestCounts) => Object.entries(counts).filter(([w]) => /^(get|list) /.test(w)).reduce((s, [, n]) => s + n, 0);
const perCr = (count: number, n: number) => (count / n).toFixed(2);

/** The README's tables: time against the floor, then cost, one row per N. */
export function table(r: BenchResults): string {
  const lines = [
    `${r.date.slice(0, 10)}, \`${r.command}\`: ${r.machine.cpus} cores (${r.machine.cpuModel}), Node ${r.machine.node}, Kubernetes ${r.machine.kubernetes}; ` +
      `apps of size ${r.settings.size} scaled to ${r.settings.size + 1}, ${r.settings.concurrency} requests in flight; operator WORKERS=${r.settings.operator.workers}, ` +
      `STATUS_INTERVAL_MS=${r.settings.operator.statusIntervalMs}; load average at start ${r.machine.loadAverageAtStart.join(' / ')}.`,
    '',
    '| N | create: floor / operator | ratio | scale +1: floor / operator | ratio | edit latency p50 / p90 / p99 (max) | status patches per CR, create / scale | steady state: writes / reconciles |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const run of r.runs) {
    const { floor: f, operator: o } = run;
    const e = o.editLatencyMs;
    lines.push(`| ${run.n} | ${f.createSeconds} s / ${o.createSeconds} s | **${run.ratios.create}** | ${f.scaleSeconds} s / ${o.scaleSeconds} s | **${run.ratios.scale}** | ` +
      `${e.p50} / ${e.p90} / ${e.p99} ms (${e.max}) | ${o.statusPatchesPerCr.create} / ${o.statusPatchesPerCr.scale} | ${o.steadyState.writes} / ${o.steadyState.reconciles} in ${o.steadyState.seconds} s |`);
  }
  lines.push(
    '',
    '| N | kube-apiserver CPU: floor / operator | ratio | operator CPU (create + scale; whole run) | operator RSS idle / peak | writes per CR created: floor / operator | reads (get, list) per CR created: operator | writes per CR scaled: floor / operator |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const run of r.runs) {
    const { floor: f, operator: o, n } = run;
    lines.push(`| ${n} | ${f.apiserverCpuSeconds} s / ${o.apiserverCpuSeconds} s | **${run.ratios.apiserverCpu}** | ${o.cpuSeconds} s; ${o.cpuTotalSeconds} s | ${o.rssMiB.idle} / ${o.rssMiB.peak} MiB | ` +
      `${perCr(writes(f.requests.create), n)} / ${perCr(writes(o.requests.create), n)} | ${perCr(reads(o.requests.create), n)} | ${perCr(writes(f.requests.scale), n)} / ${perCr(writes(o.requests.scale), n)} |`);
  }
  return lines.join('\n');
}

export const README_START = '<!-- bench:start (written by npm run bench) -->';
export const README_END = '<!-- bench:end -->';

/** Writes bench/results.json and replaces the table between the README's markers. */
export function writeResults(root: string, results: BenchResults): void {
  const file = join(root, 'bench', 'results.json');
  // What `npm run bench:bad-neighbours` wrote there is its own run: keep it.
  let badNeighbours: unknown;
  try {
    badNeighbours = (JSON.parse(readFileSync(file, 'utf8')) as { badNeighbours?: unknown }).badNeighbours;
  } catch {
    badNeighbours = undefined;
  }
  writeFileSync(file, `${JSON.stringify({ ...results, badNeighbours }, null, 2)}\n`);
  const readmePath = join(root, 'README.md');
  const readme = readFileSync(readmePath, 'utf8');
  const start = readme.indexOf(README_START);
  const end = readme.indexOf(README_END);
  if (start < 0 || end < start) {
    process.stderr.write(`bench: README.md has no ${README_START} ... ${README_END} markers; table not written\n`);
    return;
  }
  writeFileSync(readmePath, `${readme.slice(0, start + README_START.length)}\n${table(results)}\n${readme.slice(end)}`);
}
