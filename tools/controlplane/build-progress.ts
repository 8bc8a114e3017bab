// Progress of the control-plane build (tools/controlplane/build.sh), in two phases:
// 1. the plan, `go list -deps -f '{{.ImportPath}}\t{{len .GoFiles}}\t{{.Stale}}\t{{.Name}}\t{{.Dir}}\t
//    {{join .GoFiles ","}}'`, which on a fresh machine first downloads the modules (go prints
//    `go: downloading <module> <version>` for each): DownloadProgress counts those;
// 2. `go build -v`, which prints each package's import path as it compiles it: BuildProgress counts
//    them against the plan, which says which packages must be compiled and how big they are.
// Pure functions and state only; build-progress-cli.ts does the terminal side.

export interface PlannedPackage {
  path: string;
  /** Number of Go files. */
  files: number;
  /** False when the Go build cache already holds it: then `go build -v` will not print it. */
  stale: boolean;
  main: boolean;
  /** The package's folder and Go file names (to measure its source size); absent in older plans. */
  dir?: string;
  goFiles?: string[];
  /** Bytes of Go source: the estimate's weight (compile time grows with it). See withSizes. */
  bytes?: number;
}

/**
 * Parses the plan: `<path>\t<files>\t<stale>\t<name>\t<dir>\t<file,file,...>` per line (the older
 * space-separated `<path> <files> <stale> <name>` too); other lines are ignored.
 */
export function parsePlan(text: string): PlannedPackage[] {
  const result: PlannedPackage[] = [];
  for (const line of text.split('\n')) {
    const tab = line.split('\t');
    if (tab.length === 6 && /^\d+$/.test(tab[1]) && /^(true|false)$/.test(tab[2])) {
      const [path, files, stale, name, dir, goFiles] = tab;
      result.push({
        path,
        files: Number(files),
        stale: stale === 'true',
        main: name === 'main',
        dir,
        goFiles: goFiles ? goFiles.split(',') : [],
      });
      continue;
    }
    const m = /^(\S+) (\d+) (true|false) (\S+)$/.exec(line.trim());
    if (m) result.push({ path: m[1], files: Number(m[2]), stale: m[3] === 'true', main: m[4] === 'main' });
  }
  return result;
}

/**
 * Adds each stale package's source size, from `sizeOf(<dir>/<file>)` (the CLI passes a stat; a file
 * it cannot read counts 0).
 */
export function withSizes(plan: PlannedPackage[], sizeOf: (file: string) => number): PlannedPackage[] {
  return plan.map((p) => {
    if (!p.stale || p.dir === undefined || p.goFiles === undefined) return p;
    const dir = p.dir;
    return { ...p, bytes: p.goFiles.reduce((sum, f) => sum + sizeOf(`${dir}/${f}`), 0) };
  });
}

/**
 * A package's weight in the estimate: its fixed cost (starting the compiler, loading its imports,
 * writing the archive) plus a part that grows with its source size, BYTES_PER_PACKAGE bytes costing as
 * much as the fixed part; k8s.io packages (generated API code, deep type graphs) count double. Fitted
 * to a traced cold build (tools/controlplane/README.md): replayed against it, the estimate was within
 * 20% of the real time left from the first to the twelfth minute, where weighting by file count said
 * 40-55% too little for the first six. Without sizes (older plans): file count + 1.
 */
export const BYTES_PER_PACKAGE = 200_000;

export function weightOf(p: PlannedPackage): number {
  if (p.bytes === undefined) return p.files + 1;
  return (p.path.startsWith('k8s.io/') ? 2 : 1) * (1 + p.bytes / BYTES_PER_PACKAGE);
}

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

export interface DownloadSnapshot {
  /** Modules downloaded so far (`go: downloading` lines seen). */
  count: number;
  /** The latest one, `<module> <version>`. */
  latest: string | undefined;
  elapsedMs: number;
}

/**
 * Counts the `go: downloading <module> <version>` lines of the planning step. How many there will be
 * is not known beforehand (go.sum also lists modules only tests and other platforms need), so this
 * reports a running count, not a share.
 */
export class DownloadProgress {
  private count = 0;
  private latest: string | undefined;

  constructor(private readonly startedAt: number) {}

  /** True when the line is a download go announced (it is then folded into the count). */
  observe(line: string): boolean {
    const m = /^go: downloading (\S+ \S+)\s*$/.exec(line.trim());
    if (!m) return false;
    this.count += 1;
    this.latest = m[1];
    return true;
  }

  snapshot(now: number): DownloadSnapshot {
    return { count: this.count, latest: this.latest, elapsedMs: now - this.startedAt };
  }
}

/** The status of the planning step: planning, or downloading with a running count. */
export function downloadStatus(s: DownloadSnapshot): string {
  if (s.count === 0) return `planning the build (go list -deps), ${formatDuration(s.elapsedMs)} elapsed`;
  return `downloading Go modules (first run): ${s.count} so far, ${formatDuration(s.elapsedMs)} elapsed, latest ${s.latest ?? ''}`;
}

/** The line printed once the planning step ends; undefined when it downloaded nothing. */
export function downloadSummary(s: DownloadSnapshot): string | undefined {
  if (s.count === 0) return undefined;
  return `controlplane: downloaded ${s.count} Go module${s.count === 1 ? '' : 's'} in ${formatDuration(s.elapsedMs)}`;
}
