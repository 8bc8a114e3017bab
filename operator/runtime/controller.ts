// A controller: list+watch caches whose events map to queue keys, and one work queue whose handler
// reconciles a key. Wired in one statement with ControllerBuilder, controller-runtime's builder shape:
// for(primary).owns(children).watches(others).watchesWhile(dynamic).complete(reconcile); owns() maps
// a child to its controller owner's key itself, and predicates filter events before any mapping.
// One concern past 350 lines: the builder's declarations and the controller built from them are one
// API (each step's type is what complete() builds, and the controller runs only what was declared).
import { KubernetesObject } from '@kubernetes/client-node';
import { ResourceCache } from './cache.js';
import { IndexFunc, Informer, InformerEventType, InformerSource } from './informer.js';
import { Logger, reconcileFields } from './log.js';
import { HandlerResult, QueueHooks, QueueOptions, WorkQueue } from './queue.js';
import { controllerOf, refKey } from './ref.js';
import { RestClient } from './rest.js';

/**
 * What to watch, in every watched namespace; `T`, the type of its objects, is only for the builder to
 * infer (as controller-runtime's `&appsv1.Deployment{}`).
 */
export type WatchSource<T extends KubernetesObject = KubernetesObject> = Omit<InformerSource, 'namespace'> & { readonly of?: T };

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
  /**
   * Adds the key of `obj`'s controller owner when that owner is a primary resource (of a kind and
   * apiVersion the controller watches now): what owns() does for every event.
   */
  addOwnerOf(obj: KubernetesObject): void;
}

/**
 * Maps a watch event to the keys it concerns (none, for most events of objects not ours). `watched`
 * is every cache and dynamic watch of the controller, by name (complete once events flow).
 */
export type EventHandler<T, W = unknown> = (keys: KeySink, event: WatchEvent<T>, watched: W) => void;

/** Whether an event maps to keys at all (controller-runtime's predicate); all must pass. */
export type Predicate<T> = (event: WatchEvent<T>) => boolean;

/** How a cache keeps objects: trimmed by `transform`, found by `indexers`. */
export interface CacheOptions<T> {
  readonly transform?: (obj: T) => T;
  readonly indexers?: Record<string, IndexFunc<T>>;
}

/** A watch's cache options, its event filters and what sees every event. */
export interface WatchOptions<T, W = unknown> extends CacheOptions<T> {
  /** An event maps to keys only when every predicate passes. */
  readonly predicates?: readonly Predicate<T>[];
  /** Sees every event, before the predicates (what the reconciler must remember of it). */
  readonly observe?: (event: WatchEvent<T>, watched: W) => void;
  /** Mappings besides the owner's (owns() only), for the events that pass the predicates. */
  readonly also?: readonly EventHandler<T, W>[];
}

/**
 * A watch the controller starts and stops while running, as what it watches changes (controller-runtime's
 * source.Kind added at run time); the controller stops it with the others.
 */
export interface DynamicWatch {
  stop(): void;
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
  readonly build: (ctx: WatchContext, keys: KeySink, source: WatchSource, watched: unknown) => Lifecycle;
}

/** A declared dynamic watch: built once the controller exists, started by what it builds. */
interface Dynamic {
  readonly name: string;
  readonly build: (ctx: WatchContext, keys: KeySink, watched: unknown) => DynamicWatch;
}

/** The caches and dynamic watches a builder declared, by the names given to for/owns/watches/watchesWhile. */
type CachesOf<C> = { readonly [K in keyof C]: C[K] };

/**
 * Declares a controller's watches in the order a reader thinks (what is watched, which events count,
 * how an event maps to a key), then `complete()` says what reconciles. Immutable: each step returns a
 * new builder whose type knows the watches declared so far. `W`, given to create(), is what every
 * mapping gets as its third argument: all the controller's watches, by name.
 */
export class ControllerBuilder<W extends object = object, C extends object = object> {
  static create<W extends object = object>(name: string, ctx: WatchContext): ControllerBuilder<W> {
    return new ControllerBuilder<W>(name, ctx, [], []);
  }

  private constructor(
    private readonly name: string,
    private readonly ctx: WatchContext,
    private readonly declared: readonly Watch[],
    private readonly dynamic: readonly Dynamic[],
  ) {}

  /** The primary resources, one cache per source (by kind): what a key names. */
  for<K extends string, T extends KubernetesObject>(
    name: K,
    sources: WatchSource<T>[],
    map: NoInfer<EventHandler<T, W>>,
    opts: NoInfer<WatchOptions<T, W>> = {},
  ): ControllerBuilder<W, C & Record<K, ReadonlyMap<string, ResourceCache<T>>>> {
    return this.with(name, sources, [map], opts, true);
  }

  /**
   * Objects the primary resources control: an event maps to the key of the object's controller
   * owner, when that is a primary resource (controller-runtime's EnqueueRequestForOwner), and to
   * what `opts.also` maps it to.
   */
  owns<K extends string, T extends KubernetesObject>(
    name: K,
    source: WatchSource<T>,
    opts: NoInfer<WatchOptions<T, W>> = {},
  ): ControllerBuilder<W, C & Record<K, ResourceCache<T>>> {
    return this.with(name, [source], [(keys, e) => keys.addOwnerOf(e.obj)], opts, false);
  }

  /** Other objects whose events concern a primary resource, mapped by `map` (labels, indexes...). */
  watches<K extends string, T extends KubernetesObject>(
    name: K,
    source: WatchSource<T>,
    map: NoInfer<EventHandler<T, W>>,
    opts: NoInfer<WatchOptions<T, W>> = {},
  ): ControllerBuilder<W, C & Record<K, ResourceCache<T>>> {
    return this.with(name, [source], [map], opts, false);
  }

  /**
   * A watch that runs only while something needs it (started and stopped by what `build` returns,
   * whose events go to `keys`); stopped with the controller.
   */
  watchesWhile<K extends string, D extends DynamicWatch>(
    name: K,
    build: (ctx: WatchContext, keys: KeySink, watched: W) => D,
  ): ControllerBuilder<W, C & Record<K, D>> {
    const dynamic = { name, build: build as Dynamic['build'] };
    return new ControllerBuilder<W, C & Record<K, D>>(this.name, this.ctx, this.declared, [...this.dynamic, dynamic]);
  }

  /**
   * Builds the caches, the dynamic watches and the queue. `reconciler` gets them by name and returns
   * what reconciles a key; the queue runs it, one key at a time, with per-key backoff.
   */
  complete(reconciler: (watched: CachesOf<C>) => Reconcile, queue: QueueOptions, hooks?: QueueHooks): Controller<CachesOf<C>> {
    return new Controller(this.name, this.ctx, this.declared, this.dynamic, reconciler, queue, hooks);
  }

  private with<R extends object, T extends KubernetesObject>(
    name: string,
    sources: WatchSource[],
    maps: EventHandler<T, W>[],
    opts: WatchOptions<T, W>,
    primary: boolean,
  ): ControllerBuilder<W, R> {
    const handler = dispatch([...maps, ...(opts.also ?? [])], opts);
    const cache = { transform: opts.transform, indexers: opts.indexers };
    const build = (ctx: WatchContext, keys: KeySink, source: WatchSource, watched: unknown) =>
      cacheOf(ctx, source, (k, e) => handler(k, e, watched as W), cache, keys);
    return new ControllerBuilder<W, R>(this.name, this.ctx, [...this.declared, { name, sources, primary, build }], this.dynamic);
  }
}

/** One handler of a watch's events: `observe` sees each; those passing the predicates go to every mapping. */
function dispatch<T, W>(maps: EventHandler<T, W>[], opts: WatchOptions<T, W>): EventHandler<T, W> {
  const predicates = opts.predicates ?? [];
  return (keys, event, watched) => {
    opts.observe?.(event, watched);
    if (!predicates.every((p) => p(event))) return;
    for (const map of maps) map(keys, event, watched);
  };
}

/** A built controller: start its caches, then its workers; stop drains the queue. */
export class Controller<C extends object> {
  readonly queue: WorkQueue;
  /** The caches and dynamic watches, by name. */
  readonly caches: C;
  private readonly all = new Set<Lifecycle>();
  private readonly dynamic: DynamicWatch[] = [];
  private readonly running = new Set<string>();
  private readonly watches = new Map<string, Watch>();
  /** The primary sources by kind: the owners owns() maps to. */
  private readonly ownerKinds = new Map<string, WatchSource>();
  /** Where keys go: for events of watches the builder did not declare (started while running). */
  readonly keys: KeySink;
  private cachesStarted = false;

  constructor(
    readonly name: string,
    private readonly ctx: WatchContext,
    watches: readonly Watch[],
    dynamic: readonly Dynamic[],
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
      addOwnerOf: (obj) => {
        const owner = controllerOf(obj);
        const primary = owner && this.ownerKinds.get(owner.kind);
        if (primary && owner.apiVersion === primary.apiVersion)
          this.queue.add(refKey({ kind: owner.kind, namespace: obj.metadata!.namespace, name: owner.name }));
      },
    });
    // Filled before any event can come (the caches start later): what every mapping gets.
    const caches: Record<string, unknown> = {};
    for (const w of watches) {
      this.watches.set(w.name, w);
      const built = w.sources.map((source) => w.build(ctx, keys, source, caches));
      for (const c of built) this.all.add(c);
      if (w.primary) for (const source of w.sources) this.ownerKinds.set(source.kind, source);
      caches[w.name] = w.primary ? new Map(w.sources.map((source, i) => [source.kind, built[i]!])) : built[0];
    }
    for (const d of dynamic) {
      const built = d.build(ctx, keys, caches);
      this.dynamic.push(built);
      caches[d.name] = built;
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
    const cache = w.build(this.ctx, this.keys, source, this.caches);
    primaries.set(source.kind, cache);
    this.ownerKinds.set(source.kind, source);
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
    this.ownerKinds.delete(kind);
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
    for (const d of this.dynamic) d.stop();
    return finished;
  }
}

/** One cache of `source` across the watched namespaces (an informer each), its events to `handler`. */
function cacheOf<T extends KubernetesObject>(
  ctx: WatchContext,
  source: WatchSource,
  handler: (keys: KeySink, event: WatchEvent<T>) => void,
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
