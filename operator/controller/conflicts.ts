// Objects that take a child's name and are not the CR's (Degraded NameConflict). The
// caches hold only objects carrying the children's label, so the operator's memory and watch traffic
// grow with its own objects, not with the cluster's; someone else's object that blocks a CR is
// watched by its name while it blocks one, so that its deletion retries the CR at once instead of at
// its next backoff retry.
import type { KubernetesObject } from '@kubernetes/client-node';
import { Informer } from '../runtime/informer.js';
import { Logger } from '../runtime/log.js';
import { RestClient } from '../runtime/rest.js';

/** What a reconcile tells of the objects blocking a CR. */
export interface ConflictTracker {
  /** The objects (named as the CR's children are) that block the CR `key` now; none when it is not blocked or gone. */
  observe(key: string, blockers: readonly KubernetesObject[]): void;
}

/** Kinds whose cache is label-selected, so a blocking object of theirs needs a watch of its own. */
const PLURALS: Record<string, string> = {
  Deployment: 'deployments',
  Service: 'services',
  PodDisruptionBudget: 'poddisruptionbudgets',
  NetworkPolicy: 'networkpolicies',
};

/** `Kind namespace/name` of a child's kind, or undefined for anything else. */
function idOf(obj: KubernetesObject): string | undefined {
  const { apiVersion, kind, metadata } = obj;
  if (!apiVersion || !kind || !PLURALS[kind] || !metadata?.namespace || !metadata.name) return undefined;
  return `${kind} ${metadata.namespace}/${metadata.name}`;
}

interface Watched {
  readonly informer: Informer<KubernetesObject>;
  /** The CRs this object blocks. */
  readonly keys: Set<string>;
}

/** One small list+watch (a field selector on the name) per blocking object, while it blocks a CR. */
export class ConflictWatches implements ConflictTracker {
  /** `Kind namespace/name` of a blocking object -> its watch. */
  private readonly watched = new Map<string, Watched>();
  /** CR key -> the blocking objects' ids. */
  private readonly blocking = new Map<string, Set<string>>();

  constructor(
    private readonly ctx: { rest: RestClient; log: Logger; staleMs: number },
    /** The object is gone (deleted, or was already gone when its watch started). */
    private readonly onGone: (obj: KubernetesObject) => void,
  ) {}

  observe(key: string, blockers: readonly KubernetesObject[]): void {
    const before = this.blocking.get(key);
    if (!before && blockers.length === 0) return;
    const now = new Map(blockers.map((o) => [idOf(o), o] as const).filter(([id]) => id !== undefined) as [string, KubernetesObject][]);
    for (const id of before ?? []) if (!now.has(id)) this.unwatch(id, key);
    for (const [id, obj] of now) if (!before?.has(id)) this.watch(id, obj, key);
    if (now.size) this.blocking.set(key, new Set(now.keys()));
    else this.blocking.delete(key);
  }

  private watch(id: string, obj: KubernetesObject, key: string): void {
    const existing = this.watched.get(id);
    if (existing) {
      existing.keys.add(key);
      return;
    }
    const source = { apiVersion: obj.apiVersion!, kind: obj.kind!, plural: PLURALS[obj.kind!]!, namespace: obj.metadata!.namespace! };
    const informer = new Informer<KubernetesObject>(
      { ...source, fieldSelector: `metadata.name=${obj.metadata!.name}` },
      (type, o) => {
        if (type === 'delete') this.onGone(o);
      },
      { rest: this.ctx.rest, log: this.ctx.log, staleMs: this.ctx.staleMs, pageSize: 1 },
    );
    this.watched.set(id, { informer, keys: new Set([key]) });
    this.ctx.log.debug('watching the object that takes a child name', { key, object: id });
    // Gone between the reconcile that saw it and this list: no delete event will come.
    void informer.start().then(() => {
      if (this.watched.get(id)?.informer === informer && informer.list().length === 0) this.onGone(obj);
    });
  }

  private unwatch(id: string, key: string): void {
    const watched = this.watched.get(id);
    if (!watched) return;
    watched.keys.delete(key);
    if (watched.keys.size > 0) return;
    watched.informer.stop();
    this.watched.delete(id);
  }

  /** Objects watched right now (a test and the logs tell how many). */
  get size(): number {
    return this.watched.size;
  }

  stop(): void {
    for (const w of this.watched.values()) w.informer.stop();
    this.watched.clear();
    this.blocking.clear();
  }
}
