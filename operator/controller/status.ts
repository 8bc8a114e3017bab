// The status a CR reports, computed from its Deployment, Service, pods and the last reconcile's
// failure: the conditions kstatus tools read, and the Warning Events a new failure is worth.
import { V1Deployment, V1DeploymentCondition, V1Pod, V1Service } from '@kubernetes/client-node';
import { KUBELET_FAILURE_REASONS, podProblem } from './pod-problems.js';

/**
 * Ready, Progressing and Degraded are always present. Reconciling and Stalled follow kstatus
 * (sigs.k8s.io/cli-utils/pkg/kstatus), which Helm's --wait, Flux and kpt read: abnormal-true, present
 * only while True, so a settled app's status is the same as without them (no write to add them).
 */
export type ConditionType = 'Ready' | 'Progressing' | 'Degraded' | 'Reconciling' | 'Stalled';

export interface Condition {
  readonly type: ConditionType;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

/** The status an app kind's CR reports. */
export interface AppStatus {
  readonly nodes: string[];
  readonly replicas: number;
  readonly readyReplicas: number;
  readonly nodePort?: number;
  readonly selector: string;
  readonly observedGeneration?: number;
  readonly conditions: Condition[];
}

/** Why the last reconcile failed, if it did. */
export interface ReconcileFailure {
  readonly reason: string;
  readonly message: string;
}

export interface StatusInput {
  /** `spec.size` as reconciled. */
  readonly size: number;
  readonly generation?: number;
  readonly selectorLabels: Record<string, string>;
  readonly deployment?: V1Deployment;
  readonly service?: V1Service;
  /** The pods of the CR's own Deployment (owned by ReplicaSets it controls). */
  readonly pods: V1Pod[];
  readonly failure?: ReconcileFailure;
  /** The status the CR has now, for lastTransitionTime. */
  readonly previous?: Partial<AppStatus>;
  /** Why the app waits for its kind's rollout (waves.ts), when it does: Progressing says so. */
  readonly waiting?: { readonly reason: string; readonly message: string };
  readonly now: Date;
}

/** The condition reasons computeStatus sets itself (a failure's or a refusal's reason comes from its source). */
export const Reason = {
  AllReplicasReady: 'AllReplicasReady',
  ReplicasNotReady: 'ReplicasNotReady',
  DeploymentMissing: 'DeploymentMissing',
  RolloutComplete: 'RolloutComplete',
  RollingOut: 'RollingOut',
  ReconcileSucceeded: 'ReconcileSucceeded',
} as const;

/**
 * Failures no retry fixes: the CR is Stalled at once (kstatus: Failed), until someone changes the CR,
 * the kind's settings or the object in the way.
 */
export const STALLED_REASONS: ReadonlySet<string> = new Set(['NameConflict', 'ImageNotAllowed', 'InvalidSpec']);

/** The Deployment controller's reason for a rollout past its `progressDeadlineSeconds` (default 600 s). */
export const PROGRESS_DEADLINE_EXCEEDED = 'ProgressDeadlineExceeded';

/** The reasons of an ordinary rollout in progress: any other new reason (a refusal, a failure) is news. */
export const ROLLOUT_REASONS: ReadonlySet<string> = new Set<string>([
  Reason.ReplicasNotReady,
  // The kubelet's reason for a running pod not ready yet (its readiness probe): part of any rollout.
  'ContainersNotReady',
  Reason.DeploymentMissing,
  Reason.RollingOut,
  Reason.RolloutComplete,
]);

/** `k=v,k=v` in key order: the scale subresource's selector. */
export function selectorString(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

function podIsReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * Why the Deployment's ReplicaSet cannot create pods (Pod Security admission, a ResourceQuota, a
 * LimitRange...): the Deployment controller copies the ReplicaSet's `ReplicaFailure` condition, with
 * the API server's refusal as its message, into the Deployment's status.
 */
export function replicaFailureOf(deployment: V1Deployment | undefined): ReconcileFailure | undefined {
  const c = deployment?.status?.conditions?.find((x) => x.type === 'ReplicaFailure' && x.status === 'True');
  return c ? { reason: c.reason || 'ReplicaFailure', message: c.message || 'the ReplicaSet cannot create pods' } : undefined;
}

/**
 * The Warning Event to record when the pods' refusal is new: the Ready condition now carries a
 * refusal message that the previous status did not.
 */
export function podsRefusedEvent(
  previous: Partial<AppStatus> | undefined,
  next: AppStatus,
  refused: ReconcileFailure | undefined,
): ReconcileFailure | undefined {
  const ready = next.conditions.find((c) => c.type === 'Ready');
  if (!refused || ready?.status === 'True') return undefined;
  const before = previous?.conditions?.find((c) => c.type === 'Ready');
  if (before?.reason === refused.reason && before.message.startsWith(refused.message)) return undefined;
  return refused;
}

/**
 * Ready=False, and why: the current generation not applied (a failure), pods the API server refuses
 * (the Deployment's ReplicaFailure), what the kubelet reports of the pods (an image it cannot pull, a
 * container that exits...), else the rollout still under way.
 */
function notReady(input: StatusInput, live: V1Pod[], counts: string): Omit<Condition, 'lastTransitionTime'> {
  const { failure, generation } = input;
  if (failure)
    return {
      type: 'Ready',
      status: 'False',
      reason: failure.reason,
      message: `generation ${generation ?? '?'} is not applied (see Degraded); ${counts}`,
    };
  const refused = replicaFailureOf(input.deployment);
  if (refused) return { type: 'Ready', status: 'False', reason: refused.reason, message: `${refused.message} (${counts})` };
  const before = input.previous?.conditions?.find((c) => c.type === 'Ready');
  const problem = podProblem(live, before?.status === 'False' && before.reason === 'CrashLoopBackOff');
  if (problem) {
    // The kubelet retries with back-off, and its messages name the back-off and the pod: the CR keeps
    // the message it showed while the reason stays the same, so a retry writes no status.
    const sticky = KUBELET_FAILURE_REASONS.has(problem.reason) && before?.status === 'False' && before.reason === problem.reason;
    return { type: 'Ready', status: 'False', reason: problem.reason, message: sticky ? before.message : `${problem.message} (${counts})` };
  }
  return { type: 'Ready', status: 'False', reason: input.deployment ? Reason.ReplicasNotReady : Reason.DeploymentMissing, message: counts };
}

/**
 * The Warning Event to record when the kubelet's failure is new: Ready now carries a kubelet failure
 * reason that the previous status did not (once per reason, not per retry).
 */
export function kubeletFailureEvent(previous: Partial<AppStatus> | undefined, next: AppStatus): ReconcileFailure | undefined {
  const ready = next.conditions.find((c) => c.type === 'Ready');
  if (ready?.status !== 'False' || !KUBELET_FAILURE_REASONS.has(ready.reason)) return undefined;
  const before = previous?.conditions?.find((c) => c.type === 'Ready');
  if (before?.status === 'False' && before.reason === ready.reason) return undefined;
  return { reason: ready.reason, message: ready.message };
}

/**
 * The Deployment's rollout of its current generation ran past its progress deadline: the Deployment
 * controller's own clock, restarted by every new rollout (an edit of the CR, a fix), so a fix in
 * progress is never Stalled by the failure it fixes.
 */
function deadlineExceeded(deployment: V1Deployment | undefined): V1DeploymentCondition | undefined {
  const ds = deployment?.status;
  if ((ds?.observedGeneration ?? 0) < (deployment?.metadata?.generation ?? 0)) return undefined;
  return ds?.conditions?.find((c) => c.type === 'Progressing' && c.status === 'False' && c.reason === PROGRESS_DEADLINE_EXCEEDED);
}

/**
 * Stalled (True) or Reconciling (True) beside Ready=False; neither beside Ready=True. Stalled: a
 * failure no retry fixes (STALLED_REASONS), or a rollout past the Deployment's progress deadline,
 * with the kubelet's reason when it gives one (an image it cannot pull, a container that exits).
 * Reconciling otherwise, with Ready's reason and message: the two change together, so it costs no write.
 */
function kstatusCondition(
  input: StatusInput,
  ready: Omit<Condition, 'lastTransitionTime'>,
): Omit<Condition, 'lastTransitionTime'> | undefined {
  if (ready.status === 'True') return undefined;
  const { failure } = input;
  if (failure && STALLED_REASONS.has(failure.reason))
    return { type: 'Stalled', status: 'True', reason: failure.reason, message: failure.message };
  const exceeded = !failure && deadlineExceeded(input.deployment);
  if (exceeded)
    return {
      type: 'Stalled',
      status: 'True',
      reason: KUBELET_FAILURE_REASONS.has(ready.reason) ? ready.reason : PROGRESS_DEADLINE_EXCEEDED,
      message: `${ready.message}; ${exceeded.message ?? 'the rollout timed out'} (the Deployment's progressDeadlineSeconds)`,
    };
  return { type: 'Reconciling', status: 'True', reason: ready.reason, message: ready.message };
}

/** Status from the observed children. Pure: the same input gives the same output. */
export function computeStatus(input: StatusInput): AppStatus {
  const live = input.pods.filter((p) => !p.metadata?.deletionTimestamp);
  const nodes = live.map((p) => p.metadata!.name!).sort();
  const ds = input.deployment?.status;
  const replicas = ds?.replicas ?? 0;
  // The Deployment's count, as `kubectl get deployment` and kstatus read it; its status leaves out a 0,
  // so a missing field is none ready. Counting ready pods instead would run ahead of the Deployment
  // controller and call the app Ready while its Deployment still says 0/2.
  const readyReplicas = input.deployment ? (ds?.readyReplicas ?? 0) : live.filter(podIsReady).length;
  const generation = input.generation;
  const rolledOut =
    !!input.deployment &&
    (ds?.observedGeneration ?? 0) >= (input.deployment.metadata?.generation ?? 0) &&
    (ds?.updatedReplicas ?? 0) === input.size &&
    replicas === input.size;
  // Never Ready while the current generation is not applied: the pods may be ready, but of an older spec.
  const ready = rolledOut && readyReplicas >= input.size && !input.failure;
  const counts = `${readyReplicas}/${input.size} pods ready`;

  const readyCondition: Omit<Condition, 'lastTransitionTime'> = ready
    ? { type: 'Ready', status: 'True', reason: Reason.AllReplicasReady, message: counts }
    : notReady(input, live, counts);
  const kstatus = kstatusCondition(input, readyCondition);
  const conditions: Omit<Condition, 'lastTransitionTime'>[] = [
    readyCondition,
    input.waiting
      ? { type: 'Progressing', status: 'True', reason: input.waiting.reason, message: input.waiting.message }
      : rolledOut
        ? {
            type: 'Progressing',
            status: 'False',
            reason: Reason.RolloutComplete,
            message: `Deployment has ${input.size} up-to-date replicas`,
          }
        : {
            type: 'Progressing',
            status: 'True',
            reason: Reason.RollingOut,
            message: `Deployment has ${ds?.updatedReplicas ?? 0}/${input.size} up-to-date replicas`,
          },
    input.failure
      ? { type: 'Degraded', status: 'True', reason: input.failure.reason, message: input.failure.message }
      : { type: 'Degraded', status: 'False', reason: Reason.ReconcileSucceeded, message: 'Deployment and Service are applied' },
    ...(kstatus ? [kstatus] : []),
  ];
  return {
    nodes,
    replicas,
    readyReplicas,
    nodePort: input.service?.spec?.ports?.[0]?.nodePort,
    selector: selectorString(input.selectorLabels),
    observedGeneration: generation,
    conditions: conditions.map((c) => withTransitionTime({ ...c, observedGeneration: generation }, input.previous?.conditions, input.now)),
  };
}

/** Keeps lastTransitionTime when the condition's status did not change. */
function withTransitionTime(c: Omit<Condition, 'lastTransitionTime'>, previous: Condition[] | undefined, now: Date): Condition {
  const before = previous?.find((p) => p.type === c.type);
  const lastTransitionTime =
    before && before.status === c.status && before.lastTransitionTime
      ? before.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { ...c, lastTransitionTime };
}

/**
 * What writing `next` changes of `current`, for the log: the fields (`nodes`, `readyReplicas`...) and
 * the conditions (`Ready`, `Reconciling`...) that differ, in that order.
 */
export function statusChanges(current: Partial<AppStatus> | undefined, next: AppStatus): string[] {
  const n = normalize(next) as Record<string, unknown>;
  const c = normalize(current ?? {}) as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(n), ...Object.keys(c)])].filter(
    (k) => k !== 'conditions' && JSON.stringify(n[k]) !== JSON.stringify(c[k]),
  );
  const byType = (s: Partial<AppStatus> | undefined) =>
    new Map((s?.conditions ?? []).map((x) => [x.type, JSON.stringify(normalize({ conditions: [x] }))]));
  const [before, after] = [byType(current), byType(next)];
  const conditions = [...new Set([...after.keys(), ...before.keys()])].filter((t) => before.get(t) !== after.get(t));
  return [...fields.sort(), ...conditions.sort()];
}

/** True when writing `next` would change nothing the CR shows. */
export function statusEqual(current: Partial<AppStatus> | undefined, next: AppStatus): boolean {
  return JSON.stringify(normalize(current ?? {})) === JSON.stringify(normalize(next));
}

function normalize(status: Partial<AppStatus>): unknown {
  const sorted = (o: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(o)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => a.localeCompare(b)),
    );
  return {
    ...sorted(status as Record<string, unknown>),
    conditions: [...(status.conditions ?? [])]
      .sort((a, b) => a.type.localeCompare(b.type))
      .map((c) => sorted(c as unknown as Record<string, unknown>)),
  };
}
