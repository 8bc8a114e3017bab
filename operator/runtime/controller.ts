// A controller: list+watch caches whose events map to queue keys, and one work queue whose handler
// reconciles a key. Wired in one statement with ControllerBuilder, controller-runtime's builder shape:
// for(primary).owns(children).watches(others).complete(reconcile).
import { KubernetesObject } from '@kubernetes/client-node';
import { ResourceCache } from './cache.js';
import { IndexFunc, Informer, InformerEventType, InformerSource } from './informer.js';
import { Logger, reconcileFields } from './log.js';
import { HandlerResult, QueueHooks, QueueOptions, WorkQueue } from './queue.js';
import { RestClient } from './rest.js';

/** What to watch, in every watched namespace. */
export type WatchSource = Omit<InformerSource, 'namespace'>;

/** One watch event of a cache, with the source it came from. */
export interface WatchEvent<T> {
  readonly type: InformerEventType;
  readonly obj: T;
  /** The cached object an update or delete replaced. */
  readonly old?: T;
  readonly source: WatchSource;
}

/** Where an event handler puts the keys an event concerns. */
export interface KeySink {
  add(key: string): void;
  /**
   * Adds the key unless it is failing (WorkQueue.addUnlessFailing): for events the controller's own
   * writes cause, which must not shortcut a failing key's backoff.
   */
  addUnlessFailing(key: string): void;
  /** Runs the key at once with its failures forgotten: the event says the failure's cause may be gone. */
  retryNow(key: string): void;
}

/** Maps a watch event to the keys it concerns (none, for most events of objects not ours). */
export type EventHandler<T> = (keys: KeySink, event: WatchEvent<T>) => void;

/** How a cache keeps objects: trimmed by `transform`, found by `indexers`. */
export interface CacheOptions<T> {
  readonly transform?: (obj: T) => T;
  readonly indexers?: Record<string, IndexFunc<T>>;
}

/** What every watch shares. */
export interface WatchContext {
  readonly rest: RestClient;
  readonly log: Logger;
  /** Watched namespaces; empty: all. */
  readonly namespaces: readonly string[];
  /** A watch silent this long is relisted. */
  readonly staleMs: number;
  readonly onThrottled?: (method: string, code: number, delayMs: number) => void;
}

/**
 * Reconciles one key, logging through `log` (every line carries controller, namespace, name, the key
 * and a reconcile id); a thrown error retries it with backoff.
 */
export type Reconcile = (key: string, log: Logger) => Promise<HandlerResult>;

/** What the controller starts, waits for and stops of a cache. */
interface Lifecycle {
  start(): Promise<unknown>;
  stop(): void;
  readonly synced: boolean;
}

/** A declared watch: builds its caches (one per source) once the controller exists. */
interface Watch {
  readonly name: string;
  readonly kinds: string[];
  readonly primary: boolean;
  readonly build: (ctx: WatchContext, keys: KeySink) => Lifecycle[];
}

/** The caches a builder's watches declared, by the names given to for/owns/watches. */
type CachesOf<C> = { readonly [K in keyof C]: C[K] };

/**
 * Declares a controller's watches in the order a reader thinks (what is watched, how an event maps
 * to a key), then `complete()` says what reconciles. Immutable: each step returns a new builder whose
 * type knows the caches declared so far.
 */
export class ControllerBuilder<C extends object = object> {
  static create(name: string, ctx: WatchContext): ControllerBuilder {
    return new ControllerBuilder(name, ctx, []);
  }

  private constructor(
    private readonly name: string,
    private readonly ctx: WatchContext,
    private readonly declared: readonly Watch[],
  ) {}

  /** The primary resources, one cache per source (by kind): what a key names. */
  for<K extends string, T extends KubernetesObject>(
    name: K,
    sources: WatchSource[],
    handler: EventHandler<T>,
    opts: CacheOptions<T> = {},
  ): ControllerBuilder<C & Record<K, ReadonlyMap<string, ResourceCache<T>>>> {
    return this.with(name, sources, handler, opts, true);
  }

  /** Objects the primary resources control (their events map to the controller owner's key). */
  owns<K extends string, T extends KubernetesObject>(
    name: K,
    source: WatchSource,
    handler: EventHandler<T>,
    opts: CacheOptions<T> = {},
  ): ControllerBuilder<C & Record<K, ResourceCache<T>>> {
    return this.with(name, [source], handler, opts, false);
  }

  /** Other objects whose events concern a primary resource (mapped by labels, indexes...). */
  watches<K extends string, T extends KubernetesObject>(
    name: K,
    source: WatchSource,
    handler: EventHandler<T>,
    opts: CacheOptions<T> = {},
  ): ControllerBuilder<C & Record<K, ResourceCache<T>>> {
    return this.with(name, [source], handler, opts, false);
  }

  /**
   * Builds the caches and the queue. `reconciler` gets the caches by name and returns what
   * reconciles a key; the queue runs it, one key at a time, with per-key backoff.
   */
  complete(reconciler: (caches: CachesOf<C>) => Reconcile, queue: QueueOptions, hooks?: QueueHooks): Controller<CachesOf<C>> {
    return new Controller(this.name, this.ctx, this.declared, reconciler, queue, hooks);
  }

  private with<R extends object, T extends KubernetesObject>(
    name: string,
    sources: WatchSource[],
    handler: EventHandler<T>,
    opts: CacheOptions<T>,
    primary: boolean,
  ): ControllerBuilder<R> {
    const build = (ctx: WatchContext, keys: KeySink) => sources.map((source) => cacheOf(ctx, source, handler, opts, keys));
    return new ControllerBuilder<R>(this.name, this.ctx, [...this.declared, { name, kinds: sources.map((s) => s.kind), primary, build }]);
  }
}

/** A built controller: start its caches, then its workers; stop drains the queue. */
export class Controller<C extends object> {
  readonly queue: WorkQueue;
  readonly caches: C;
  private readonly all: Lifecycle[] = [];
  private readonly running = new Set<string>();

  constructor(
    readonly name: string,
    private readonly ctx: WatchContext,
    watches: readonly Watch[],
    reconciler: (caches: C) => Reconcile,
    queueOpts: QueueOptions,
    hooks?: QueueHooks,
  ) {
    const keys: KeySink = {
      add: (key) => this.queue.add(key),
      addUnlessFailing: (key) => this.queue.addUnlessFailing(key),
      retryNow: (key) => {
        this.queue.forget(key);
        this.queue.add(key);
      },
    };
    const caches: Record<string, unknown> = {};
    for (const w of watches) {
      const built = w.build(ctx, keys);
      this.all.push(...built);
      caches[w.name] = w.primary ? new Map(w.kinds.map((kind, i) => [kind, built[i]!])) : built[0];
    }
    this.caches = caches as C;
    const reconcile = reconciler(this.caches);
    this.queue = new WorkQueue((key) => this.run(key, reconcile), queueOpts, hooks);
  }

  private async run(key: string, reconcile: Reconcile): Promise<HandlerResult> {
    this.running.add(key);
    const log = this.ctx.log.child(reconcileFields(key));
    log.debug('reconcile started');
    try {
      return await reconcile(key, log);
    } finally {
      this.running.delete(key);
      log.debug('reconcile finished');
    }
  }

  /** Reconciles running right now (what a shutdown waits for). */
  get inFlight(): number {
    return this.running.size;
  }

  /** Starts every watch; resolves when all caches hold their first list. */
  async startCaches(): Promise<void> {
    await Promise.all(this.all.map((c) => c.start()));
  }

  /** Starts reconciling (on becoming leader, or at once without leader election). */
  startWorkers(): void {
    this.queue.start();
  }

  /** All caches synced. */
  ready(): boolean {
    return this.all.every((c) => c.synced);
  }

  /** Stops taking work, waits for in-flight reconciles up to graceMs, stops the watches. */
  async stop(graceMs: number): Promise<boolean> {
    const finished = await this.queue.shutdown(graceMs);
    for (const c of this.all) c.stop();
    return finished;
  }
}

/** One cache of `source` across the watched namespaces (an informer each), its events to `handler`. */
function cacheOf<T extends KubernetesObject>(
  ctx: WatchContext,
  source: WatchSource,
  handler: EventHandler<T>,
  opts: CacheOptions<T>,
  keys: KeySink,
): ResourceCache<T> {
  const { rest, log, staleMs, onThrottled } = ctx;
  const namespaces = ctx.namespaces.length ? ctx.namespaces : [undefined];
  const informers = namespaces.map(
    (namespace) =>
      new Informer<T>({ ...source, namespace }, (type, obj, old) => handler(keys, { type, obj, old, source }), {
        staleMs,
        log,
        rest,
        onThrottled,
        ...opts,
      }),
  );
  return new ResourceCache<T>(informers);
}
