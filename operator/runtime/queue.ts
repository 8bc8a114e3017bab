// A work queue with client-go's "stingy" semantics (util/workqueue/doc.go): a key is queued at most
// once, processed by at most one worker at a time, and a key added while it is being processed runs
// once more afterwards. Failures requeue the key with per-key exponential backoff.
// One concern past 350 lines: dedupe, per-key serial runs, backoff and the two tiers below all decide
// one thing, which key a free worker takes next, and each reads the others' state (a key's tier, its
// failures, whether it is processing); the token bucket is the retries' rate, used by nothing else.
//
// Two tiers, so that failing keys never delay the others (a healthy CR created after 50 bad ones
// converges as fast as on its own). Keys added by events (`add()`, `addAfter()`, and a
// handler's `requeueAfterMs`) wait in the event tier; keys back from a failure's backoff wait in the
// retry tier, and a worker takes the oldest event key first. With one FIFO, 50 CRs failing at once
// put their first retries (5 ms doubling) ahead of a healthy CR created right after them.
// - A retry that an event adds again moves to the event tier (promoted): the event may be the news
//   that its failure's cause is gone (a freed NodePort), and one run serves both. Not so an event that
//   the key's own run caused (`addUnlessFailing`: the controller's status write watched back): it
//   never shortens a failing key's backoff, or a failure whose message differs at every try (a
//   webhook naming a request id) would loop at the speed of its own writes.
// - A handler's `requeueAfterMs` (status pacing during a rollout) goes to the event tier: it is a
//   healthy key's deferred work, not a failure, already paced to one run per key per interval by the
//   handler; behind the retries it would delay a healthy CR's status because of the failing ones.
// - Starvation bound: a retry that has waited `retryMaxWaitMs` in its tier goes before the event
//   keys (oldest first). So under a constant stream of events a retry waits at most that long plus
//   the older aged retries ahead of it; and the aged retries cannot starve the events in turn, since
//   retries only arrive through the retry bucket (`retryQps`, after a burst of `retryBurst`). An age
//   rather than "every Kth pick from the retries": a share of picks would still put a healthy key
//   behind retries in exactly the burst above, while an age costs nothing whenever the event work
//   drains within the bound, and bounds in time what a user waits for under a steady overload.
// controller-runtime's priority queue orders by a priority the caller gives (low for the initial
// list) and keeps it across retries; client-go's workqueue is one FIFO. This queue's order follows
// from why a key is queued instead.

/** What a handler may return: nothing (done) or a request to run the key again later. */
export type HandlerResult = void | { requeueAfterMs: number };

/**
 * Reconciles one key. Throwing means failure: the key is retried with backoff, and not before the
 * error's `retryAfterMs` when it has one (a throttled request).
 */
export type QueueHandler = (key: string) => Promise<HandlerResult>;

/** Observers for metrics and logs; none of them may change the queue's behaviour. */
export interface QueueHooks {
  /** The number of keys waiting for a worker changed. */
  onDepth?(depth: number): void;
  /** A key failed for the `failures`-th time in a row and will run again after `delayMs`. */
  onRetry?(key: string, failures: number, delayMs: number): void;
  /** A handler finished: `requeue` when it asked to run again later; `seconds` is its run time. */
  onResult?(key: string, result: 'success' | 'error' | 'requeue', seconds: number): void;
  /** A worker took a key that had waited `seconds` since it was queued (a retry's backoff not counted). */
  onWait?(key: string, seconds: number): void;
}

/** Queue options. */
export interface QueueOptions {
  /** Handlers running at once (different keys only). */
  workers: number;
  /** First retry delay after a failure. @default 5 */
  baseDelayMs?: number;
  /** Longest retry delay. @default 1_000_000 (about 16.7 minutes, as client-go) */
  maxDelayMs?: number;
  /**
   * Retries of all keys together, per second, after a burst of `retryBurst` (client-go's default
   * controller rate limiter: the longer of the per-key backoff and this bucket's wait). Without it,
   * 50 keys failing at once retry about 10 times each within the first second or so (5 ms doubling)
   * and a healthy key added meanwhile waits behind hundreds of retries. Keys added by events are
   * never held back by it. @default 10
   */
  retryQps?: number;
  /** @default 100 */
  retryBurst?: number;
  /**
   * Longest a retry waits behind keys added by events, in ms of `retryClock`; one that waited this
   * long goes before them (see the top of this file). @default 1000
   */
  retryMaxWaitMs?: number;
  /** The retry clock in ms: the retry bucket's and the retry tier's (a test can hold it still). @default performance.now */
  retryClock?: () => number;
}

/** Where a queued key waits: `event` keys go first, `retry` keys (back from a failure) after them. */
type Tier = 'event' | 'retry';

/**
 * A token bucket (golang.org/x/time/rate's Reserve): each retry takes a token, `qps` come back per
 * second up to `burst`; a retry finding none waits for its token, reservations queue up in order.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Takes a token; returns how many ms until it is there (0: now). */
  reserve(): number {
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Takes a token if one is there now (golang.org/x/time/rate's Allow); false leaves the bucket as it was. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
  }
}

/** Per-key exponential backoff delay: base * 2^previousFailures, capped at max. */
export function backoffDelay(previousFailures: number, baseDelayMs: number, maxDelayMs: number): number {
  // 2^n overflows to Infinity for large n; Math.min keeps the cap exact.
  return Math.min(baseDelayMs * 2 ** previousFailures, maxDelayMs);
}

/** The error's `retryAfterMs` (a throttled request says how long to wait), or 0. */
function retryAfterOf(error: unknown): number {
  const ms = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? ms : 0;
}

interface Delayed {
  readonly at: number;
  readonly timer: NodeJS.Timeout;
  /** The tier the key joins when the delay ends. */
  readonly tier: Tier;
}

/**
 * A deduplicating, per-key serial work queue with a fixed number of workers and per-key backoff;
 * keys added by events go before failure retries (see the top of this file). Keys added before
 * `start()` wait; after `shutdown()` adds are ignored.
 */
export class WorkQueue {
  /** Keys added by events, oldest first (a Map keeps insertion order), with when they were queued. */
  private readonly events = new Map<string, number>();
  /** Keys back from a failure's backoff, oldest first, with when they were queued. */
  private readonly retries = new Map<string, number>();
  /**
   * Keys that need processing, and their tier: queued in `events` or `retries`, or re-added while
   * processing (queued in that tier when the handler finishes).
   */
  private readonly dirty = new Map<string, Tier>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, Delayed>();
  private readonly failures = new Map<string, number>();
  /** Keys `addUnlessFailing` asked for while they were processing: queued again only if that run succeeds. */
  private readonly unlessFailing = new Set<string>();
  private readonly idleWaiters: { ignoreDelayed: boolean; resolve: () => void }[] = [];
  private readonly drainWaiters: (() => void)[] = [];
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly retryBucket: TokenBucket;
  private readonly retryMaxWaitMs: number;
  private readonly now: () => number;
  private started = false;
  private shuttingDown = false;

  /**
   * @param handler reconciles one key; never called twice at once for the same key
   * @param opts worker count and backoff bounds
   * @param hooks observers for metrics and logs
   */
  constructor(
    private readonly handler: QueueHandler,
    private readonly opts: QueueOptions,
    private readonly hooks: QueueHooks = {},
  ) {
    if (!Number.isInteger(opts.workers) || opts.workers < 1)
      throw new Error(`WorkQueue: workers must be a positive integer, got ${opts.workers}`);
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 1_000_000;
    this.retryBucket = new TokenBucket(opts.retryQps ?? 10, opts.retryBurst ?? 100, opts.retryClock);
    this.retryMaxWaitMs = opts.retryMaxWaitMs ?? 1000;
    this.now = opts.retryClock ?? (() => performance.now());
  }

  /** Keys waiting for a worker, both tiers (not counting keys being processed or waiting for a delay). */
  get depth(): number {
    return this.events.size + this.retries.size;
  }

  /**
   * Marks a key for processing, in the event tier; repeated adds before it runs collapse into one.
   * A key waiting in the retry tier moves up to the event tier.
   */
  add(key: string): void {
    this.enqueue(key, 'event');
  }

  /**
   * Adds a key (event tier) unless it is failing: a key waiting for a failure's retry stays where it
   * is, and one being processed runs again only if this run succeeds. For events the key's own runs
   * cause (a controller's status write watched back), which must never shortcut its backoff; the
   * pending retry reads the latest state anyway.
   */
  addUnlessFailing(key: string): void {
    if (this.shuttingDown || this.failures.has(key)) return;
    if (this.processing.has(key)) this.unlessFailing.add(key);
    else this.add(key);
  }

  /** Adds a key after `ms` (event tier); of several pending delays for one key the earliest wins. */
  addAfter(key: string, ms: number): void {
    this.schedule(key, ms, 'event');
  }

  /**
   * Forgets a key's failures (client-go's Forget): its next failure is retried after the base delay
   * again. For an event that says a failure's cause may be gone, when that event can arrive a moment
   * before the cause is (a Service's delete is watched before its NodePort is released).
   */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Starts the workers; keys added earlier begin processing now. */
  start(): void {
    if (this.started || this.shuttingDown) return;
    this.started = true;
    this.pump();
  }

  /**
   * Stops taking work: queued and delayed keys are dropped, adds are ignored. Resolves true when
   * every in-flight handler finished within `graceMs`, false when the grace period ran out first.
   */
  async shutdown(graceMs: number): Promise<boolean> {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.events.clear();
    this.retries.clear();
    this.dirty.clear();
    this.depthChanged();
    this.notifyIdle();
    if (this.processing.size === 0) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), Math.max(0, graceMs));
      this.drainWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /**
   * Resolves when no key is queued or processing and (unless `ignoreDelayed`) none waits for a
   * delay or retry. For tests and benchmarks.
   */
  whenIdle(opts: { ignoreDelayed?: boolean } = {}): Promise<void> {
    const ignoreDelayed = opts.ignoreDelayed ?? false;
    if (this.isIdle(ignoreDelayed)) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push({ ignoreDelayed, resolve }));
  }

  private isIdle(ignoreDelayed: boolean): boolean {
    return this.depth === 0 && this.processing.size === 0 && (ignoreDelayed || this.delayed.size === 0);
  }

  private tier(tier: Tier): Map<string, number> {
    return tier === 'event' ? this.events : this.retries;
  }

  /** Queues a key in `tier` unless it waits in that tier or a better one already (dedupe, promotion). */
  private enqueue(key: string, tier: Tier): void {
    if (this.shuttingDown) return;
    const queued = this.dirty.get(key);
    if (queued === 'event' || queued === tier) return;
    this.dirty.set(key, tier);
    // A key being processed is queued again when its handler finishes, never run concurrently.
    if (this.processing.has(key)) return;
    // Promoted from the retry tier: it leaves its place there for the event tier's tail.
    this.retries.delete(key);
    this.tier(tier).set(key, this.now());
    if (queued === undefined) this.depthChanged();
    this.pump();
  }

  /** Queues a key in `tier` after `ms`; of several pending delays for one key the earliest (and its tier) wins. */
  private schedule(key: string, ms: number, tier: Tier): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.enqueue(key, tier);
      return;
    }
    const at = Date.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.enqueue(key, tier);
      this.notifyIdle();
    }, ms);
    // The queue never keeps the process alive by itself (watches and servers do).
    timer.unref();
    this.delayed.set(key, { at, timer, tier });
  }

  /**
   * The next key for a worker: the oldest retry when it has waited `retryMaxWaitMs` or no event key
   * waits; else the oldest event key.
   */
  private next(): string | undefined {
    const oldestRetry = this.retries.entries().next();
    const retryFirst = !oldestRetry.done && (this.events.size === 0 || this.now() - oldestRetry.value[1] >= this.retryMaxWaitMs);
    const from = retryFirst ? this.retries : this.events;
    const key = from.keys().next();
    if (key.done) return undefined;
    const waitedMs = this.now() - from.get(key.value)!;
    this.observe(() => this.hooks.onWait?.(key.value, waitedMs / 1000));
    from.delete(key.value);
    return key.value;
  }

  private pump(): void {
    while (this.started && !this.shuttingDown && this.processing.size < this.opts.workers && this.depth > 0) {
      const key = this.next()!;
      this.dirty.delete(key);
      this.processing.add(key);
      this.depthChanged();
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    const startedAt = performance.now();
    let outcome: { result: HandlerResult } | { error: unknown };
    try {
      outcome = { result: await this.handler(key) };
    } catch (error) {
      outcome = { error };
    }
    const seconds = (performance.now() - startedAt) / 1000;
    this.processing.delete(key);
    const again = this.unlessFailing.delete(key);
    if ('error' in outcome) {
      this.observe(() => this.hooks.onResult?.(key, 'error', seconds));
      this.retry(key, retryAfterOf(outcome.error));
    } else {
      const requeueAfterMs = outcome.result?.requeueAfterMs;
      this.failures.delete(key);
      // A retry still pending from an earlier failure is moot now that the key converged; so is an
      // earlier requeue: the handler's latest answer says when to run again. (Kept, a moot retry
      // would bring a healthy key back in the retry tier.)
      this.cancelDelayed(key);
      this.observe(() => this.hooks.onResult?.(key, requeueAfterMs === undefined ? 'success' : 'requeue', seconds));
      // Status pacing, not a failure: the event tier (see the top of this file).
      if (requeueAfterMs !== undefined) this.schedule(key, requeueAfterMs, 'event');
      if (again) this.enqueue(key, 'event');
    }
    this.finish(key);
  }

  private cancelDelayed(key: string): void {
    const pending = this.delayed.get(key);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.delayed.delete(key);
  }

  private retry(key: string, notBeforeMs = 0): void {
    if (this.shuttingDown) return;
    const previous = this.failures.get(key) ?? 0;
    const delayMs = Math.round(
      Math.max(backoffDelay(previous, this.baseDelayMs, this.maxDelayMs), this.retryBucket.reserve(), notBeforeMs),
    );
    this.failures.set(key, previous + 1);
    this.observe(() => this.hooks.onRetry?.(key, previous + 1, delayMs));
    this.schedule(key, delayMs, 'retry');
  }

  /** After a handler: re-queue a key that was added meanwhile, start more work, wake waiters. */
  private finish(key: string): void {
    const tier = this.dirty.get(key);
    if (tier && !this.shuttingDown) {
      this.tier(tier).set(key, this.now());
      this.depthChanged();
    }
    if (this.processing.size === 0) for (const wake of this.drainWaiters.splice(0)) wake();
    this.pump();
    this.notifyIdle();
  }

  private notifyIdle(): void {
    for (let i = this.idleWaiters.length - 1; i >= 0; i--) {
      const waiter = this.idleWaiters[i]!;
      if (this.isIdle(waiter.ignoreDelayed)) {
        this.idleWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  private depthChanged(): void {
    this.observe(() => this.hooks.onDepth?.(this.depth));
  }

  /** Runs a hook; a broken observer must never stall the queue or leave a key marked processing. */
  private observe(call: () => void): void {
    try {
      call();
    } catch {
      // Hooks only feed metrics and logs; losing one observation is the lesser harm.
    }
  }
}
