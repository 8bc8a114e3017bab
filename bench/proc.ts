// CPU time and memory of a process from /proc (Linux), for the benchmark's cost figures.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../tools/controlplane/readiness.js';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux the project runs on). */
const TICKS_PER_SECOND = 100;

/** User + system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at field 3 (state).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / TICKS_PER_SECOND;
}

/**
 * A /proc/<pid>/status memory field in MiB: VmRSS, its peak VmHWM, and its parts RssAnon (heap,
 * stacks, malloc) and RssFile (file-backed pages: the node binary's code and read-only data).
 */
export function memoryMiB(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
}

/** CPU seconds a process uses between start() and the returned stop(). */
export function cpuMeter(pid: number): () => number {
  const before = cpuSeconds(pid);
  return () => Math.round((cpuSeconds(pid) - before) * 100) / 100;
}

/**
 * CPU seconds of several processes (by name) and of this process ('bench') between start and the
 * returned stop(): where a phase's CPU went on the machine, and with the wall time how busy its
 * cores were.
 */
export function cpuMeters(pids: Record<string, number>): () => Record<string, number> {
  const meters = Object.entries(pids).map(([name, pid]) => [name, cpuMeter(pid)] as const);
  const self = process.cpuUsage();
  return () => {
    const used: Record<string, number> = {};
    for (const [name, meter] of meters) used[name] = meter();
    const bench = process.cpuUsage(self);
    used.bench = Math.round((bench.user + bench.system) / 1e4) / 100;
    used.total = Math.round(Object.values(used).reduce((s, v) => s + v, 0) * 100) / 100;
    return used;
  };
}

/**
 * Has `child` (started with --heapsnapshot-signal=SIGUSR2 and --diagnostic-dir=`dir`) write a V8 heap
 * snapshot and resolves with its path once written (its size stopped changing). V8 collects garbage
 * first, so the snapshot holds only live objects.
 */
export async function heapSnapshot(child: ChildProcess, dir: string, what: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  const fresh = () => readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
  child.kill('SIGUSR2');
  await waitFor(`heap snapshot (${what})`, async () => fresh() !== undefined, { timeoutMs: 120_000 });
  const file = join(dir, fresh()!);
  let size = -1;
  await waitFor(
    `heap snapshot ${file} written`,
    async () => {
      const now = statSync(file).size;
      const done = now === size && now > 0;
      size = now;
      return done;
    },
    { timeoutMs: 120_000 },
  );
  return file;
}
