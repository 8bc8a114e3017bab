// How the app-kind controller's watch events map to the keys of the CRs they concern, and what
// each event tells the reconciler's memory (the mappings the wiring in operator.ts names).
import { KubernetesObject, V1Pod, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { AppKind, ContainerApp } from 'cdk8s-appkind';
import { CacheReader, OWNER_INDEX, ResourceCache } from '../runtime/cache.js';
import { EventHandler, KeySink, WatchEvent } from '../runtime/controller.js';
import { Expectations } from '../runtime/expectations.js';
import { Logger } from '../runtime/log.js';
import { controllerOf, describeObject, refKey, refOf } from '../runtime/ref.js';
import { ConflictWatches } from './conflicts.js';
import { crNameOfChild, freedNodePorts, NODE_PORT_INDEX, nodePortIndex } from './indexes.js';
import { NodePortWaits } from './nodeports.js';
import { MemoryObserver, MemoryView } from './memory.js';
import { statusOnlyChange } from './predicates.js';
import { CachedResource, ReconcilerCaches } from './reconcile.js';

/** A cache the reconciler reads, as the controller built it. */
type Built<R> =
  R extends ReadonlyMap<string, CacheReader<infer T>>
    ? ReadonlyMap<string, ResourceCache<T>>
    : R extends CacheReader<infer T>
      ? ResourceCache<T>
      : never;

/**
 * What the operator watches: the caches the reconciler reads (every kind's CRs by kind, the children,
 * our pods and ReplicaSets), and the watches of what blocks a CR.
 */
export type AppWatches = { readonly [K in keyof ReconcilerCaches]: Built<ReconcilerCaches[K]> } & {
  readonly conflicts: ConflictWatches;
  readonly nodePortWaits: NodePortWaits;
};

type CrCaches = AppWatches['crs'];

/** A CR asking for a NodePort that is Degraded: its port may be held by a Service not ours. */
function waitsForNodePort(cr: CachedResource): boolean {
  return nodePortIndex(cr).length > 0 && !!cr.status?.conditions?.some((c) => c.type === 'Degraded' && c.status === 'True');
}

/** What each watch event tells before any mapping sees it: the reconciler's memory and the expectations of our writes. */
export class AppObservers {
  constructor(
    private readonly memory: MemoryObserver,
    private readonly expectations: Expectations,
  ) {}

  /** What a CR event tells the reconciler's memory: a deleted CR's facts go; whether it waits for a NodePort. */
  readonly crObserved = ({ type, obj, source }: WatchEvent<CachedResource>): void => {
    const key = refKey(refOf(source.kind, obj));
    if (type === 'delete') this.memory.crDeleted(key, obj.metadata.uid);
    this.memory.waitsForNodePort(key, type !== 'delete' && waitsForNodePort(obj));
  };

  /** What a child's event tells: the expectations of our writes, and which children were deleted. */
  readonly childObserved = ({ type, obj, source }: WatchEvent<KubernetesObject>): void => {
    this.expectations.observed(source.kind, obj, type === 'delete');
    this.memory.childObserved(source.kind, obj, type === 'delete');
  };
}

/**
 * The app-kind controller's mappings, each a function the builder calls with the controller's keys,
 * the event and every watch by name. `kinds` is the map of kinds served now (kind reload changes it).
 */
export class AppEvents {
  constructor(
    private readonly kinds: ReadonlyMap<string, AppKind>,
    private readonly memory: MemoryView,
    private readonly log: Logger,
  ) {}

  readonly replicaSetKey: EventHandler<V1ReplicaSet, AppWatches> = replicaSetKey;
  /** A child's kind of object deleted: the CRs whose child takes its name (conflictingWith). */
  readonly nameTakers: EventHandler<KubernetesObject, AppWatches> = (keys, { type, obj, source }, w) => {
    if (type === 'delete') this.conflictingWith(keys, w.crs, source.kind, obj);
  };
  /** A Service that gave up NodePorts: the CRs waiting for one (waitingFor). */
  readonly portWaiters: EventHandler<V1Service, AppWatches> = (keys, e, w) =>
    this.waitingFor(keys, w.crs, freedNodePorts(e.type, e.obj, e.old));
  /** The ConflictWatches' mapping: a watched blocking object is gone. */
  readonly nameTakersOfGone = (keys: KeySink, w: AppWatches) => (obj: KubernetesObject) =>
    this.conflictingWith(keys, w.crs, obj.kind!, obj);
  /** The NodePortWaits' mapping: NodePorts given up by any Service. */
  readonly portWaitersOfFreed = (keys: KeySink, w: AppWatches) => (ports: number[]) => this.waitingFor(keys, w.crs, ports);

  /**
   * A CR event: its key. A change of its status only that is our own status write, watched back, runs
   * it again unless it is failing: it must not cut short the backoff of a CR whose failure message
   * differs at every try, or apply, status and Event would loop at the speed of the API server. A
   * status someone else wrote runs it at once, to put the status right.
   */
  readonly crKey: EventHandler<CachedResource, AppWatches> = (keys, { type, obj, old, source }) => {
    const key = refKey(refOf(source.kind, obj));
    if (type === 'update' && statusOnlyChange(old, obj) && this.memory.isOwnStatusWrite(key, obj.metadata?.resourceVersion)) {
      keys.addUnlessFailing(key);
    } else {
      if (type === 'update' && statusOnlyChange(old, obj)) this.log.debug('status written by someone else; reconciling', { key });
      keys.add(key);
    }
  };

  /** A pod belongs to the CR named by its instance label, of every kind whose app name it carries. */
  readonly podKeys: EventHandler<V1Pod, AppWatches> = (keys, { obj }) => {
    const labels = obj.metadata?.labels ?? {};
    const instance = labels[ContainerApp.INSTANCE_LABEL];
    if (!instance) return;
    for (const kind of this.kinds.values()) {
      if (labels[ContainerApp.NAME_LABEL] === kind.appName)
        keys.add(refKey({ kind: kind.kind, namespace: obj.metadata!.namespace, name: instance }));
    }
  };

  /**
   * A Service gave up NodePorts (deleted, or changed to others): the Degraded CRs asking for one of
   * them run now instead of at their next backoff retry, which may be a minute away; their backoff
   * starts again from its base, since the port may be released a moment after the event is watched.
   */
  private waitingFor(keys: KeySink, crs: CrCaches, ports: number[]): void {
    for (const port of ports) {
      this.retryNow(
        keys,
        crs,
        (cache) => cache.byIndex(NODE_PORT_INDEX, String(port)),
        (cr) => !!cr.status?.conditions?.some((c) => c.type === 'Degraded' && c.status === 'True'),
        'NodePort freed; retrying the CR asking for it',
        { nodePort: port },
      );
    }
  }

  /**
   * A child's kind of object was deleted: a CR whose child takes its name and did not own it was
   * Degraded NameConflict because of it, and runs now instead of at its next backoff retry, which may
   * be DEGRADED_RETRY_SECONDS away; its backoff starts again from its base. Its status is not looked
   * at: a conflict written a moment ago may not be in the cache yet, and a CR that was not blocked
   * costs one no-op reconcile.
   */
  private conflictingWith(keys: KeySink, crs: CrCaches, kind: string, obj: KubernetesObject): void {
    const owner = controllerOf(obj)?.uid;
    const name = obj.metadata?.name && crNameOfChild(kind, obj.metadata.name);
    if (!name) return;
    this.retryNow(
      keys,
      crs,
      (cache) => [cache.get(obj.metadata?.namespace, name)].filter((cr) => cr !== undefined),
      (cr) => cr.metadata.uid !== owner, // its own child: owns() mapped it
      'conflicting object deleted; retrying the CR whose child takes its name',
      { object: describeObject({ ...obj, kind }) },
    );
  }

  /** Retries at once every CR that `found` gives of each kind's cache and `blocked` picks. */
  private retryNow(
    keys: KeySink,
    crs: CrCaches,
    found: (cache: ResourceCache<CachedResource>) => CachedResource[],
    blocked: (cr: CachedResource) => boolean,
    msg: string,
    fields: Record<string, unknown>,
  ): void {
    for (const [kind, cache] of crs) {
      for (const cr of found(cache)) {
        if (!blocked(cr)) continue;
        const key = refKey(refOf(kind, cr));
        this.log.debug(msg, { key, ...fields });
        keys.retryNow(key);
      }
    }
  }
}

/**
 * A ReplicaSet added: status lists a pod only once its ReplicaSet is known to be the CR's
 * Deployment's, so pods watched before their ReplicaSet bring their CR back now. Nothing else of a
 * ReplicaSet enqueues (its status ticks are the Deployment's, watched there).
 */
function replicaSetKey(keys: KeySink, { obj }: WatchEvent<V1ReplicaSet>, { pods, deployments }: AppWatches): void {
  if (pods.byIndex(OWNER_INDEX, obj.metadata!.uid!).length === 0) return;
  const owner = controllerOf(obj);
  const deployment = owner?.kind === 'Deployment' ? deployments.get(obj.metadata!.namespace, owner.name) : undefined;
  if (deployment && deployment.metadata?.uid === owner!.uid) keys.addOwnerOf(deployment);
}
