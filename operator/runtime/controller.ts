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

/** A declared watch: builds a cache for each of its sources once the controller exists. */
interface Watch {
  readonly name: string;
  readonly sources: WatchSource[];
  readonly primary: boolean;
  readonly build: (ctx: WatchContext, keys: KeySink, source: WatchSource) => Lifecycle;
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
    const build = (ctx: WatchContext, keys: KeySink, source: WatchSource) => cacheOf(ctx, source, handler, opts, keys);
    return new ControllerBuilder<R>(this.name, this.ctx, [...this.declared, { name, sources, primary, build }]);
  }
}

/** A built controller: start its caches, then its workers; stop drains the queue. */
export class Controller<C extends object> {
  readonly queue: WorkQueue;
  readonly caches: C;
  private readonly all = new Set<Lifecycle>();
  private readonly running = new Set<string>();
  private readonly watches = new Map<string, Watch>();
  /** Where keys go: for events of watches the builder did not declare (started while running). */
  readonly keys: KeySink;
  private cachesStarted = false;

  constructor(
    readonly name: string,
    private readonly ctx: WatchContext,
    watches: readonly Watch[],
    reconciler: (caches: C) => Reconcile,
    queueOpts: QueueOptions,
    hooks?: QueueHooks,
  ) {
    const keys: KeySink = (this.keys = {
      add: (key) => this.queue.add(key),
      addUnlessFailing: (key) => this.queue.addUnlessFailing(key),
      retryNow: (key) => {
        this.queue.forget(key);
        this.queue.add(key);
      },
    });
    const caches: Record<string, unknown> = {};
    for (const w of watches) {
      this.watches.set(w.name, w);
      const built = w.sources.map((source) => w.build(ctx, keys, source));
      for (const c of built) this.all.add(c);
      caches[w.name] = w.primary ? new Map(w.sources.map((source, i) => [source.kind, built[i]!])) : built[0];
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
    this.cachesStarted = true;
    await Promise.all([...this.all].map((c) => c.start()));
  }

  /**
   * One more primary source at run time (a kind added to the configuration): its cache joins the
   * primary watch `name` under the source's kind, and starts at once when the others have. Resolves
   * when it holds its first list.
   */
  async addPrimary(name: string, source: WatchSource): Promise<void> {
    const w = this.watches.get(name);
    if (!w?.primary) throw new Error(`controller ${this.name}: no primary watch named ${name}`);
    const primaries = (this.caches as Record<string, Map<string, Lifecycle>>)[name]!;
    if (primaries.has(source.kind)) return;
    const cache = w.build(this.ctx, this.keys, source);
    primaries.set(source.kind, cache);
    this.all.add(cache);
    if (this.cachesStarted) await cache.start();
  }

  /** Stops watching a primary source (a kind removed from the configuration) and drops its cache. */
  removePrimary(name: string, kind: string): void {
    const primaries = (this.caches as Record<string, Map<string, Lifecycle>>)[name];
    const cache = primaries?.get(kind);
    if (!cache) return;
    cache.stop();
    primaries!.delete(kind);
    this.all.delete(cache);
  }

  /** Starts reconciling (on becoming leader, or at once without leader election). */
  startWorkers(): void {
    this.queue.start();
  }

  /** All caches synced. */
  ready(): boolean {
    return [...this.all].every((c) => c.synced);
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
