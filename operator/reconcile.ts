import { KubernetesObject, V1Deployment, V1OwnerReference, V1Pod, V1Service } from '@kubernetes/client-node';
import { AppKind, ContainerApp } from 'cdk8s-appkind';
import { AppResource, appPropsFor, KubeObject, render } from './render.js';
import { drift as driftOf } from './apply.js';
import { ResourceCache } from './cache.js';
import { EventRecorder } from './events.js';
import { apiFailure, describeObject } from './kube.js';
import { Logger } from './log.js';
import { imagePolicyFailure } from './policy.js';
import { RestClient } from './rest.js';
import { AppStatus, computeStatus, podsRefusedEvent, ReconcileFailure, replicaFailureOf, statusEqual } from './status.js';

/** A CR as cached: an app resource with the status we wrote. */
export type CachedResource = AppResource & KubernetesObject & { status?: Partial<AppStatus> };

/** The label every child carries; the operator's caches of Deployments, Services and pods select on it. */
export const CHILD_SELECTOR = `${ContainerApp.MANAGED_BY_LABEL}=${ContainerApp.DEFAULT_MANAGED_BY}`;

/** A reconcile that could not converge; the queue retries it with backoff. */
export class ReconcileError extends Error {
  constructor(readonly failure: ReconcileFailure) {
    super(`${failure.reason}: ${failure.message}`);
  }
}

export interface ReconcilerDeps {
  readonly kinds: ReadonlyMap<string, AppKind>;
  readonly resources: ReadonlyMap<string, ResourceCache<CachedResource>>;
  readonly deployments: ResourceCache<V1Deployment>;
  readonly services: ResourceCache<V1Service>;
  readonly pods: ResourceCache<V1Pod>;
  readonly rest: RestClient;
  readonly events: EventRecorder;
  readonly fieldManager: string;
  readonly log: Logger;
  readonly now?: () => Date;
}

/** Queue key of a CR. */
export function resourceKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** The controller ownerReference of an object, if any. */
export function controllerOf(obj: KubernetesObject): V1OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller);
}

/**
 * reconcile(key): level-based and idempotent. Reads the CR and its children from the caches,
 * applies what render() gives when it differs from the live objects, prunes children no longer
 * rendered, and writes status only when it changed.
 */
export class Reconciler {
  constructor(private readonly deps: ReconcilerDeps) {}

  async reconcile(key: string): Promise<void> {
    const [kindName, namespace, name] = key.split('/') as [string, string, string];
    const kind = this.deps.kinds.get(kindName);
    const cr = this.deps.resources.get(kindName)?.get(namespace, name);
    if (!kind || !cr || cr.metadata.deletionTimestamp) return; // gone: the garbage collector removes the children
    const log = this.deps.log.child({ key });

    // A refused image is never rendered, so nothing is applied or pruned: existing children stay as they were.
    let failure: ReconcileFailure | undefined = imagePolicyFailure(kind, cr);
    let desired: KubeObject[] = [];
    if (!failure) {
      try {
        desired = render(kind, cr).map((obj) => this.owned(obj, cr));
      } catch (e) {
        failure = { reason: 'InvalidSpec', message: (e as Error).message };
      }
    }
    for (const obj of desired) {
      failure ??= await this.applyOne(obj, cr, log);
    }
    if (!failure) failure = await this.prune(cr, desired, log);
    await this.writeStatus(kind, cr, failure, log);
    if (failure) {
      const previous = cr.status?.conditions?.find((c) => c.type === 'Degraded');
      if (previous?.status !== 'True' || previous.message !== failure.message) {
        await this.deps.events.record(cr, 'Warning', failure.reason, failure.message, log);
      }
      throw new ReconcileError(failure);
    }
  }

  private owned(obj: KubeObject, cr: CachedResource): KubeObject {
    const owner: V1OwnerReference = {
      apiVersion: cr.apiVersion, kind: cr.kind, name: cr.metadata.name, uid: cr.metadata.uid!, controller: true, blockOwnerDeletion: true,
    };
    return { ...obj, metadata: { ...obj.metadata, namespace: cr.metadata.namespace, ownerReferences: [owner] } } as KubeObject;
  }

  private cacheFor(kind: string): ResourceCache<KubernetesObject> | undefined {
    if (kind === 'Deployment') return this.deps.deployments;
    if (kind === 'Service') return this.deps.services;
    return undefined;
  }

  /** Applies one child unless the live object already holds it. */
  private async applyOne(obj: KubeObject, cr: CachedResource, log: Logger): Promise<ReconcileFailure | undefined> {
    let live = this.cacheFor(obj.kind)?.get(obj.metadata.namespace, obj.metadata.name);
    try {
      live ??= await this.deps.rest.get(obj);
    } catch (e) {
      return { reason: 'ReadFailed', message: `${describeObject(obj)}: ${apiFailure(e).message}` };
    }
    if (live && controllerOf(live)?.uid !== cr.metadata.uid) {
      return {
        reason: 'NameConflict',
        message: `${describeObject(obj)} already exists and is not owned by ${cr.kind} ${cr.metadata.namespace}/${cr.metadata.name}; delete or rename it, or rename the ${cr.kind}`,
      };
    }
    const drift = driftOf(obj, live);
    if (!drift) return undefined;
    try {
      await this.deps.rest.apply(obj, this.deps.fieldManager);
      log.info(live ? 'applied drifted object' : 'created object', { object: describeObject(obj), field: live ? drift : undefined });
      return undefined;
    } catch (e) {
      const f = apiFailure(e);
      log.warn('apply failed', { object: describeObject(obj), code: f.code, error: f.message });
      return { reason: 'ApplyFailed', message: `${describeObject(obj)}: ${f.message}` };
    }
  }

  /** Deletes children this CR controls that render() no longer returns. */
  private async prune(cr: CachedResource, desired: KubeObject[], log: Logger): Promise<ReconcileFailure | undefined> {
    const keep = new Set(desired.map((o) => `${o.kind}/${o.metadata.name}`));
    const children = [...this.deps.deployments.list(cr.metadata.namespace), ...this.deps.services.list(cr.metadata.namespace)]
      .filter((o) => controllerOf(o)?.uid === cr.metadata.uid && !keep.has(`${o.kind}/${o.metadata?.name}`));
    for (const child of children) {
      try {
        await this.deps.rest.delete(child);
        log.info('pruned object no longer rendered', { object: describeObject(child) });
      } catch (e) {
        const f = apiFailure(e);
        if (f.code !== 404) return { reason: 'PruneFailed', message: `${describeObject(child)}: ${f.message}` };
      }
    }
    return undefined;
  }

  private async writeStatus(kind: AppKind, cr: CachedResource, failure: ReconcileFailure | undefined, log: Logger): Promise<void> {
    const ns = cr.metadata.namespace!;
    const props = appPropsFor(kind, cr);
    // The same names and labels the construct gives the children.
    const selectorLabels = ContainerApp.selectorLabelsOf(props.name!, props.appName!);
    const names = ContainerApp.objectNames(props.name!);
    const deployment = this.deps.deployments.get(ns, names.deployment);
    const status = computeStatus({
      size: props.replicas ?? 1,
      generation: cr.metadata.generation,
      selectorLabels,
      deployment,
      service: this.deps.services.get(ns, names.service),
      pods: this.deps.pods.list(ns).filter((p) => Object.entries(selectorLabels).every(([k, v]) => p.metadata?.labels?.[k] === v)),
      failure,
      previous: cr.status,
      now: this.deps.now?.() ?? new Date(),
    });
    if (statusEqual(cr.status, status)) return;
    try {
      // A merge patch keeps fields it does not mention: null removes a NodePort that is gone.
      await this.deps.rest.patchStatus(cr, { ...status, nodePort: status.nodePort ?? null });
      log.info('status updated', { replicas: status.replicas, readyReplicas: status.readyReplicas, nodes: status.nodes.length, nodePort: status.nodePort });
      // Pods refused by admission (quota, Pod Security, LimitRange): say so where the CR's author looks.
      const refused = podsRefusedEvent(cr.status, status, replicaFailureOf(deployment));
      if (refused) await this.deps.events.record(cr, 'Warning', refused.reason, refused.message, log);
    } catch (e) {
      const f = apiFailure(e);
      if (f.code === 404) return; // deleted meanwhile
      throw new ReconcileError({ reason: 'StatusUpdateFailed', message: `${cr.kind} ${ns}/${cr.metadata.name}: ${f.message}` });
    }
  }
}
