// The reconciler: one CR's children applied from what render() gives, the ones no longer rendered pruned,
// and its status written; level-based, reading everything from the caches each time.
// One concern past 350 lines: a reconcile is one pass over one CR, and its steps (read, refuse, apply,
// prune, status) share that pass's state; what each step computes lives elsewhere (diff.ts, policy.ts,
// status.ts, pod-problems.ts), so what stays here is the order of the steps and the failures between them.
import {
  KubernetesObject,
  V1Deployment,
  V1NetworkPolicy,
  V1OwnerReference,
  V1Pod,
  V1PodDisruptionBudget,
  V1ReplicaSet,
  V1Service,
} from '@kubernetes/client-node';
import { AppKind, ContainerApp, ContainerAppProps } from 'cdk8s-appkind';
import { AppResource, appPropsFor, KubeObject, render } from '../kinds/render.js';
import { appliedFieldsOf, drift as driftOf, firstReleased, isSubset, withOmittedZeros } from './diff.js';
import { CacheReader, OWNER_INDEX } from '../runtime/cache.js';
import { Expectations } from '../runtime/expectations.js';
import { controllerOf, describeObject, parseRefKey, refKey, refOf } from '../runtime/ref.js';
import { EventRecorder } from '../runtime/events.js';
import { apiFailure, ApiFailure } from '../runtime/api-failure.js';
import { Logger, reconcileFields } from '../runtime/log.js';
import { imagePolicyFailure, specBoundsFailure } from './policy.js';
import { HandlerResult } from '../runtime/queue.js';
import { RenderCache, Rendered } from './render-cache.js';
import { isCreateOnlyRefusal, KubeClient } from '../runtime/rest.js';
import { StatusPacer, urgent } from './status-pacer.js';
import type { ReconcilerFacts } from './memory.js';
import { throttleDelayMs, ThrottledError } from '../runtime/throttle.js';
import { KUBELET_FAILURE_REASONS, podProblem } from './pod-problems.js';
import {
  AppStatus,
  computeStatus,
  kubeletFailureEvent,
  podsRefusedEvent,
  ReconcileFailure,
  replicaFailureOf,
  statusChanges,
  statusEqual,
} from './status.js';

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

/** The caches a reconcile reads, named as the controller's watches (AppWatches holds them as built). */
export interface ReconcilerCaches {
  /** Every kind's CRs, by kind. */
  readonly crs: ReadonlyMap<string, CacheReader<CachedResource>>;
  readonly deployments: CacheReader<V1Deployment>;
  readonly services: CacheReader<V1Service>;
  /** Children a kind renders when it asks for them (podDisruptionBudget, networkPolicy): cached as the others, to compare and prune. */
  readonly podDisruptionBudgets: CacheReader<V1PodDisruptionBudget>;
  readonly networkPolicies: CacheReader<V1NetworkPolicy>;
  readonly pods: CacheReader<V1Pod>;
  /** The app's ReplicaSets, slimmed to their owners: which pods belong to a CR's Deployment. */
  readonly replicaSets: CacheReader<V1ReplicaSet>;
}

export interface ReconcilerDeps extends ReconcilerCaches {
  readonly kinds: ReadonlyMap<string, AppKind>;
  /** Children this process created that the caches may not show yet. */
  readonly expectations?: Expectations;
  readonly rest: KubeClient;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly fieldManager: string;
  readonly log: Logger;
  readonly now?: () => Date;
  /** render() remembered per CR spec; a fresh one when not given. */
  readonly renders?: RenderCache;
  /** Coalesces status writes during a rollout; none (write every change) when not given. */
  readonly pacer?: StatusPacer;
  /**
   * What the reconciler remembers between reconciles (memory.ts): its own status writes, children seen
   * deleted while their CR was cached, the objects of someone else's that take a CR's child names.
   */
  readonly memory?: ReconcilerFacts;
}

/** Throws ThrottledError when the server throttled the request: no failure of the CR, only "later". */
function throwIfThrottled(f: ApiFailure, what: string): void {
  if (f.retryAfterMs !== undefined)
    throw new ThrottledError(`${what}: throttled by the API server (HTTP ${f.code}): ${f.message}`, throttleDelayMs(0, f.retryAfterMs));
}

/** Degraded NameConflict: `obj`'s name is taken by an object `cr` does not control (never adopted or written). */
function nameConflict(obj: KubeObject, cr: CachedResource): ReconcileFailure {
  return {
    reason: 'NameConflict',
    message: `${describeObject(obj)} already exists and is not owned by ${cr.kind} ${cr.metadata.namespace}/${cr.metadata.name}; delete or rename it, or rename the ${cr.kind}`,
  };
}

/** The rendered Deployment's pod template. */
function templateOf(deployment: KubernetesObject | undefined): unknown {
  return (deployment as V1Deployment | undefined)?.spec?.template;
}

/** What the kind's rollout said of this reconcile's app (waves.ts). */
interface WaveTurn {
  /** The Deployment render() gives with the kind's current settings. */
  readonly target: KubeObject;
  /** The app waits for its turn: its Deployment keeps the pod template it holds. */
  readonly held: boolean;
}

/**
 * reconcile(key): level-based and idempotent. Reads the CR and its children from the caches,
 * applies what render() gives when it differs from the live objects, prunes children no longer
 * rendered, and writes status only when it changed.
 */
export class Reconciler {
  private readonly renders: RenderCache;
  private readonly expectations: Expectations;

  constructor(private readonly deps: ReconcilerDeps) {
    this.renders = deps.renders ?? new RenderCache();
    this.expectations = deps.expectations ?? new Expectations();
  }

  /** Resolves with a delay when a coalesced status change still waits to be written. */
  async reconcile(key: string, log: Logger = this.deps.log.child(reconcileFields(key))): Promise<HandlerResult> {
    const ref = parseRefKey(key);
    const kind = this.deps.kinds.get(ref.kind);
    const cached = this.deps.crs.get(ref.kind)?.get(ref.namespace, ref.name);
    if (!kind || !cached || cached.metadata.deletionTimestamp) {
      // gone: the garbage collector removes the children
      this.renders.forget(ref);
      this.deps.pacer?.forget(key);
      this.deps.memory?.conflicts?.observe(key, []);
      return;
    }
    // Our last status write, when the cache has not shown it yet: compared with the status before it,
    // the same status would be written again (and a new failure's Event recorded twice).
    const ahead = this.deps.memory?.ownStatusWrites?.statusAhead(key, cached.metadata.resourceVersion);
    const cr: CachedResource = ahead ? { ...cached, status: ahead } : cached;

    // A spec out of the CRD's bounds or a refused image is never rendered, so nothing is applied or
    // pruned: existing children stay as they were.
    let failure: ReconcileFailure | undefined = specBoundsFailure(kind, cr) ?? imagePolicyFailure(kind, cr);
    let desired: KubeObject[] = [];
    let rendered: Rendered | undefined;
    if (!failure) {
      try {
        rendered = this.renders.render(kind, cr);
        desired = rendered.objects.map((obj) => this.owned(obj, cr));
      } catch (e) {
        failure = { reason: 'InvalidSpec', message: (e as Error).message };
      }
    }
    // A kind-level change rolls a running app only in its turn; until then its pod template stays.
    const wave = failure ? undefined : this.waveTurn(kind, cr, key, desired);
    if (wave?.held) desired = desired.map((o) => (o === wave.target ? this.keepTemplate(o, kind, cr) : o));
    if (await this.goneMeanwhile(cr, desired, log)) {
      this.renders.forget(ref);
      this.deps.pacer?.forget(key);
      this.deps.memory?.conflicts?.observe(key, []);
      return;
    }
    // What status reads of the props (names, labels, size) holds also for a spec render() refused.
    const props = rendered?.props ?? appPropsFor(kind, cr);
    // The children are independent: apply them in parallel, report the first failure in order.
    // What the API server answered to our applies is newer than the cache (a new Service's NodePort):
    // status uses it, so a create's first status already carries the NodePort.
    const fresh = new Map<string, KubernetesObject>();
    const blockers: KubeObject[] = [];
    const applied = await Promise.all(desired.map((obj) => this.applyOne(obj, cr, fresh, log, blockers)));
    this.deps.memory?.conflicts?.observe(key, blockers);
    failure ??= applied.find((f) => f !== undefined);
    if (!failure) failure = await this.prune(cr, desired, log);
    // A new failure's Event goes out beside the status that says Degraded, not after it: one round
    // trip less for every failing CR's first reconcile (record() never throws).
    const previous = cr.status?.conditions?.find((c) => c.type === 'Degraded');
    const event =
      failure && (previous?.status !== 'True' || previous.message !== failure.message)
        ? this.deps.events.record(cr, 'Warning', failure.reason, failure.message, log)
        : undefined;
    let waitMs: number;
    try {
      waitMs = await this.writeStatus(key, props, cr, failure, fresh, log, kind, wave);
    } finally {
      await event;
    }
    if (failure) throw new ReconcileError(failure);
    return waitMs > 0 ? { requeueAfterMs: waitMs } : undefined;
  }

  /**
   * Whether `cr`, still in the cache, is gone from the API server (deleted, or replaced by a CR of a
   * new uid), asked only when a child it would create is one this process saw deleted
   * (DeletedChildren): the garbage collector deletes a deleted CR's children, and their DELETED
   * events can arrive before the CR's own. Creating them again would only give the garbage collector
   * a second delete. The read is from etcd (no resourceVersion): the CR's deletion precedes the
   * garbage collector's, so a child's deletion already watched means the read sees the CR's.
   */
  private async goneMeanwhile(cr: CachedResource, desired: KubeObject[], log: Logger): Promise<boolean> {
    const uid = cr.metadata.uid;
    const deleted = this.deps.memory?.deletedChildren;
    if (!deleted || deleted.size === 0) return false;
    const recreating = desired.filter((obj) => {
      const cache = this.cacheFor(obj.kind);
      return (
        cache &&
        deleted.seen(uid, obj.kind) &&
        !this.expectations.resolve(
          obj.kind,
          obj.metadata.namespace,
          obj.metadata.name,
          cache.get(obj.metadata.namespace, obj.metadata.name),
        )
      );
    });
    if (recreating.length === 0) return false;
    let live: CachedResource | undefined;
    try {
      live = await this.deps.rest.get<CachedResource>({
        apiVersion: cr.apiVersion,
        kind: cr.kind,
        metadata: { namespace: cr.metadata.namespace, name: cr.metadata.name },
      });
    } catch (e) {
      const f = apiFailure(e);
      throwIfThrottled(f, `reading ${cr.kind} ${cr.metadata.namespace}/${cr.metadata.name}`);
      throw e;
    }
    const gone = !live || live.metadata.uid !== uid || !!live.metadata.deletionTimestamp;
    if (gone)
      log.info('CR gone, its deletion not watched yet; not creating its deleted children again', {
        objects: recreating.map((obj) => describeObject(obj)),
      });
    return gone;
  }

  /**
   * Whether this app's pod template would change by a kind-level change (the kind's settings, the
   * operator's rendering), and if so whether its turn in the kind's rollout came. A new app, a
   * template unchanged (a scale change) and a change of the CR's own spec go at once.
   */
  private waveTurn(kind: AppKind, cr: CachedResource, key: string, desired: KubeObject[]): WaveTurn | undefined {
    const waves = this.deps.memory?.waves;
    const target = desired.find((o) => o.kind === 'Deployment');
    if (!waves || !target) return undefined;
    const live = this.deps.deployments.get(target.metadata.namespace, target.metadata.name);
    if (!live || controllerOf(live)?.uid !== cr.metadata.uid) return undefined;
    if (isSubset(templateOf(target), live.spec?.template)) return { target, held: false };
    // The CR rendered with the kind's settings before the change gives the live template: the kind's
    // change. Else an edit of the CR not reconciled yet is its own; else the change is the kind's or
    // the operator's rendering, from settings this process never saw.
    const before = this.previousTemplate(kind, cr);
    const kindChange = before !== undefined || (cr.metadata.generation ?? 0) === (cr.status?.observedGeneration ?? 0);
    if (!kindChange) return { target, held: false };
    return { target, held: waves.turn(kind, key) === 'wait' };
  }

  /** The pod template render() gave `cr` with the kind's previous settings, when the live Deployment holds it. */
  private previousTemplate(kind: AppKind, cr: CachedResource): unknown {
    const previous = this.deps.memory?.waves?.previous(kind.kind);
    if (!previous) return undefined;
    const live = templateOf(this.deps.deployments.get(cr.metadata.namespace, ContainerApp.objectNames(cr.metadata.name).deployment));
    try {
      const template = templateOf(render(previous, cr).find((o) => o.kind === 'Deployment'));
      return isSubset(template, live) ? template : undefined;
    } catch {
      return undefined; // a spec the previous settings refuse: not what the live Deployment was rendered from
    }
  }

  /**
   * `deployment` with the pod template its app runs now: the previous settings' render, else the live
   * one (with the zero values the render sets, which the server omits: applying it releases nothing).
   */
  private keepTemplate(deployment: KubeObject, kind: AppKind, cr: CachedResource): KubeObject {
    const live = this.deps.deployments.get(deployment.metadata.namespace, deployment.metadata.name);
    const template = this.previousTemplate(kind, cr) ?? withOmittedZeros(templateOf(deployment), templateOf(live));
    const spec = (deployment as V1Deployment).spec!;
    return { ...deployment, spec: { ...spec, template } } as KubeObject;
  }

  private owned(obj: KubeObject, cr: CachedResource): KubeObject {
    const owner: V1OwnerReference = {
      apiVersion: cr.apiVersion,
      kind: cr.kind,
      name: cr.metadata.name,
      uid: cr.metadata.uid!,
      controller: true,
      blockOwnerDeletion: true,
    };
    return { ...obj, metadata: { ...obj.metadata, namespace: cr.metadata.namespace, ownerReferences: [owner] } } as KubeObject;
  }

  private cacheFor(kind: string): CacheReader<KubernetesObject> | undefined {
    if (kind === 'Deployment') return this.deps.deployments;
    if (kind === 'Service') return this.deps.services;
    if (kind === 'PodDisruptionBudget') return this.deps.podDisruptionBudgets;
    if (kind === 'NetworkPolicy') return this.deps.networkPolicies;
    return undefined;
  }

  /**
   * Applies one child unless the live object already holds it. Children are cached
   * when they carry the children's label (ours, or someone's copy of render()'s objects), so a name
   * the cache lacks is not one of ours: the first apply is create-only,
   * which leaves someone else's object of that name alone (NameConflict) and needs no read before it.
   * `blockers` gets the child when an object not controlled by `cr` takes its name.
   */
  private async applyOne(
    obj: KubeObject,
    cr: CachedResource,
    fresh: Map<string, KubernetesObject>,
    log: Logger,
    blockers: KubeObject[],
  ): Promise<ReconcileFailure | undefined> {
    const cache = this.cacheFor(obj.kind);
    let live =
      cache &&
      this.expectations.resolve(obj.kind, obj.metadata.namespace, obj.metadata.name, cache.get(obj.metadata.namespace, obj.metadata.name));
    if (!cache) {
      try {
        live = await this.deps.rest.get(obj);
      } catch (e) {
        const f = apiFailure(e);
        throwIfThrottled(f, `reading ${describeObject(obj)}`);
        return { reason: 'ReadFailed', message: `${describeObject(obj)}: ${f.message}` };
      }
    }
    if (live && controllerOf(live)?.uid !== cr.metadata.uid) {
      blockers.push(obj);
      return nameConflict(obj, cr);
    }
    // A changed or missing field, or one we own that render() no longer gives (released by the apply).
    const owned = appliedFieldsOf(live, this.deps.fieldManager);
    const released = owned && firstReleased(owned, obj);
    const drift = driftOf(obj, live) ?? (released ? `released ${released}` : undefined);
    if (!drift) return undefined;
    try {
      if (live || !cache) {
        const applied = await this.deps.rest.apply(obj, this.deps.fieldManager);
        fresh.set(obj.kind, applied);
        if (cache) this.expectations.expect(obj.kind, applied);
        log.info(live ? 'applied drifted object' : 'created object', { object: describeObject(obj), field: live ? drift : undefined });
        return undefined;
      }
      // The cache says it does not exist, but the cache lags: someone else's object created a moment
      // ago would be adopted and overwritten by a plain apply. Create-only, then.
      const outcome = await this.createOnly(obj, cr);
      if ('failure' in outcome) {
        if (outcome.failure.reason === 'NameConflict') blockers.push(obj);
        return outcome.failure;
      }
      fresh.set(obj.kind, outcome.created);
      this.expectations.expect(obj.kind, outcome.created);
      log.info('created object', { object: describeObject(obj) });
      return undefined;
    } catch (e) {
      const f = apiFailure(e);
      throwIfThrottled(f, `applying ${describeObject(obj)}`);
      log.warn('apply failed', { object: describeObject(obj), code: f.code, error: f.message });
      return { reason: 'ApplyFailed', message: `${describeObject(obj)}: ${f.message}` };
    }
  }

  /**
   * Applies `obj`, which the cache says does not exist, without touching an object of that name that
   * does (RestClient.apply's `createOnly`): resolves with the created object, or NameConflict when
   * one not controlled by `cr` is there. A refusal can also be our own child, created by an earlier
   * reconcile whose create the cache has not seen yet: read it, and apply as usual when `cr` controls it.
   */
  private async createOnly(obj: KubeObject, cr: CachedResource): Promise<{ created: KubernetesObject } | { failure: ReconcileFailure }> {
    try {
      return { created: await this.deps.rest.apply(obj, this.deps.fieldManager, { createOnly: true }) };
    } catch (e) {
      if (!isCreateOnlyRefusal(e)) throw e;
    }
    const existing = await this.deps.rest.get(obj);
    // Deleted again since: the retry tries anew (only a create-only apply is safe here).
    if (!existing)
      return { failure: { reason: 'ApplyFailed', message: `${describeObject(obj)}: created and deleted again by someone else meanwhile` } };
    if (controllerOf(existing)?.uid !== cr.metadata.uid) return { failure: nameConflict(obj, cr) };
    return { created: await this.deps.rest.apply(obj, this.deps.fieldManager) };
  }

  /** Deletes children this CR controls that render() no longer returns. */
  private async prune(cr: CachedResource, desired: KubeObject[], log: Logger): Promise<ReconcileFailure | undefined> {
    const keep = new Set(desired.map((o) => refKey(refOf(o.kind, o))));
    const uid = cr.metadata.uid!;
    const { deployments, services, podDisruptionBudgets, networkPolicies } = this.deps;
    const children = [deployments, services, podDisruptionBudgets, networkPolicies]
      .flatMap((cache: CacheReader<KubernetesObject>) => cache.byIndex(OWNER_INDEX, uid))
      .filter((o) => !keep.has(refKey(refOf(o.kind!, o))));
    for (const child of children) {
      try {
        await this.deps.rest.delete(child);
        log.info('pruned object no longer rendered', { object: describeObject(child) });
      } catch (e) {
        const f = apiFailure(e);
        throwIfThrottled(f, `deleting ${describeObject(child)}`);
        if (f.code !== 404) return { reason: 'PruneFailed', message: `${describeObject(child)}: ${f.message}` };
      }
    }
    return undefined;
  }

  /**
   * The pods of `deployment`: those whose controller is a ReplicaSet the Deployment controls, not
   * any pod carrying the app's labels.
   */
  private podsOf(deployment: V1Deployment | undefined): V1Pod[] {
    const uid = deployment?.metadata?.uid;
    if (!uid) return [];
    return this.deps.replicaSets.byIndex(OWNER_INDEX, uid).flatMap((rs) => this.deps.pods.byIndex(OWNER_INDEX, rs.metadata!.uid!));
  }

  /**
   * Tells the kind's rollout what this app's Deployment holds and how its pods fare; resolves with how
   * long until its turn's deadline while it rolls and is not Ready. A failure stopping the rollout is
   * an Event on the app, beside the kubelet's or the API server's own.
   */
  private async observeWave(
    kind: AppKind,
    key: string,
    cr: CachedResource,
    wave: WaveTurn,
    deployment: V1Deployment | undefined,
    status: AppStatus,
    failure: ReconcileFailure | undefined,
    log: Logger,
  ): Promise<number | undefined> {
    const waves = this.deps.memory?.waves;
    if (!waves || failure) return undefined;
    const ready = status.conditions.find((c) => c.type === 'Ready');
    const seen = waves.observe(kind, key, {
      atTarget: !wave.held && isSubset(templateOf(wave.target), deployment?.spec?.template),
      ready: ready?.status === 'True',
      failure: (since) => this.turnFailure(deployment, since),
    });
    if (seen.failed) {
      const message = `the ${kind.kind} rollout stopped at this app (${seen.failed}): apps not rolled yet keep their pod template until the kind's settings change again`;
      await this.deps.events.record(cr, 'Warning', 'KindRolloutStopped', message, log);
    }
    // A moment past the deadline, so the reconcile then finds it passed.
    return seen.deadlineInMs !== undefined ? seen.deadlineInMs + 100 : undefined;
  }

  /**
   * Why the pods an app's turn made cannot start: pods refused at admission (the Deployment's
   * ReplicaFailure), or a kubelet failure of a pod made since. The Deployment's and the pods' old
   * failures (of the template before a fix) stay a moment after the turn starts: they are not its.
   * Kubernetes times have whole seconds, hence the second of slack.
   */
  private turnFailure(deployment: V1Deployment | undefined, since: number): string | undefined {
    const after = (time: Date | string | undefined) => time !== undefined && new Date(time).getTime() >= since - 1000;
    const refused = deployment?.status?.conditions?.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
    if (refused && after(refused.lastTransitionTime ?? refused.lastUpdateTime)) return refused.reason || 'ReplicaFailure';
    const pods = this.podsOf(deployment).filter((p) => after(p.metadata?.creationTimestamp));
    const problem = podProblem(pods, false);
    return problem && KUBELET_FAILURE_REASONS.has(problem.reason) ? problem.reason : undefined;
  }

  /** Writes status when it changed; returns how long a coalesced change still waits (0: none). */
  private async writeStatus(
    key: string,
    props: ContainerAppProps,
    cr: CachedResource,
    failure: ReconcileFailure | undefined,
    fresh: Map<string, KubernetesObject>,
    log: Logger,
    kind?: AppKind,
    wave?: WaveTurn,
  ): Promise<number> {
    const ns = cr.metadata.namespace!;
    const names = ContainerApp.objectNames(props.name!);
    // Only children this CR controls count: an object of the same name that someone else owns
    // (Degraded NameConflict) must not lend the CR its replicas or NodePort.
    const controlled = <T extends KubernetesObject>(obj: T | undefined): T | undefined =>
      obj && controllerOf(obj)?.uid === cr.metadata.uid ? obj : undefined;
    // What this reconcile wrote, else the cache, or what an earlier reconcile wrote that the cache does
    // not show yet (a Service created a moment ago already holds its NodePort).
    const child = <T extends KubernetesObject>(kind: string, name: string, cache: CacheReader<T>): T | undefined =>
      (fresh.get(kind) as T | undefined) ?? (this.expectations.resolve(kind, ns, name, cache.get(ns, name)) as T | undefined);
    const deployment = controlled(child<V1Deployment>('Deployment', names.deployment, this.deps.deployments));
    const status = computeStatus({
      size: props.replicas ?? 1,
      generation: cr.metadata.generation,
      // The same labels the construct gives the children.
      selectorLabels: ContainerApp.selectorLabelsOf(props.name!, props.appName!),
      deployment,
      service: controlled(child<V1Service>('Service', names.service, this.deps.services)),
      pods: this.podsOf(deployment),
      failure,
      previous: cr.status,
      now: this.deps.now?.() ?? new Date(),
      waiting: wave?.held && kind ? this.deps.memory?.waves?.waitingReason(kind, key) : undefined,
    });
    const deadlineMs = kind && wave ? await this.observeWave(kind, key, cr, wave, deployment, status, failure, log) : undefined;
    if (statusEqual(cr.status, status)) {
      this.deps.pacer?.upToDate(key);
      return deadlineMs ?? 0;
    }
    const isUrgent = urgent(cr.status, status); // also a first status
    const waitMs = this.deps.pacer?.delayMs(key, cr.status, status, isUrgent) ?? 0;
    if (waitMs > 0) return Math.min(waitMs, deadlineMs ?? Infinity);
    try {
      this.deps.memory?.ownStatusWrites?.writing(key, cr.metadata.resourceVersion);
      // A merge patch keeps fields it does not mention: null removes a NodePort that is gone.
      const written = await this.deps.rest.patchStatus(cr, { ...status, nodePort: status.nodePort ?? null });
      this.deps.memory?.ownStatusWrites?.wrote(key, written);
      this.deps.pacer?.wrote(key, isUrgent);
      log.info('status updated', {
        changed: statusChanges(cr.status, status),
        urgent: isUrgent,
        replicas: status.replicas,
        readyReplicas: status.readyReplicas,
        nodes: status.nodes.length,
        nodePort: status.nodePort,
      });
      // Pods refused by admission (quota, Pod Security, LimitRange), or failing on the node (an image
      // not pulled, a container exiting): say so where the CR's author looks.
      const warning = podsRefusedEvent(cr.status, status, replicaFailureOf(deployment)) ?? kubeletFailureEvent(cr.status, status);
      if (warning) await this.deps.events.record(cr, 'Warning', warning.reason, warning.message, log);
      return deadlineMs ?? 0;
    } catch (e) {
      this.deps.memory?.ownStatusWrites?.wrote(key, undefined);
      const f = apiFailure(e);
      if (f.code === 404) return 0; // deleted meanwhile
      throwIfThrottled(f, `writing the status of ${cr.kind} ${ns}/${cr.metadata.name}`);
      throw new ReconcileError({ reason: 'StatusUpdateFailed', message: `${cr.kind} ${ns}/${cr.metadata.name}: ${f.message}` });
    }
  }
}
