// Progress of a `go build -v`: the plan (`go list -deps -f '{{.ImportPath}} {{len .GoFiles}} {{.Stale}}
// {{.Name}}'`) says which packages must be compiled; `go build -v` prints each one's import path as
// it compiles it. Pure functions and state only; build-progress-cli.ts does the terminal side.

export interface PlannedPackage {
  path: string;
  /** Number of Go files: the weight used for the estimate (compile time grows with it). */
  files: number;
  /** False when the Go build cache already holds it: then `go build -v` will not print it. */
  stale: boolean;
  main: boolean;
}

/** Parses the plan; lines that are not `<path> <files> <stale> <name>` are ignored. */
export function parsePlan(text: string): PlannedPackage[] {
  const result: PlannedPackage[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\S+) (\d+) (true|false) (\S+)$/.exec(line.trim());
    if (m) result.push({ path: m[1], files: Number(m[2]), stale: m[3] === 'true', main: m[4] === 'main' });
  }
  return result;
}

/** A package costs its files plus a fixed overhead (starting the compiler, writing the archive). */
const weightOf = (p: PlannedPackage): number => p.files + 1;

/**
 * Time left for the compiles, assuming the rest compiles at the rate the done part did (by weight).
 * Undefined until there is enough to go on (1% of the work or 10 s); linking is not included.
 */
export function estimateRemainingMs(elapsedMs: number, doneWeight: number, totalWeight: number): number | undefined {
  if (totalWeight <= 0 || doneWeight >= totalWeight) return 0;
  if (doneWeight <= 0 || doneWeight < totalWeight * 0.01 || elapsedMs < 10_000) return undefined;
  return Math.round((elapsedMs * (totalWeight - doneWeight)) / doneWeight);
}

/** 65_000 -> "1m05s", 4_000 -> "4s", 3_700_000 -> "1h01m40s". */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (h > 0) return `${h}h${pad(m)}m${pad(s)}s`;
  if (m > 0) return `${m}m${pad(s)}s`;
  return `${s}s`;
}

export interface ProgressSnapshot {
  /** Library packages compiled so far / to compile (main packages are counted apart). */
  done: number;
  total: number;
  elapsedMs: number;
  /** Estimated time left for the compiles; undefined while too early to say. */
  remainingMs: number | undefined;
  /** Main packages compiled: their binaries are linking (or linked). */
  linking: string[];
}

export class BuildProgress {
  private readonly planned = new Map<string, PlannedPackage>();
  private readonly seen = new Set<string>();
  private readonly mains: string[] = [];
  private total = 0;
  private totalWeight = 0;
  private doneWeight = 0;

  constructor(
    plan: PlannedPackage[],
    private readonly startedAt: number,
  ) {
    for (const p of plan) {
      this.planned.set(p.path, p);
      if (p.stale && !p.main) {
        this.total += 1;
        this.totalWeight += weightOf(p);
      }
    }
  }

  /** Feeds one line of `go build -v` output; true when it names a planned package (seen first time). */
  observe(line: string): boolean {
    const path = line.trim();
    const p = this.planned.get(path);
    if (!p) return false;
    if (this.seen.has(path)) return true;
    this.seen.add(path);
    if (p.main) {
      this.mains.push(path.slice(path.lastIndexOf('/') + 1));
      return true;
    }
    if (!p.stale) {
      // The cache lookup in `go list` said fresh but go compiled it anyway: it was work after all.
      this.total += 1;
      this.totalWeight += weightOf(p);
    }
    this.doneWeight += weightOf(p);
    return true;
  }

  snapshot(now: number): ProgressSnapshot {
    const elapsedMs = now - this.startedAt;
    const done = this.seen.size - this.mains.length;
    return {
      done,
      total: this.total,
      elapsedMs,
      remainingMs: estimateRemainingMs(elapsedMs, this.doneWeight, this.totalWeight),
      linking: [...this.mains],
    };
  }
}

/** `about 6m10s left`, `estimating`, or what is linking once every package is compiled. */
export function remainingText(s: ProgressSnapshot): string {
  if (s.done >= s.total) return s.linking.length > 0 ? `linking ${s.linking.join(', ')}` : 'linking';
  return s.remainingMs === undefined ? 'estimating time left' : `about ${formatDuration(s.remainingMs)} left + linking`;
}

/** The line printed every ~15 s when stderr is not a terminal (CI logs, binaries.ts's log). */
export function progressLine(label: string, s: ProgressSnapshot): string {
  const pct = s.total > 0 ? Math.floor((100 * s.done) / s.total) : 100;
  return `controlplane: ${label}: ${s.done}/${s.total} packages compiled (${pct}%), ${formatDuration(s.elapsedMs)} elapsed, ${remainingText(s)}`;
}

/** Lets a line through at most once per interval; the first call is always due. */
export class LineThrottle {
  private last: number | undefined;

  constructor(private readonly intervalMs: number) {}

  due(now: number): boolean {
    if (this.last !== undefined && now - this.last < this.intervalMs) return false;
    this.last = now;
    return true;
  }
}
