// `npm run bench:memory`: where the operator's memory goes, by phase, on a fresh real control plane.
// The compiled operator (as the image and `npm run bench` run it) under its ServiceAccount; N CRs of
// size 2 created at 4 in flight, then scaled by one, each phase until every CR is converged; then a
// quiet minute. At each phase: RSS and its peak (/proc), and from the operator's /metrics V8's heap
// (used and committed, by space), external memory and array buffers. --snapshots <dir> also writes a
// V8 heap snapshot at each phase (the operator runs with --heapsnapshot-signal=SIGUSR2; open them in
// Chrome DevTools' Memory tab). --main <file> runs another compiled operator (the code before a
// change, built elsewhere) instead of building this one; --node-flags='<flags>' runs it with Node flags.
// Usage: npm run bench:memory [-- --n 100] [--settle 60] [--snapshots <dir>] [--main <file>] [--node-flags='<flags>']
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ControlPlane } from '../tools/controlplane/controlplane.js';
import { httpGet } from '../tools/controlplane/readiness.js';
import { cpuSeconds, heapSnapshot, memoryMiB } from './proc.js';
import { buildOperator, kind, NS, setUpOperator, spawnOperator } from './operator-setup.js';
import type { Resource } from './phase.js';
import { Tracker } from './tracker.js';

const log = (line: string) => void process.stderr.write(`${line}\n`);
const CR_API = `${kind.group}/${kind.version}`;

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100' },
    settle: { type: 'string', default: '60' },
    snapshots: { type: 'string' },
    main: { type: 'string' },
    'node-flags': { type: 'string', default: '' },
  },
});
const n = Number(values.n);
const settleSeconds = Number(values.settle);
const snapshots = values.snapshots ? resolve(values.snapshots) : undefined;
const SIZE = 2;

const converged = (size: number) => (r: Resource) =>
  r.status?.nodes?.length === size &&
  r.status.observedGeneration === r.metadata?.generation &&
  r.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** Gauges of the operator's /metrics: name{labels} -> value. */
function gauges(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    found.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return found;
}

async function main(): Promise<void> {
  const operatorMain = values.main ? resolve(values.main) : await buildOperator();
  if (snapshots) mkdirSync(snapshots, { recursive: true });
  const cp = await ControlPlane.start({ log, pods: n * (SIZE + 2) });
  const rows: Record<string, string | number>[] = [];
  try {
    const setup = await setUpOperator(cp);
    const { rest, port } = setup;
    const flags = [...(values['node-flags'] ?? '').split(' ').filter(Boolean), ...(snapshots ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshots}`] : [])];
    const started = performance.now();
    const operator = await spawnOperator(operatorMain, flags, setup);
    const { child } = operator;
    const pid = child.pid!;
    try {
      const readySeconds = Math.round(performance.now() - started) / 1000;
      // VmHWM is the peak of the sum; sampled every 200 ms, the peaks of its anonymous part (V8's heap,
      // malloc, stacks) and of its file-backed part (the node binary's pages) say which one peaked.
      const peaks = { anon: 0, file: 0 };
      const sampler = setInterval(() => {
        try {
          peaks.anon = Math.max(peaks.anon, memoryMiB(pid, 'RssAnon'));
          peaks.file = Math.max(peaks.file, memoryMiB(pid, 'RssFile'));
        } catch {
          // exited
        }
      }, 200);
      sampler.unref();
      const phase = async (name: string) => {
        const m = gauges((await httpGet(`http://127.0.0.1:${port}/metrics`)).body);
        const space = (s: string) => mib(m.get(`nodejs_heap_space_size_used_bytes{space="${s}"}`) ?? NaN);
        const row = {
          phase: name,
          'RSS MiB': memoryMiB(pid, 'VmRSS'),
          'peak MiB': memoryMiB(pid, 'VmHWM'),
          'anon / file MiB': `${memoryMiB(pid, 'RssAnon')} / ${memoryMiB(pid, 'RssFile')}`,
          'peak anon / file (sampled)': `${Math.max(peaks.anon, memoryMiB(pid, 'RssAnon'))} / ${Math.max(peaks.file, memoryMiB(pid, 'RssFile'))}`,
          'heap used': mib(m.get('nodejs_heap_size_used_bytes') ?? NaN),
          'heap committed': mib(m.get('nodejs_heap_size_total_bytes') ?? NaN),
          'old space': space('old'),
          'code space': space('code'),
          'large objects': space('large_object'),
          external: mib(m.get('nodejs_external_memory_bytes') ?? NaN),
          'CPU s (since start)': cpuSeconds(pid),
        };
        rows.push(row);
        log(`bench:memory: ${name}: ${JSON.stringify(row)}`);
        if (snapshots) {
          const file = await heapSnapshot(child, snapshots, name);
          log(`bench:memory: ${name}: heap snapshot ${file}`);
        }
      };
      log(`bench:memory: operator ready after ${readySeconds} s`);
      await phase('idle, caches synced');

      const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
      await crs.start();
      const names = Array.from({ length: n }, (_, i) => `app-${i}`);
      await pool(names, 4, (name) => rest.apply({ apiVersion: CR_API, kind: kind.kind, metadata: { name, namespace: NS }, spec: { size: SIZE } }, 'bench'));
      await crs.waitFor(`${n} CRs converged`, n, converged(SIZE), 1_800_000);
      await phase(`${n} CRs created and converged`);
      await pool(names, 4, (name) =>
        rest.request('PATCH', `/apis/${CR_API}/namespaces/${NS}/${kind.plural}/${name}`, {
          body: { spec: { size: SIZE + 1 } },
          contentType: 'application/merge-patch+json',
        }),
      );
      await crs.waitFor(`${n} CRs scaled`, n, converged(SIZE + 1), 1_800_000);
      await phase(`${n} CRs scaled and converged`);
      crs.stop();
      await new Promise((r) => setTimeout(r, settleSeconds * 1000));
      await phase(`${settleSeconds} s later`);
      clearInterval(sampler);
      rest.close();
    } finally {
      const code = await operator.stop();
      if (code !== 0) log(`bench:memory: operator exited with ${code}`);
    }
  } finally {
    await cp.stop();
  }
  const columns = Object.keys(rows[0] ?? {});
  const flagsNote = values['node-flags'] ? ` ${values['node-flags']}` : '';
  process.stdout.write(
    [
      `N=${n}, size ${SIZE} scaled to ${SIZE + 1}, Node ${process.version}${flagsNote}; memory in MiB`,
      `| ${columns.join(' | ')} |`,
      `|${columns.map(() => '---').join('|')}|`,
      ...rows.map((r) => `| ${columns.map((c) => r[c]).join(' | ')} |`),
    ].join('\n') + '\n',
  );
  if (snapshots && existsSync(snapshots)) log(`bench:memory: heap snapshots in ${snapshots}`);
}

main().catch((e: unknown) => {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
