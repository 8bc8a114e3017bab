// The storage migrations of AppKinds' CRDs, run beside their reconciles: at most one per CRD, stopped
// when its AppKind is deleted or the process stops. Progress is kept here for status.migration, and the
// AppKind is queued to write it at the start, at most every few seconds, and at the end: never per CR.
import type { Logger } from '../runtime/log.js';
import type { MigrationProgress, MigrationResult, StorageMigrationOptions } from '../controller/storage-migration.js';

/** Where the migration of one CRD stands. */
export interface MigrationState {
  /** Moving CRs now. */
  readonly running: boolean;
  /** The last progress reported (none until the CRs to move are listed). */
  readonly progress?: MigrationProgress;
  /** Why the last run failed, until a run succeeds. */
  readonly failure?: string;
  /** How long until a failed migration is tried again. */
  readonly retryInMs?: number;
}

export interface StorageMigrationsOptions {
  /** Migrates one CRD: a StorageMigration's migrate(). */
  readonly migrate: (crd: string, opts: StorageMigrationOptions) => Promise<MigrationResult>;
  /** The AppKind's status should show the migration's news: queue its reconcile. */
  readonly changed: (appKind: string) => void;
  /** Least time between two progress notices of one migration. @default 2000 */
  readonly reportEveryMs?: number;
  /** Wait after the first failure, doubled per failure up to 5 minutes. @default 5000 */
  readonly retryMs?: number;
  readonly now?: () => number;
}

interface Run {
  appKind: string;
  running: boolean;
  stop?: AbortController;
  done?: Promise<void>;
  progress?: MigrationProgress;
  failure?: string;
  failures: number;
  retryAt: number;
  lastNotice: number;
  trailing?: NodeJS.Timeout;
}

const MAX_RETRY_MS = 5 * 60_000;

export class StorageMigrations {
  private readonly runs = new Map<string, Run>();
  private readonly now: () => number;
  private stopped = false;

  constructor(private readonly opts: StorageMigrationsOptions) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * Starts migrating CRD `crd` for AppKind `appKind` unless it runs already or waits after a failure;
   * returns where it stands. A run finds from the CRD itself whether anything is left to move.
   */
  ensure(appKind: string, crd: string, log: Logger): MigrationState {
    const run = this.runs.get(crd) ?? { appKind, running: false, failures: 0, retryAt: 0, lastNotice: 0 };
    this.runs.set(crd, run);
    run.appKind = appKind;
    if (!run.running && !this.stopped && this.now() >= run.retryAt) this.start(crd, run, log);
    return this.state(crd)!;
  }

  /** Where the migration of `crd` stands, undefined when none ran in this process. */
  state(crd: string): MigrationState | undefined {
    const run = this.runs.get(crd);
    if (!run) return undefined;
    const wait = run.retryAt - this.now();
    return { running: run.running, progress: run.progress, failure: run.failure, retryInMs: run.failure && wait > 0 ? wait : undefined };
  }

  /** Stops the migration of `crd` (its AppKind is deleted) and forgets it. */
  async stop(crd: string): Promise<void> {
    const run = this.runs.get(crd);
    this.runs.delete(crd);
    await this.halt(run);
  }

  /** Stops every migration (the process stops): no CR is written after it returns. */
  async stopAll(): Promise<void> {
    this.stopped = true;
    const runs = [...this.runs.values()];
    this.runs.clear();
    await Promise.all(runs.map((r) => this.halt(r)));
  }

  private async halt(run: Run | undefined): Promise<void> {
    if (!run) return;
    clearTimeout(run.trailing);
    run.stop?.abort(new Error('storage migration stopped'));
    await run.done;
  }

  private start(crd: string, run: Run, log: Logger): void {
    const stop = new AbortController();
    run.stop = stop;
    run.running = true;
    run.done = this.opts.migrate(crd, { signal: stop.signal, log, onProgress: (p) => this.progressed(run, p) }).then(
      (result) => {
        run.running = false;
        run.failure = undefined;
        run.failures = 0;
        run.retryAt = 0;
        // NotNeeded: another run (or a cache behind the CRD) asked; the last progress stays what status shows.
        if (result.state === 'Done') {
          run.progress = result.progress;
          this.notice(run, true);
        }
      },
      (e: unknown) => {
        run.running = false;
        if (stop.signal.aborted) return;
        run.failures++;
        run.failure = (e as Error).message;
        run.retryAt = this.now() + Math.min(MAX_RETRY_MS, (this.opts.retryMs ?? 5000) * 2 ** (run.failures - 1));
        log.warn('storage migration failed; tried again', { crd, reason: run.failure, retryInMs: run.retryAt - this.now() });
        this.notice(run, true);
      },
    );
  }

  private progressed(run: Run, progress: MigrationProgress): void {
    const first = run.progress?.version !== progress.version || progress.migrated === 0;
    run.progress = progress;
    this.notice(run, first || progress.migrated === progress.total);
  }

  /** Queues the AppKind now when `now` or the last notice is old enough, else once the interval is over. */
  private notice(run: Run, now: boolean): void {
    const every = this.opts.reportEveryMs ?? 2000;
    const wait = run.lastNotice + every - this.now();
    if (now || wait <= 0) {
      clearTimeout(run.trailing);
      run.trailing = undefined;
      run.lastNotice = this.now();
      this.opts.changed(run.appKind);
    } else if (!run.trailing) {
      run.trailing = setTimeout(() => {
        run.trailing = undefined;
        run.lastNotice = this.now();
        this.opts.changed(run.appKind);
      }, wait);
      run.trailing.unref();
    }
  }
}
