// A list+watch cache of one resource: lists in pages, watches from the list's resourceVersion, resumes
// or relists after errors, and tells handlers of each change.
import { KubernetesObject } from '@kubernetes/client-node';
import { apiFailure } from './api-failure.js';
import { objectKey } from './ref.js';
import { sleep } from './sleep.js';
import { Logger } from './log.js';
import { resourcePath, RestClient } from './rest.js';
import { throttleDelayMs } from './throttle.js';

/** Objects per list request of a relist, as client-go's reflector pages. */
export const PAGE_SIZE = 500;

/** What to list and watch. */
export interface InformerSource {
  readonly apiVersion: string;
  readonly kind: string;
  /** Resource name in URLs, e.g. `deployments`. */
  readonly plural: string;
  /** One namespace, or all when unset. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  /** E.g. `metadata.name=x`: one object by name. */
  readonly fieldSelector?: string;
}

export type InformerEventType = 'add' | 'update' | 'delete';
/** `old` is the cached object an update or delete replaced. */
export type InformerHandler<T> = (type: InformerEventType, obj: T, old?: T) => void;

/** Maps an object to the index values it is found under (e.g. its owner's uid). */
export type IndexFunc<T> = (obj: T) => string[];

export interface InformerOptions<T extends KubernetesObject = KubernetesObject> {
  /** A watch that delivers nothing (not even a bookmark) for this long is dropped and the cache relisted. */
  readonly staleMs: number;
  readonly log: Logger;
  /** Lists through this client (its request hook counts them). */
  readonly rest: RestClient;
  /**
   * Applied to every object before it is stored or handed to the handler, like client-go's
   * SetTransform: drop what the operator never reads (managedFields, most of a pod) so the cache
   * holds only what reconcile needs.
   */
  readonly transform?: (obj: T) => T;
  /** Named indexes kept beside the store, read with byIndex(). */
  readonly indexers?: Record<string, IndexFunc<T>>;
  /**
   * Objects per list request: a relist reads the collection in pages of this many (`limit` and
   * `continue`, client-go's reflector pages by 500 too), each trimmed before the next is read.
   * @default 500
   */
  readonly pageSize?: number;
  /** A watch request was throttled (429) and is sent again after `delayMs` (lists report through `rest`). */
  readonly onThrottled?: (method: string, code: number, delayMs: number) => void;
}

/**
 * A list+watch cache of one resource. Unlike client-node's informer it never stops: errors and
 * 410 Gone relist, a server-closed watch resumes from the last resourceVersion, and a watchdog
 * relists when the watch goes silent (client-node's watch can stall without an error).
 */
export class Informer<T extends KubernetesObject = KubernetesObject> {
  private store = new Map<string, T>();
  /** index name -> index value -> object keys */
  private indices = new Map<string, Map<string, Set<string>>>();
  private resourceVersion?: string;
  private stopped = false;
  private synced = false;
  /** Why the last list or watch failed, until a list succeeds. */
  private failure?: { code: number; message: string };
  private abort?: AbortController;
  private lastHeard = Date.now();
  /** Bumped per watch request; events of an abandoned request (a hung one the watchdog gave up on) are dropped. */
  private watchId = 0;
  private readonly firstSync: Promise<void>;
  private resolveFirstSync!: () => void;

  constructor(
    readonly source: InformerSource,
    private readonly handler: InformerHandler<T>,
    private readonly opts: InformerOptions<T>,
  ) {
    this.firstSync = new Promise((resolve) => (this.resolveFirstSync = resolve));
  }

  /** Starts the loop; resolves once the first list is in the cache. */
  start(): Promise<void> {
    void this.loop();
    return this.firstSync;
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  /** Why the last list or watch failed (the API server's code and message), until a list succeeds. */
  get lastFailure(): { code: number; message: string } | undefined {
    return this.failure;
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /** How many objects the cache holds (no copy, unlike list()). */
  get size(): number {
    return this.store.size;
  }

  /** Objects found under `value` in the named index. */
  byIndex(index: string, value: string): T[] {
    const keys = this.indices.get(index)?.get(value);
    if (!keys) return [];
    const found: T[] = [];
    for (const key of keys) {
      const obj = this.store.get(key);
      if (obj) found.push(obj);
    }
    return found;
  }

  private put(key: string, obj: T): T | undefined {
    const old = this.store.get(key);
    if (old) this.unindex(key, old);
    this.store.set(key, obj);
    this.index(key, obj);
    return old;
  }

  private remove(key: string): T | undefined {
    const old = this.store.get(key);
    if (old) this.unindex(key, old);
    this.store.delete(key);
    return old;
  }

  private index(key: string, obj: T, indices = this.indices): void {
    for (const [name, fn] of Object.entries(this.opts.indexers ?? {})) {
      let index = indices.get(name);
      if (!index) indices.set(name, (index = new Map()));
      for (const value of fn(obj)) {
        let keys = index.get(value);
        if (!keys) index.set(value, (keys = new Set()));
        keys.add(key);
      }
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of Object.entries(this.opts.indexers ?? {})) {
      const index = this.indices.get(name);
      if (!index) continue;
      for (const value of fn(obj)) {
        const keys = index.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(value);
      }
    }
  }

  private trim(obj: T): T {
    return this.opts.transform ? this.opts.transform(obj) : obj;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(namespace ? `${namespace}/${name}` : name);
  }

  private get path(): string {
    return resourcePath(this.source);
  }

  private async loop(): Promise<void> {
    let failures = 0;
    let throttled = 0;
    while (!this.stopped) {
      let stage: 'list' | 'watch' = 'list';
      try {
        if (!this.resourceVersion) await this.relist();
        stage = 'watch';
        await this.watchOnce();
        failures = 0;
        throttled = 0;
      } catch (e) {
        const f = apiFailure(e);
        if (f.retryAfterMs !== undefined) {
          // Throttled (429): the server refused the request before running it. A watch resumes from
          // the resourceVersion it had (a relist would cost the server more); wait the Retry-After at
          // least, longer each time in a row, jittered.
          const delayMs = throttleDelayMs(throttled++, f.retryAfterMs);
          if (stage === 'watch') this.opts.onThrottled?.('WATCH', f.code, delayMs);
          this.opts.log.warn(`${stage} throttled; retrying`, { resource: this.path, code: f.code, delayMs, throttled });
          await sleep(delayMs);
          continue;
        }
        failures++;
        this.failure = { code: f.code, message: f.message };
        // Like client-go's reflector: a dropped connection resumes the watch from the last
        // resourceVersion (a 410 then says it is too old); any answer from the server relists. A
        // refused connection (an API server restarting) resumes however long it lasts, as client-go's
        // does: a relist would only cost more once the server is back, and answer 410 no sooner.
        const resume = stage === 'watch' && !!this.resourceVersion && f.code === 0 && (failures < 5 || f.reason === 'ConnectionRefused');
        if (!resume) this.resourceVersion = undefined;
        this.opts.log.warn(resume ? 'watch failed; resuming' : 'watch failed; relisting', {
          resource: this.path,
          ...(resume ? { resourceVersion: this.resourceVersion } : {}),
          code: f.code,
          error: f.message,
          failures,
        });
        await sleep(Math.min(200 * 2 ** failures, 10_000));
      }
    }
  }

  private async relist(): Promise<void> {
    const { apiVersion, kind, namespace, labelSelector, fieldSelector } = this.source;
    // Into a new store, page by page: the old one stays readable until the whole list is in.
    const old = { store: this.store, indices: this.indices };
    const fresh = { store: new Map<string, T>(), indices: new Map<string, Map<string, Set<string>>>() };
    let resourceVersion: string | undefined;
    for await (const page of this.opts.rest.pages<T>(apiVersion, kind, namespace, labelSelector, {
      limit: this.opts.pageSize ?? PAGE_SIZE,
      fieldSelector,
    })) {
      for (const item of page.items) {
        const obj = this.trim(item);
        const key = objectKey(obj);
        fresh.store.set(key, obj);
        this.index(key, obj, fresh.indices);
      }
      resourceVersion = page.resourceVersion;
    }
    this.store = fresh.store;
    this.indices = fresh.indices;
    this.failure = undefined;
    this.resourceVersion = resourceVersion;
    this.lastHeard = Date.now();
    for (const [key, obj] of this.store) {
      const before = old.store.get(key);
      if (!before) this.handler('add', obj);
      else if (before.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.handler('update', obj, before);
    }
    for (const [key, obj] of old.store) if (!this.store.has(key)) this.handler('delete', obj, obj);
    if (!this.synced) {
      this.synced = true;
      this.resolveFirstSync();
    }
  }

  /** One watch request; resolves when the server or the watchdog ends it. */
  private async watchOnce(): Promise<void> {
    if (this.stopped) return;
    const id = ++this.watchId;
    let failure: unknown;
    await new Promise<void>((resolve) => {
      const watchdog = setInterval(
        () => {
          if (Date.now() - this.lastHeard > this.opts.staleMs) {
            this.opts.log.warn('watch silent too long; relisting', {
              resource: this.path,
              silentSeconds: Math.round((Date.now() - this.lastHeard) / 1000),
            });
            this.resourceVersion = undefined;
            this.watchId++;
            this.abort?.abort();
            clearInterval(watchdog);
            resolve();
          }
        },
        Math.min(this.opts.staleMs / 4, 5_000),
      );
      watchdog.unref();
      const finish = (err: unknown) => {
        clearInterval(watchdog);
        const name = (err as { name?: string } | undefined)?.name;
        // A watch that received nothing, not even a bookmark, for a while (RestClient.watch's idle
        // timeout): resume from the last resourceVersion like a server-closed watch, not a relist.
        if (name === 'TimeoutError') this.opts.log.debug('watch idle; resuming', { resource: this.path });
        else if (err && !this.stopped && name !== 'AbortError') failure = err;
        resolve();
      };
      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        labelSelector: this.source.labelSelector,
        fieldSelector: this.source.fieldSelector,
        // The server ends the watch now and then; we resume from the last resourceVersion.
        timeoutSeconds: 240 + Math.floor(Math.random() * 120),
      };
      this.lastHeard = Date.now();
      const controller = new AbortController();
      this.abort = controller;
      // On the client's kept-alive connections: a resumed watch reuses the connection the last one ended on.
      this.opts.rest
        .watch(this.path, query, (type, obj) => id === this.watchId && this.onWatchEvent(type, obj as T), { signal: controller.signal })
        .then(() => finish(undefined), finish);
    });
    if (failure) throw failure;
  }

  private onWatchEvent(type: string, obj: T): void {
    this.lastHeard = Date.now();
    if (type === 'ERROR') {
      // 410 Gone (resourceVersion too old) and friends: start over from a fresh list.
      const status = obj as { code?: number; message?: string };
      this.opts.log.info(status.code === 410 ? 'watch expired (410 Gone); relisting' : 'watch error event; relisting', {
        resource: this.path,
        code: status.code,
        status: status.message,
      });
      this.resourceVersion = undefined;
      this.abort?.abort();
      return;
    }
    this.resourceVersion = obj.metadata?.resourceVersion ?? this.resourceVersion;
    if (type === 'BOOKMARK') return;
    const full = this.trim({ ...obj, apiVersion: this.source.apiVersion, kind: this.source.kind } as T);
    const key = objectKey(full);
    if (type === 'DELETED') {
      const old = this.remove(key);
      this.handler('delete', full, old);
    } else {
      const old = this.put(key, full);
      this.handler(old ? 'update' : 'add', full, old);
    }
  }
}
