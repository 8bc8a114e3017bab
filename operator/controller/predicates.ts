// Which watch events of the app-kind controller map to keys at all: a change of something reconcile
// reads, not each status tick of the Deployment, disruption or kubelet controllers, which would each
// make a no-op reconcile.
import { KubernetesObject, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { Predicate } from '../runtime/controller.js';
import { podProblemKey } from './pod-problems.js';
import { PROGRESS_DEADLINE_EXCEEDED } from './status.js';

/** A Deployment added, deleted, or changed in anything reconcile reads. */
export const deploymentRead: Predicate<V1Deployment> = (e) => e.type !== 'update' || deploymentChanged(e.old, e.obj);

/** An object added, deleted, or changed in more than its status (PodDisruptionBudgets' counts tick with every pod). */
export const notStatusOnly: Predicate<KubernetesObject> = (e) => e.type !== 'update' || !statusOnlyChange(e.old, e.obj);

/** A pod added, deleted, or changed in anything status reads. */
export const podRead: Predicate<V1Pod> = (e) => e.type !== 'update' || podChanged(e.old, e.obj);

/** An object added (not its updates or deletion). */
export const added: Predicate<KubernetesObject> = (e) => e.type === 'add';

/** True when two pod summaries differ in anything status reads (not the kubelet's retry counts or back-off messages). */
export function podChanged(a: V1Pod | undefined, b: V1Pod): boolean {
  if (!a) return true;
  return (
    !!a.metadata?.deletionTimestamp !== !!b.metadata?.deletionTimestamp ||
    podProblemKey(a) !== podProblemKey(b) ||
    JSON.stringify(a.metadata?.labels) !== JSON.stringify(b.metadata?.labels)
  );
}

/**
 * What reconcile reads of a Deployment, as one string: its metadata (labels, annotations, owners, our
 * own apply entry of managedFields, generation, deletion) but not resourceVersion, and of its status
 * only what status shows (replicas, ready, updated, observedGeneration, a ReplicaFailure, a rollout
 * past its progress deadline). The spec needs no look: every change of a Deployment's spec bumps
 * metadata.generation.
 */
function deploymentView(d: V1Deployment): string {
  const metadata = { ...d.metadata };
  delete metadata.resourceVersion;
  const s = d.status ?? {};
  const failure = s.conditions?.find((c) => c.type === 'ReplicaFailure');
  const progressing = s.conditions?.find((c) => c.type === 'Progressing');
  return JSON.stringify([
    metadata,
    s.observedGeneration,
    s.replicas,
    s.readyReplicas,
    s.updatedReplicas,
    failure && [failure.status, failure.reason, failure.message],
    // Past its progress deadline or not (Stalled), not the condition's other reasons or times.
    progressing?.reason === PROGRESS_DEADLINE_EXCEEDED && progressing.status === 'False',
  ]);
}

/**
 * True when a Deployment changed in anything reconcile reads. The Deployment controller updates a
 * Deployment's status 3-7 times per rollout (availableReplicas, conditions' lastUpdateTime...); most of
 * those change nothing the CR's status shows, and enqueueing the CR for each made a no-op reconcile.
 */
export function deploymentChanged(a: V1Deployment | undefined, b: V1Deployment): boolean {
  if (!a) return true;
  return a.metadata?.generation !== b.metadata?.generation || deploymentView(a) !== deploymentView(b);
}

/**
 * True when a CR update changed only its status (metadata the same but for resourceVersion): most
 * often the operator's own status write, watched back.
 */
export function statusOnlyChange(a: KubernetesObject | undefined, b: KubernetesObject): boolean {
  if (!a) return false;
  const meta = (o: KubernetesObject) => JSON.stringify({ ...o.metadata, resourceVersion: undefined });
  return meta(a) === meta(b);
}
