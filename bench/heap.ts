// `npm run bench:heap`: what the operator's heap holds per app, by cache. The compiled operator (as
// the image and `npm run bench` run it, OPERATOR_NODE_OPTIONS) on a fresh control plane under its
// ServiceAccount; N CRs of size 2 created at 4 in flight until every CR is converged, then --settle
// seconds; then one V8 heap snapshot (after a full GC: live objects only), broken down by
// bench/heap-snapshot.ts into each informer's store and indexes and each of the operator's tables,
// per app. Prints a Markdown table and writes bench/heap.json (one entry per N, replaced by a new run).
// --snapshot <file> analyzes a snapshot taken before instead (--n then says how many apps it held).
// Usage: npm run bench:heap [-- --n 300] [--settle 10] [--keep <dir>] [--snapshot <file> --n N]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { analyzeHeapSnapshot, type HeapBreakdown, type HeapSnapshotFile } from './heap-snapshot.js';
import { buildOperator, kind, NS, setUpOperator, spawnOperator } from './operator-setup.js';
import { crConverged, crOf, CR_API, log, pool, range, type Resource, root } from './phase.js';
import { heapSnapshot, memoryMiB } from './proc.js';
import { Tracker } from './tracker.js';
import { ControlPlane } from '../tools/controlplane/controlplane.js';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '300' },
    settle: { type: 'string', default: '10' },
    keep: { type: 'string' },
    snapshot: { type: 'string' },
  },
});
const n = Number(values.n);
const SIZE = 2;
const RESULTS = join(root, 'bench', 'heap.json');

/** One run: when, which code, the machine's load, the process's memory when the snapshot was taken, and the breakdown. */
interface HeapRun {
  readonly n: number;
  readonly at: string;
  readonly commit: string;
  readonly load: number[];
  readonly rssMiB?: number;
  readonly peakMiB?: number;
  /** RSS's anonymous part (V8's heap, malloc, stacks) and file-backed part (the node binary's pages). */
  readonly anonMiB?: number;
  readonly fileMiB?: number;
  readonly breakdown: HeapBreakdown;
}

const kib = (bytes: number) => Math.round(bytes / 102.4) / 10;
const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** The rows that hold at least 1 KiB per 100 apps, per app in KiB, then what the rest of the heap is. */
function table(run: HeapRun): string {
  const per = (bytes: number) => kib(bytes / run.n);
  const b = run.breakdown;
  const rows = b.shares.filter((s) => s.retained >= 1024 * (run.n / 100) || s.reachable >= 1024 * (run.n / 100));
  const counted = b.shares.reduce((t, s) => t + s.retained, 0);
  return [
    `N=${run.n}, ${run.at}, code ${run.commit}, load ${run.load.join(' / ')}; heap ${mib(b.total)} MiB live` +
      (run.rssMiB ? `, RSS ${run.rssMiB} MiB (peak ${run.peakMiB} MiB${run.anonMiB ? `; anonymous ${run.anonMiB}, file-backed ${run.fileMiB}` : ''})` : ''),
    '',
    '| what | entries | retained KiB per app | reachable KiB per app | of it strings | of those repeated |',
    '|---|---|---|---|---|---|',
    ...rows.map((s) => `| ${s.what} | ${s.entries} | ${per(s.retained)} | ${per(s.reachable)} | ${per(s.strings)} | ${per(s.repeatedStrings)} |`),
    `| all the rows above, and those below 1 KiB per 100 apps | | ${per(counted)} | | | |`,
  ].join('\n') +
    `\nThe rest of the live heap: ${mib(b.total - counted)} MiB (code, modules, what no single table holds); strings anywhere ` +
    `${mib(b.strings.total)} MiB, ${mib(b.strings.repeated)} MiB of it repeating a value another string holds.`;
}

async function snapshotOfRun(dir: string): Promise<{ file: string; rssMiB: number; peakMiB: number; anonMiB: number; fileMiB: number }> {
  const operatorMain = await buildOperator();
  const cp = await ControlPlane.start({ log, pods: n * (SIZE + 2) });
  try {
    const setup = await setUpOperator(cp);
    const { rest } = setup;
    const operator = await spawnOperator(operatorMain, ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`], setup);
    const { child } = operator;
    try {
      const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
      await crs.start();
      log(`bench:heap: creating ${n} CRs of size ${SIZE}`);
      await pool(range(n), 4, (i) => rest.apply(crOf(i, SIZE), 'bench'));
      await crs.waitFor(`${n} CRs converged`, n, crConverged(SIZE), 1_800_000);
      crs.stop();
      await new Promise((r) => setTimeout(r, Number(values.settle) * 1000));
      const rssMiB = memoryMiB(child.pid!, 'VmRSS');
      const peakMiB = memoryMiB(child.pid!, 'VmHWM');
      const anonMiB = memoryMiB(child.pid!, 'RssAnon');
      const fileMiB = memoryMiB(child.pid!, 'RssFile');
      const file = await heapSnapshot(child, dir, `${n} CRs converged`);
      log(`bench:heap: heap snapshot ${file}`);
      rest.close();
      return { file, rssMiB, peakMiB, anonMiB, fileMiB };
    } finally {
      const code = await operator.stop();
      if (code !== 0) log(`bench:heap: operator exited with ${code}`);
    }
  } finally {
    await cp.stop();
  }
}

async function main(): Promise<void> {
  const dir = values.keep ? resolve(values.keep) : mkdtempSync(join(tmpdir(), 'appkind-heap-'));
  mkdirSync(dir, { recursive: true });
  const at = new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  const taken = values.snapshot ? { file: resolve(values.snapshot) } : await snapshotOfRun(dir);
  // The machine's load averages (1, 5, 15 min) when the run ended: a loaded machine slows the run, not what it holds.
  const load = loadavg().map((l) => Math.round(l * 10) / 10);
  log(`bench:heap: analyzing ${taken.file}`);
  const breakdown = analyzeHeapSnapshot(JSON.parse(readFileSync(taken.file, 'utf8')) as HeapSnapshotFile);
  if (!values.keep && !values.snapshot) rmSync(dir, { recursive: true, force: true });
  const run: HeapRun = { n, at, commit, load, ...('rssMiB' in taken ? { rssMiB: taken.rssMiB, peakMiB: taken.peakMiB, anonMiB: taken.anonMiB, fileMiB: taken.fileMiB } : {}), breakdown };
  if (!values.snapshot) {
    const runs = (existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as HeapRun[]) : []).filter((r) => r.n !== n);
    writeFileSync(RESULTS, JSON.stringify([...runs, run].sort((a, b) => a.n - b.n), null, 2) + '\n');
    log(`bench:heap: written to ${RESULTS}`);
  }
  process.stdout.write(table(run) + '\n');
}

main().catch((e: unknown) => {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
