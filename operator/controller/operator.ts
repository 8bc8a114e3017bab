// The app-kind controller's wiring: what it watches, which events count, how each maps to the key of
// the CR it concerns (app-events.ts), and what reconciles a key, in one statement.
import { V1Deployment, V1NetworkPolicy, V1Pod, V1PodDisruptionBudget, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { OWNER_INDEX, ownerIndex, withOwnManagedFields, withoutManagedFields } from '../runtime/cache.js';
import { Controller, ControllerBuilder, Reconcile, WatchContext, WatchSource } from '../runtime/controller.js';
import { QueueHooks, QueueOptions } from '../runtime/queue.js';
import { AppEvents, AppObservers, AppWatches } from './app-events.js';
import { NODE_PORT_INDEX, nodePortIndex, podSummary, replicaSetSummary } from './indexes.js';
import { ReconcilerMemory } from './memory.js';
import { added, deploymentRead, notStatusOnly, podRead } from './predicates.js';
import { CachedResource, CHILD_SELECTOR, Reconciler, ReconcilerCaches, ReconcilerDeps } from './reconcile.js';

/**
 * Our Deployments: those carrying the children's label, so the cache (and the watch events of every
 * Deployment status update in the cluster) grows with our objects, not with the cluster's. Someone
 * else's Deployment that takes a child's name is found by the create-only first apply and watched by
 * name while it blocks a CR (ConflictWatches).
 */
const DEPLOYMENTS: WatchSource<V1Deployment> = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  plural: 'deployments',
  labelSelector: CHILD_SELECTOR,
};
/**
 * Our Services: those carrying the children's label, as the Deployments. A Service of someone else's
 * that takes a child's name is met by the create-only first apply and watched by name while it blocks
 * a CR (ConflictWatches); one that holds a NodePort a CR asks for is seen by the watch of every Service
 * that runs only while some CR waits for a port (NodePortWaits).
 */
const SERVICES: WatchSource<V1Service> = { apiVersion: 'v1', kind: 'Service', plural: 'services', labelSelector: CHILD_SELECTOR };
/** Our PodDisruptionBudgets and NetworkPolicies (a kind renders them when it asks), label-selected as the Deployments. */
const PDBS: WatchSource<V1PodDisruptionBudget> = {
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  plural: 'poddisruptionbudgets',
  labelSelector: CHILD_SELECTOR,
};
const NETWORK_POLICIES: WatchSource<V1NetworkPolicy> = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  plural: 'networkpolicies',
  labelSelector: CHILD_SELECTOR,
};
/** Only our pods: status reads nothing else of pods. */
const OUR_PODS: WatchSource<V1Pod> = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', labelSelector: CHILD_SELECTOR };
/** Our ReplicaSets: which pods belong to a CR's own Deployment. */
const OUR_REPLICA_SETS: WatchSource<V1ReplicaSet> = {
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  plural: 'replicasets',
  labelSelector: CHILD_SELECTOR,
};

/** The CRs of a kind. */
export function crsOf(kind: AppKind): WatchSource<CachedResource> {
  return { apiVersion: AppKindCrd.apiVersionOf(kind), kind: kind.kind, plural: kind.plural };
}

/** What the reconciler needs besides the caches and its memory. */
export type ReconcilerNeeds = Omit<ReconcilerDeps, keyof ReconcilerCaches | 'memory'>;

/** What wiring the controller takes: the kinds served at start, the mappings, the reconciler's needs, the queue's settings. */
export interface AppKindWiring {
  readonly kinds: readonly AppKind[];
  readonly fieldManager: string;
  /** The mappings of events to keys (reading the reconciler's memory, not writing it). */
  readonly on: AppEvents;
  /** What each event tells the reconciler's memory and the expectations, before any mapping. */
  readonly observe: AppObservers;
  /** The reconciler's memory: it builds the conflict and NodePort watches, which the controller starts and stops; the reconciler reads and writes it. */
  readonly memory: ReconcilerMemory;
  readonly reconciler: ReconcilerNeeds;
  readonly queue: QueueOptions;
  readonly hooks: QueueHooks;
}

/** The app-kind controller: every configured kind's CRs and their children. */
export function appKindController(
  ctx: WatchContext,
  { kinds, fieldManager, on, observe, memory, reconciler, queue, hooks }: AppKindWiring,
): Controller<AppWatches> {
  const crs = { transform: withoutManagedFields, indexers: { [NODE_PORT_INDEX]: nodePortIndex } };
  // Children keep our own apply entry of managedFields: what we own, to release what render() stops giving.
  const children = {
    transform: withOwnManagedFields(fieldManager),
    indexers: { [OWNER_INDEX]: ownerIndex },
    observe: observe.childObserved,
  };
  const owned = { indexers: { [OWNER_INDEX]: ownerIndex } };
  return ControllerBuilder.create<AppWatches>('appkind', ctx)
    .for('crs', kinds.map(crsOf), on.crKey, { ...crs, observe: observe.crObserved })
    .owns('deployments', DEPLOYMENTS, { ...children, predicates: [deploymentRead], also: [on.nameTakers] })
    .owns('services', SERVICES, { ...children, also: [on.portWaiters, on.nameTakers] })
    .owns('podDisruptionBudgets', PDBS, { ...children, predicates: [notStatusOnly], also: [on.nameTakers] })
    .owns('networkPolicies', NETWORK_POLICIES, { ...children, predicates: [notStatusOnly], also: [on.nameTakers] })
    .watches('pods', OUR_PODS, on.podKeys, { ...owned, transform: podSummary, predicates: [podRead] })
    .watches('replicaSets', OUR_REPLICA_SETS, on.replicaSetKey, { ...owned, transform: replicaSetSummary, predicates: [added] })
    .watchesWhile('conflicts', (ctx, keys, w) => memory.watchConflicts(ctx, on.nameTakersOfGone(keys, w)))
    .watchesWhile('nodePortWaits', (ctx, keys, w) =>
      memory.watchNodePorts(ctx, on.portWaitersOfFreed(keys, w), (key) => keys.retryNow(key)),
    )
    .complete((w) => reconcilerOf(new Reconciler({ ...reconciler, ...w, memory })), queue, hooks);
}

/** What the queue runs for a key. */
function reconcilerOf(reconciler: Reconciler): Reconcile {
  return (key, log) => reconciler.reconcile(key, log);
}
