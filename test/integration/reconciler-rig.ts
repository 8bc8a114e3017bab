// A Reconciler built by hand against the shared control plane, over informers of one test namespace
// that a test may stop: a cache that stopped watching reproduces a race between watches deterministically.
import { KubernetesObject, V1Deployment, V1NetworkPolicy, V1Pod, V1PodDisruptionBudget, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { DeletedChildren } from '../../operator/controller/deleted-children.js';
import { CachedResource, Reconciler } from '../../operator/controller/reconcile.js';
import { OWNER_INDEX, ownerIndex, ResourceCache, withOwnManagedFields, withoutManagedFields } from '../../operator/runtime/cache.js';
import { EventRecorder } from '../../operator/runtime/events.js';
import { Informer, InformerHandler, InformerSource } from '../../operator/runtime/informer.js';
import { silentLogger } from '../../operator/runtime/log.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { createTestNamespace, readSharedAuditLog, sharedCluster } from './cluster.js';
import { installCrds } from './operator-process.js';

/** The operator's field manager, so what the rig writes is owned as the operator's writes are. */
export const MANAGER = 'appkind-operator';

/** The caches a rig's Reconciler reads; the ones left out are empty. */
export interface RigCaches {
  readonly crs: ResourceCache<CachedResource>;
  readonly deployments?: ResourceCache<V1Deployment>;
  readonly services?: ResourceCache<V1Service>;
  readonly deletedChildren?: DeletedChildren;
}

export class ReconcilerRig {
  private readonly informers: Informer<KubernetesObject>[] = [];

  private constructor(readonly rest: RestClient, readonly ns: string, readonly kind: AppKind) {}

  /** A fresh namespace (`prefix`-...) with the CRD of `kind` installed. */
  static async start(prefix: string, kind: AppKind): Promise<ReconcilerRig> {
    const kc = sharedCluster().kubeConfig;
    const rest = new RestClient(kc);
    await installCrds(kc, [kind]);
    return new ReconcilerRig(rest, await createTestNamespace(kc, prefix), kind);
  }

  /** A started informer of one resource in the test namespace; resolves once it listed. */
  async informer<T extends KubernetesObject>(
    source: Omit<InformerSource, 'namespace'>,
    handler: InformerHandler<T> = () => undefined,
    opts: { transform?: (o: T) => T; indexers?: Record<string, (o: T) => string[]> } = {},
  ): Promise<Informer<T>> {
    const i = new Informer<T>({ ...source, namespace: this.ns }, handler, { staleMs: 60_000, log: silentLogger, rest: this.rest, ...opts });
    this.informers.push(i as unknown as Informer<KubernetesObject>);
    await i.start();
    return i;
  }

  /** An informer of the kind's CRs, cached as the operator caches them. */
  crInformer<T extends CachedResource>(): Promise<Informer<T>> {
    const { group, version, kind, plural } = this.kind;
    return this.informer<T>({ apiVersion: `${group}/${version}`, kind, plural }, () => undefined, { transform: withoutManagedFields });
  }

  /** Informers of the Deployments and Services, cached and indexed as the operator caches its children. */
  async childInformers(handler: (kind: 'Deployment' | 'Service') => InformerHandler<KubernetesObject> = () => () => undefined): Promise<{ deployments: Informer<V1Deployment>; services: Informer<V1Service> }> {
    const children = { transform: withOwnManagedFields(MANAGER), indexers: { [OWNER_INDEX]: ownerIndex } };
    const deployments = await this.informer<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments' }, handler('Deployment'), children);
    const services = await this.informer<V1Service>({ apiVersion: 'v1', kind: 'Service', plural: 'services' }, handler('Service'), children);
    return { deployments, services };
  }

  /** A Reconciler of the kind over `caches`, writing as the operator does, silent. */
  reconciler(caches: RigCaches): Reconciler {
    return new Reconciler({
      kinds: new Map([[this.kind.kind, this.kind]]),
      crs: new Map([[this.kind.kind, caches.crs]]),
      deployments: caches.deployments ?? new ResourceCache<V1Deployment>([]),
      services: caches.services ?? new ResourceCache<V1Service>([]),
      podDisruptionBudgets: new ResourceCache<V1PodDisruptionBudget>([]),
      networkPolicies: new ResourceCache<V1NetworkPolicy>([]),
      pods: new ResourceCache<V1Pod>([]),
      replicaSets: new ResourceCache<V1ReplicaSet>([]),
      rest: this.rest,
      events: new EventRecorder(this.rest, MANAGER, silentLogger),
      fieldManager: MANAGER,
      log: silentLogger,
      memory: { deletedChildren: caches.deletedChildren },
    });
  }

  /** A reference to the Deployment `name` of the test namespace. */
  deploymentRef(name: string): KubernetesObject {
    return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: this.ns } };
  }

  /** A reference to the Service `name` of the test namespace. */
  serviceRef(name: string): KubernetesObject {
    return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: this.ns } };
  }

  /** `verb name code` of the writes to `names` in the test namespace after `since`, from the audit log (subresources left out). */
  async writesTo(names: string[], since: string, verbs: string[]): Promise<string[]> {
    return (await readSharedAuditLog())
      .filter((e) => e.stageTimestamp > since && e.objectRef?.namespace === this.ns && names.includes(e.objectRef.name ?? '') &&
        !e.objectRef.subresource && verbs.includes(e.verb))
      .map((e) => `${e.verb} ${e.objectRef?.name} ${e.responseStatus?.code}`);
  }

  /** Stops every informer and closes the client. */
  stop(): void {
    for (const i of this.informers) i.stop();
    this.rest.close();
  }
}
