// The app-kind operator's wiring: what it watches, how each event maps to the key of the CR it
// concerns, and what reconciles a key (one statement, in Operator's constructor).
import {
  KubernetesObject,
  V1Deployment,
  V1NetworkPolicy,
  V1Pod,
  V1PodDisruptionBudget,
  V1ReplicaSet,
  V1Service,
} from '@kubernetes/client-node';
import { AppKind, AppKindCrd, ContainerApp } from 'cdk8s-appkind';
import { OWNER_INDEX, ownerIndex, ResourceCache, withOwnManagedFields, withoutManagedFields } from '../runtime/cache.js';
import { Controller, ControllerBuilder, KeySink, WatchEvent, WatchSource } from '../runtime/controller.js';
import { EventRecorder } from '../runtime/events.js';
import { Expectations } from '../runtime/expectations.js';
import { KubeAccess } from '../runtime/kubeconfig.js';
import { Logger } from '../runtime/log.js';
import { OperatorMetrics, queueHooks } from '../runtime/metrics.js';
import { controllerOf, describeObject, refKey, refOf } from '../runtime/ref.js';
import { RestClient } from '../runtime/rest.js';
import { OperatorSettings } from '../settings.js';
import {
  CHILD_NAME_INDEX,
  childNameIndex,
  deploymentChanged,
  freedNodePorts,
  NODE_PORT_INDEX,
  nodePortIndex,
  podChanged,
  podSummary,
  replicaSetSummary,
  statusOnlyChange,
} from './indexes.js';
import { ConflictWatches } from './conflicts.js';
import { DeletedChildren } from './deleted-children.js';
import { NodePortWaits } from './nodeports.js';
import { CachedResource, CHILD_SELECTOR, Reconciler } from './reconcile.js';
import { RenderCache } from './render-cache.js';
import { StatusPacer } from './status-pacer.js';
import { OwnStatusWrites } from './own-status-writes.js';

/**
 * Our Deployments: those carrying the children's label, so the cache (and the watch events of every
 * Deployment status update in the cluster) grows with our objects, not with the cluster's. Someone
 * else's Deployment that takes a child's name is found by the create-only first apply and watched by
 * name while it blocks a CR (ConflictWatches).
 */
const DEPLOYMENTS: WatchSource = { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', labelSelector: CHILD_SELECTOR };
/**
 * Our Services: those carrying the children's label, as the Deployments. A Service of someone else's
 * that takes a child's name is met by the create-only first apply and watched by name while it blocks
 * a CR (ConflictWatches); one that holds a NodePort a CR asks for is seen by the watch of every Service
 * that runs only while some CR waits for a port (NodePortWaits).
 */
const SERVICES: WatchSource = { apiVersion: 'v1', kind: 'Service', plural: 'services', labelSelector: CHILD_SELECTOR };
/** Our PodDisruptionBudgets and NetworkPolicies (a kind renders them when it asks), label-selected as the Deployments. */
const PDBS: WatchSource = {
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  plural: 'poddisruptionbudgets',
  labelSelector: CHILD_SELECTOR,
};
const NETWORK_POLICIES: WatchSource = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  plural: 'networkpolicies',
  labelSelector: CHILD_SELECTOR,
};
/** Only our pods: status reads nothing else of pods. */
const OUR_PODS: WatchSource = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', labelSelector: CHILD_SELECTOR };
/** Our ReplicaSets: which pods belong to a CR's own Deployment. */
const OUR_REPLICA_SETS: WatchSource = { apiVersion: 'apps/v1', kind: 'ReplicaSet', plural: 'replicasets', labelSelector: CHILD_SELECTOR };

/** The caches the operator keeps: every kind's CRs (by kind), the children, our pods. */
interface AppCaches {
  readonly crs: ReadonlyMap<string, ResourceCache<CachedResource>>;
  readonly deployments: ResourceCache<V1Deployment>;
  readonly services: ResourceCache<V1Service>;
  readonly podDisruptionBudgets: ResourceCache<V1PodDisruptionBudget>;
  readonly networkPolicies: ResourceCache<V1NetworkPolicy>;
  readonly pods: ResourceCache<V1Pod>;
  readonly replicaSets: ResourceCache<V1ReplicaSet>;
}

/** Kinds by name that setKinds() started serving, stopped serving, or serves with new settings. */
export interface KindChanges {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
}

/** A CR asking for a NodePort that is Degraded: its port may be held by a Service not ours. */
function waitsForNodePort(cr: CachedResource): boolean {
  return nodePortIndex(cr).length > 0 && !!cr.status?.conditions?.some((c) => c.type === 'Degraded' && c.status === 'True');
}

/** The CRs of a kind. */
function crsOf(kind: AppKind): WatchSource {
  return { apiVersion: AppKindCrd.apiVersionOf(kind), kind: kind.kind, plural: kind.plural };
}

/** The app-kind controller of one process: every configured kind's CRs and their children. */
export class Operator {
  /** The one keep-alive client of the process: caches, reconciles, events and leader election share it. */
  readonly rest: RestClient;
  private readonly controller: Controller<AppCaches>;
  /** The kinds served now, by Kind; setKinds() changes them (the reconciler reads this same map). */
  private readonly kinds: Map<string, AppKind>;
  private readonly ownStatusWrites = new OwnStatusWrites();
  private readonly conflicts: ConflictWatches;
  private readonly nodePortWaits: NodePortWaits;
  /** Children seen deleted while their CR is still cached (the CR's DELETED event may come after). */
  private readonly deletedChildren: DeletedChildren;

  constructor(
    kc: KubeAccess,
    private readonly settings: OperatorSettings,
    private readonly log: Logger,
    metrics: OperatorMetrics,
    /** `userAgent`: the User-Agent of every request (default none). */
    client: { userAgent?: string } = {},
  ) {
    this.kinds = new Map(settings.kinds.map((k) => [k.kind, k]));
    const onThrottled = (method: string, code: number) => metrics.throttled(method, code);
    const rest = (this.rest = new RestClient(kc, (verb, code) => metrics.apiRequest(verb, code), {
      onThrottled,
      userAgent: client.userAgent,
    }));
    const expectations = new Expectations();
    const deletedChildren = (this.deletedChildren = new DeletedChildren());
    // Children keep our own apply entry of managedFields: what we own, to release what render() stops giving.
    const children = { transform: withOwnManagedFields(settings.fieldManager), indexers: { [OWNER_INDEX]: ownerIndex } };
    const watching = { rest, log, namespaces: settings.namespaces, staleMs: settings.watchStaleSeconds * 1000, onThrottled };
    // An object of someone else's that blocked a CR is gone: retry that CR now.
    this.conflicts = new ConflictWatches(watching, (obj) => this.conflictingWith(this.controller.keys, obj.kind!, obj));

    // CRs waiting for a NodePort held by a Service not ours: retried when a Service gives one up.
    this.nodePortWaits = new NodePortWaits(
      watching,
      (ports) => this.waitingFor(this.controller.keys, ports),
      (keys) => {
        for (const key of keys) this.controller.keys.retryNow(key);
      },
    );
    this.controller = ControllerBuilder.create('appkind', watching)
      .for<'crs', CachedResource>('crs', settings.kinds.map(crsOf), (keys, e) => this.onCr(keys, e), {
        transform: withoutManagedFields,
        indexers: { [NODE_PORT_INDEX]: nodePortIndex, [CHILD_NAME_INDEX]: childNameIndex },
      })
      .owns<'deployments', V1Deployment>('deployments', DEPLOYMENTS, (keys, e) => this.onDeployment(keys, e, expectations), children)
      .owns<'services', V1Service>('services', SERVICES, (keys, e) => this.onService(keys, e, expectations), children)
      .owns<'podDisruptionBudgets', V1PodDisruptionBudget>(
        'podDisruptionBudgets',
        PDBS,
        (keys, e) => this.onChild(keys, e, expectations),
        children,
      )
      .owns<'networkPolicies', V1NetworkPolicy>(
        'networkPolicies',
        NETWORK_POLICIES,
        (keys, e) => this.onChild(keys, e, expectations),
        children,
      )
      .watches<'pods', V1Pod>('pods', OUR_PODS, (keys, e) => this.onPod(keys, e), {
        transform: podSummary,
        indexers: { [OWNER_INDEX]: ownerIndex },
      })
      .watches<'replicaSets', V1ReplicaSet>('replicaSets', OUR_REPLICA_SETS, (keys, e) => this.onReplicaSet(keys, e), {
        transform: replicaSetSummary,
        indexers: { [OWNER_INDEX]: ownerIndex },
      })
      .complete(
        (caches) => {
          const reconciler = new Reconciler({
            kinds: this.kinds,
            ...caches,
            expectations,
            rest,
            events: new EventRecorder(rest, settings.fieldManager, log),
            fieldManager: settings.fieldManager,
            log,
            renders: new RenderCache(),
            pacer: new StatusPacer(settings.statusIntervalMs),
            ownStatusWrites: this.ownStatusWrites,
            conflicts: this.conflicts,
            deletedChildren,
          });
          return (key, log) => reconciler.reconcile(key, log);
        },
        // Failing CRs back off up to DEGRADED_RETRY_SECONDS: a cause that ends without an event the
        // operator sees (a NodePort freed outside the watched namespaces) is noticed at the next retry.
        { workers: settings.workers, maxDelayMs: settings.degradedRetrySeconds * 1000 },
        // One queue for all kinds; a key's first segment is its kind, the metrics' controller label.
        queueHooks(metrics, 'appkind', (key) => key.split('/')[0]!),
      );
    metrics.countResources(() =>
      [...this.controller.caches.crs].map(([kind, cache]) => ({ kind, resources: cache.informers.flatMap((i) => i.list()) })),
    );
  }

  /**
   * A CR event: its key. A change of its status only that is our own status write, watched back, runs
   * it again unless it is failing: it must not cut short the backoff of a CR whose failure message
   * differs at every try, or apply, status and Event would loop at the speed of the API server. A
   * status someone else wrote runs it at once, to put the status right.
   */
  private onCr(keys: KeySink, { type, obj, old, source }: WatchEvent<CachedResource>): void {
    const key = refKey(refOf(source.kind, obj));
    if (type === 'delete') {
      this.ownStatusWrites.forget(key);
      this.deletedChildren.ownerDeleted(obj.metadata.uid);
    }
    this.nodePortWaits.observe(key, type !== 'delete' && waitsForNodePort(obj));
    if (type === 'update' && statusOnlyChange(old, obj) && this.ownStatusWrites.isOwn(key, obj.metadata?.resourceVersion)) {
      keys.addUnlessFailing(key);
    } else {
      if (type === 'update' && statusOnlyChange(old, obj)) this.log.debug('status written by someone else; reconciling', { key });
      keys.add(key);
    }
  }

  /** A Deployment event: its CR, when a change reconcile reads (not each status tick of the controller). */
  private onDeployment(keys: KeySink, { type, obj, old }: WatchEvent<V1Deployment>, expectations: Expectations): void {
    expectations.observed('Deployment', obj);
    this.deletedChildren.observed('Deployment', obj, type === 'delete');
    if (type !== 'update' || deploymentChanged(old, obj)) this.ownerOf(keys, obj);
    if (type === 'delete') this.conflictingWith(keys, 'Deployment', obj);
  }

  /** A Service event: its CR, and the CRs waiting for a NodePort it gave up. */
  private onService(keys: KeySink, { type, obj, old }: WatchEvent<V1Service>, expectations: Expectations): void {
    expectations.observed('Service', obj);
    this.deletedChildren.observed('Service', obj, type === 'delete');
    this.ownerOf(keys, obj);
    this.waitingFor(keys, freedNodePorts(type, obj, old));
    if (type === 'delete') this.conflictingWith(keys, 'Service', obj);
  }

  /**
   * A PodDisruptionBudget or NetworkPolicy event: its CR, unless only its status changed (the
   * disruption controller's counts tick with every pod; status reads nothing of them).
   */
  private onChild(keys: KeySink, { type, obj, old, source }: WatchEvent<KubernetesObject>, expectations: Expectations): void {
    expectations.observed(source.kind, obj);
    this.deletedChildren.observed(source.kind, obj, type === 'delete');
    if (type !== 'update' || !statusOnlyChange(old, obj)) this.ownerOf(keys, obj);
    if (type === 'delete') this.conflictingWith(keys, source.kind, obj);
  }

  /** A pod belongs to the CR named by its instance label, of every kind whose app name it carries. */
  private onPod(keys: KeySink, { type, obj, old }: WatchEvent<V1Pod>): void {
    if (type === 'update' && !podChanged(old, obj)) return;
    const labels = obj.metadata?.labels ?? {};
    const instance = labels[ContainerApp.INSTANCE_LABEL];
    if (!instance) return;
    for (const kind of this.kinds.values()) {
      if (labels[ContainerApp.NAME_LABEL] === kind.appName)
        keys.add(refKey({ kind: kind.kind, namespace: obj.metadata!.namespace, name: instance }));
    }
  }

  /**
   * A ReplicaSet added: status lists a pod only once its ReplicaSet is known to be the CR's
   * Deployment's, so pods watched before their ReplicaSet bring their CR back now. Nothing else of a
   * ReplicaSet enqueues (its status ticks are the Deployment's, watched there).
   */
  private onReplicaSet(keys: KeySink, { type, obj }: WatchEvent<V1ReplicaSet>): void {
    const { pods, deployments } = this.controller.caches;
    if (type !== 'add' || pods.byIndex(OWNER_INDEX, obj.metadata!.uid!).length === 0) return;
    const owner = controllerOf(obj);
    const deployment = owner?.kind === 'Deployment' ? deployments.get(obj.metadata!.namespace, owner.name) : undefined;
    if (deployment && deployment.metadata?.uid === owner!.uid) this.ownerOf(keys, deployment);
  }

  private ownerOf(keys: KeySink, obj: KubernetesObject): void {
    const owner = controllerOf(obj);
    const kind = owner && this.kinds.get(owner.kind);
    if (kind && owner.apiVersion === AppKindCrd.apiVersionOf(kind))
      keys.add(refKey({ kind: kind.kind, namespace: obj.metadata!.namespace, name: owner.name }));
  }

  /**
   * A Service gave up NodePorts (deleted, or changed to others): the Degraded CRs asking for one of
   * them run now instead of at their next backoff retry, which may be a minute away; their backoff
   * starts again from its base, since the port may be released a moment after the event is watched.
   */
  private waitingFor(keys: KeySink, ports: number[]): void {
    for (const port of ports) {
      this.retryNow(
        keys,
        NODE_PORT_INDEX,
        String(port),
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
  private conflictingWith(keys: KeySink, kind: string, obj: KubernetesObject): void {
    const owner = controllerOf(obj)?.uid;
    this.retryNow(
      keys,
      CHILD_NAME_INDEX,
      refKey(refOf(kind, obj)),
      (cr) => cr.metadata.uid !== owner, // its own child: ownerOf did
      'conflicting object deleted; retrying the CR whose child takes its name',
      { object: describeObject({ ...obj, kind }) },
    );
  }

  /** Retries at once every CR under `value` in the CR caches' `index` that `blocked` picks. */
  private retryNow(
    keys: KeySink,
    index: string,
    value: string,
    blocked: (cr: CachedResource) => boolean,
    msg: string,
    fields: Record<string, unknown>,
  ): void {
    for (const [kind, cache] of this.controller.caches.crs) {
      for (const cr of cache.byIndex(index, value)) {
        if (!blocked(cr)) continue;
        const key = refKey(refOf(kind, cr));
        this.log.debug(msg, { key, ...fields });
        keys.retryNow(key);
      }
    }
  }

  /**
   * Serves `kinds` from now on (the kinds configuration was edited, and is valid): a new kind's CRs
   * are watched and reconciled once listed; a removed kind's CRs are no longer watched (they and
   * their children stay as they are); every CR of a kind whose settings changed is reconciled with
   * them. A kind whose group, version or plural changed is a removed kind plus a new one.
   */
  setKinds(kinds: AppKind[]): KindChanges {
    const next = new Map(kinds.map((k) => [k.kind, k]));
    const changes: KindChanges = { added: [], removed: [], changed: [] };
    const sameResource = (a: AppKind, b: AppKind) => AppKindCrd.apiVersionOf(a) === AppKindCrd.apiVersionOf(b) && a.plural === b.plural;
    for (const [name, old] of this.kinds) {
      const now = next.get(name);
      if (now && sameResource(old, now)) {
        if (JSON.stringify(old) !== JSON.stringify(now)) changes.changed.push(name);
        continue;
      }
      changes.removed.push(name);
      this.kinds.delete(name);
      this.controller.removePrimary('crs', name);
    }
    for (const name of changes.changed) {
      this.kinds.set(name, next.get(name)!);
      for (const informer of this.controller.caches.crs.get(name)?.informers ?? []) {
        for (const cr of informer.list()) this.controller.queue.add(refKey(refOf(name, cr)));
      }
    }
    for (const [name, kind] of next) {
      if (this.kinds.has(name)) continue;
      changes.added.push(name);
      this.kinds.set(name, kind);
      // Resolves once the kind's CRs are listed; until its CRD exists the list is retried (and /readyz says not ready).
      void this.controller.addPrimary('crs', crsOf(kind)).then(() => this.log.info('caches synced', { kinds: [name] }));
    }
    return changes;
  }

  /** The work queue (its depth is logged at shutdown). */
  get queue() {
    return this.controller.queue;
  }

  /** Reconciles running right now (what a shutdown waits for). */
  get inFlight(): number {
    return this.controller.inFlight;
  }

  /** Starts every watch; resolves when all caches hold their first list. */
  async startCaches(): Promise<void> {
    await this.controller.startCaches();
    this.log.info('caches synced', {
      kinds: [...this.kinds.keys()],
      namespaces: this.settings.namespaces.length ? this.settings.namespaces : 'all',
    });
  }

  /** Starts reconciling (on becoming leader, or at once without leader election). */
  startWorkers(): void {
    this.log.info('workers started', { workers: this.settings.workers, statusIntervalMs: this.settings.statusIntervalMs });
    this.controller.startWorkers();
  }

  /** All caches synced: /readyz passes. */
  ready(): boolean {
    return this.controller.ready();
  }

  /**
   * Stops taking work, waits for in-flight reconciles up to graceMs, stops the watches. The client
   * stays open (the lease is released through it); `rest.close()` ends its connections.
   */
  async stop(graceMs: number): Promise<boolean> {
    const finished = await this.controller.stop(graceMs);
    this.conflicts.stop();
    this.nodePortWaits.stop();
    return finished;
  }
}
