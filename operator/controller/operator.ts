import { KubeConfig, KubernetesObject, V1Deployment, V1Pod, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { AppKind, AppKindCrd, ContainerApp } from 'cdk8s-appkind';
import { OWNER_INDEX, ownerIndex, ResourceCache, withOwnManagedFields, withoutManagedFields } from '../runtime/cache.js';
import {
  CHILD_NAME_INDEX,
  childNameIndex,
  childNameKey,
  deploymentChanged,
  freedNodePorts,
  NODE_PORT_INDEX,
  nodePortIndex,
  podChanged,
  podSummary,
  replicaSetSummary,
} from './indexes.js';
import { EventRecorder } from '../runtime/events.js';
import { IndexFunc, Informer, InformerHandler, InformerSource } from '../runtime/informer.js';
import { describeObject } from '../runtime/kube.js';
import { Logger } from '../runtime/log.js';
import { OperatorMetrics, queueHooks } from '../runtime/metrics.js';
import { HandlerResult, WorkQueue } from '../runtime/queue.js';
import { CachedResource, CHILD_SELECTOR, controllerOf, Reconciler, resourceKey } from './reconcile.js';
import { RenderCache } from './render-cache.js';
import { RestClient } from '../runtime/rest.js';
import { OperatorSettings } from '../settings.js';
import { StatusPacer } from './status-pacer.js';

/**
 * The operator's wiring, top-down: for each kind watch its CRs (For), and watch the Deployments,
 * Services and pods carrying our label (Owns); every event becomes a queue key of the owning CR.
 */
export class Operator {
  readonly queue: WorkQueue;
  private readonly caches: ResourceCache<KubernetesObject>[] = [];
  private readonly kinds: Map<string, AppKind>;
  private readonly running = new Set<string>();
  private readonly resources = new Map<string, ResourceCache<CachedResource>>();
  /** The one keep-alive client of the process: caches, reconciles, events and leader election share it. */
  readonly rest: RestClient;

  constructor(
    kc: KubeConfig,
    private readonly settings: OperatorSettings,
    private readonly log: Logger,
    metrics: OperatorMetrics,
  ) {
    this.kinds = new Map(settings.kinds.map((k) => [k.kind, k]));
    const onRequest = (verb: string, code: number) => metrics.apiRequest(verb, code);
    const onThrottled = (method: string, code: number) => metrics.throttled(method, code);
    const rest = (this.rest = new RestClient(kc, onRequest, { onThrottled }));
    interface CacheOpts<T> {
      transform?: (obj: T) => T;
      indexers?: Record<string, IndexFunc<T>>;
    }
    const watch = <T extends KubernetesObject>(
      source: Omit<InformerSource, 'namespace'>,
      onEvent: InformerHandler<T>,
      opts: CacheOpts<T> = {},
    ) => {
      const namespaces = settings.namespaces.length ? settings.namespaces : [undefined];
      const informers = namespaces.map(
        (namespace) =>
          new Informer<T>({ ...source, namespace }, onEvent, {
            staleMs: settings.watchStaleSeconds * 1000,
            log,
            rest,
            onThrottled,
            ...opts,
          }),
      );
      const cache = new ResourceCache<T>(informers);
      this.caches.push(cache as unknown as ResourceCache<KubernetesObject>);
      return cache;
    };

    const resources = this.resources;
    for (const kind of settings.kinds) {
      resources.set(
        kind.kind,
        watch<CachedResource>(
          { apiVersion: AppKindCrd.apiVersionOf(kind), kind: kind.kind, plural: kind.plural },
          (_t, cr) => this.enqueue(kind.kind, cr),
          {
            transform: withoutManagedFields,
            indexers: { [NODE_PORT_INDEX]: nodePortIndex, [CHILD_NAME_INDEX]: childNameIndex },
          },
        ),
      );
    }
    // Deployments and Services: every one in the watched namespaces (as controller-runtime's Owns()
    // does), so a name the cache lacks does not exist and the first apply needs no read; events of
    // objects we do not control enqueue nothing. Pods: only ours, trimmed to what status reads,
    // and only changes status would show enqueue their CR.
    // Children keep our own apply entry of managedFields: what we own, to release what render() stops giving.
    const children = { transform: withOwnManagedFields(settings.fieldManager), indexers: { [OWNER_INDEX]: ownerIndex } };
    // Deployments: only changes reconcile would read enqueue their CR (not each status tick of the controller).
    // Any event of a child's name: the cache now has what the reconciler created (Reconciler.seen).
    const deployments = watch<V1Deployment>(
      { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments' },
      (type, o, old) => {
        reconciler.seen('Deployment', o);
        if (type !== 'update' || deploymentChanged(old, o)) this.enqueueOwner(o);
        if (type === 'delete') this.enqueueConflictingWith('Deployment', o);
      },
      children,
    );
    const services = watch<V1Service>(
      { apiVersion: 'v1', kind: 'Service', plural: 'services' },
      (type, o, old) => {
        reconciler.seen('Service', o);
        this.enqueueOwner(o);
        this.enqueueWaitingFor(freedNodePorts(type, o, old));
        if (type === 'delete') this.enqueueConflictingWith('Service', o);
      },
      children,
    );
    const pods = watch<V1Pod>(
      { apiVersion: 'v1', kind: 'Pod', plural: 'pods', labelSelector: CHILD_SELECTOR },
      (type, o, old) => {
        if (type !== 'update' || podChanged(old, o)) this.enqueueByLabels(o);
      },
      { transform: podSummary, indexers: { [OWNER_INDEX]: ownerIndex } },
    );
    // ReplicaSets (ours only, slimmed to their owners): status lists a pod only when its ReplicaSet is
    // controlled by the CR's own Deployment. A pod watched before its ReplicaSet was left out; the
    // ReplicaSet's add event brings its CR back (nothing else: ReplicaSet status ticks enqueue nothing).
    const replicaSets = watch<V1ReplicaSet>(
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', plural: 'replicasets', labelSelector: CHILD_SELECTOR },
      (type, o) => {
        if (type !== 'add' || pods.byIndex(OWNER_INDEX, o.metadata!.uid!).length === 0) return;
        const deployment = controllerOf(o);
        const live = deployment?.kind === 'Deployment' ? deployments.get(o.metadata!.namespace, deployment.name) : undefined;
        if (live && live.metadata?.uid === deployment!.uid) this.enqueueOwner(live);
      },
      { transform: replicaSetSummary, indexers: { [OWNER_INDEX]: ownerIndex } },
    );

    const reconciler = new Reconciler({
      kinds: this.kinds,
      resources,
      deployments,
      services,
      pods,
      replicaSets,
      rest,
      events: new EventRecorder(rest, settings.fieldManager, log),
      fieldManager: settings.fieldManager,
      log,
      renders: new RenderCache(),
      pacer: new StatusPacer(settings.statusIntervalMs),
    });
    // One queue for all kinds; a key's first segment is its kind, the metrics' controller label.
    // Failing CRs back off up to DEGRADED_RETRY_SECONDS: a cause that ends without an event the
    // operator sees (a NodePort freed outside the watched namespaces, or by the API server's repair
    // loop) is noticed at the next retry.
    this.queue = new WorkQueue(
      (key) => this.run(key, reconciler),
      { workers: settings.workers, maxDelayMs: settings.degradedRetrySeconds * 1000 },
      queueHooks(metrics, 'appkind', (key) => key.split('/')[0]!),
    );
  }

  /** Reconciles running right now (what a shutdown waits for). */
  get inFlight(): number {
    return this.running.size;
  }

  private async run(key: string, reconciler: Reconciler): Promise<HandlerResult> {
    this.running.add(key);
    this.log.debug('reconcile started', { key });
    try {
      return await reconciler.reconcile(key);
    } finally {
      this.running.delete(key);
      this.log.debug('reconcile finished', { key });
    }
  }

  /** Starts every watch; resolves when all caches hold their first list. */
  async startCaches(): Promise<void> {
    await Promise.all(this.caches.map((c) => c.start()));
    this.log.info('caches synced', {
      kinds: [...this.kinds.keys()],
      namespaces: this.settings.namespaces.length ? this.settings.namespaces : 'all',
    });
  }

  /** Starts reconciling (on becoming leader, or at once without leader election). */
  startWorkers(): void {
    this.log.info('workers started', { workers: this.settings.workers, statusIntervalMs: this.settings.statusIntervalMs });
    this.queue.start();
  }

  /** All caches synced: /readyz passes. */
  ready(): boolean {
    return this.caches.every((c) => c.synced);
  }

  /**
   * Stops taking work, waits for in-flight reconciles up to graceMs, stops the watches. The client
   * stays open (the lease is released through it); `rest.close()` ends its connections.
   */
  async stop(graceMs: number): Promise<boolean> {
    const finished = await this.queue.shutdown(graceMs);
    for (const c of this.caches) c.stop();
    return finished;
  }

  private enqueue(kind: string, obj: KubernetesObject): void {
    this.queue.add(resourceKey(kind, obj.metadata!.namespace!, obj.metadata!.name!));
  }

  private enqueueOwner(obj: KubernetesObject): void {
    const owner = controllerOf(obj);
    const kind = owner && this.kinds.get(owner.kind);
    if (kind && owner.apiVersion === AppKindCrd.apiVersionOf(kind))
      this.queue.add(resourceKey(kind.kind, obj.metadata!.namespace!, owner.name));
  }

  /**
   * A Service gave up NodePorts (deleted, or changed to others): the Degraded CRs asking for one of
   * them run now instead of at their next backoff retry, which may be a minute away; their backoff
   * starts again from its base, since the port may be released a moment after the event is watched.
   */
  private enqueueWaitingFor(ports: number[]): void {
    for (const port of ports) {
      this.retryNow(
        NODE_PORT_INDEX,
        String(port),
        (cr) => !!cr.status?.conditions?.some((c) => c.type === 'Degraded' && c.status === 'True'),
        'NodePort freed; retrying the CR asking for it',
        { nodePort: port },
      );
    }
  }

  /**
   * A Deployment or Service was deleted: a CR whose child takes its name and did not own it was
   * Degraded NameConflict because of it, and runs now instead of at its next backoff retry, which may
   * be DEGRADED_RETRY_SECONDS away; its backoff starts again from its base. Its status is not looked
   * at: a conflict written a moment ago may not be in the cache yet, and a CR that was not blocked
   * costs one no-op reconcile.
   */
  private enqueueConflictingWith(kind: 'Deployment' | 'Service', obj: KubernetesObject): void {
    const owner = controllerOf(obj)?.uid;
    this.retryNow(
      CHILD_NAME_INDEX,
      childNameKey(kind, obj.metadata?.namespace, obj.metadata!.name!),
      (cr) => cr.metadata.uid !== owner, // its own child: enqueueOwner did
      'conflicting object deleted; retrying the CR whose child takes its name',
      { object: describeObject({ ...obj, kind }) },
    );
  }

  /**
   * Runs at once, with its failures forgotten, every CR under `value` in the CR caches' `index` that
   * `blocked` picks: an event says the cause of its failure may be gone.
   */
  private retryNow(
    index: string,
    value: string,
    blocked: (cr: CachedResource) => boolean,
    msg: string,
    fields: Record<string, unknown>,
  ): void {
    for (const [kind, cache] of this.resources) {
      for (const cr of cache.byIndex(index, value)) {
        if (!blocked(cr)) continue;
        const key = resourceKey(kind, cr.metadata.namespace!, cr.metadata.name!);
        this.log.debug(msg, { key, ...fields });
        this.queue.forget(key);
        this.queue.add(key);
      }
    }
  }

  /** A pod belongs to the CR named by its instance label, of every kind whose app name it carries. */
  private enqueueByLabels(pod: KubernetesObject): void {
    const labels = pod.metadata?.labels ?? {};
    const instance = labels[ContainerApp.INSTANCE_LABEL];
    if (!instance) return;
    for (const kind of this.kinds.values()) {
      if (labels[ContainerApp.NAME_LABEL] === kind.appName) this.queue.add(resourceKey(kind.kind, pod.metadata!.namespace!, instance));
    }
  }
}
