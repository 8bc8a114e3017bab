// What only a kubelet reports about an app's pods (an image it cannot pull, a container that exits, a
// container it refuses to create, a pod not ready), in the words the CR's Ready condition shows.
import { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';

/** Why a pod does not run as asked, as the CR shows it. */
export interface PodProblem {
  readonly reason: string;
  readonly message: string;
}

/**
 * The kubelet's reasons for a container that will not run without a change (to the image, the kind's
 * settings or the app). ImagePullBackOff is ErrImagePull's back-off between pulls: the kubelet
 * alternates the two at every retry, so the CR shows both as ErrImagePull (one reason, no status
 * write per retry).
 */
export const KUBELET_FAILURE_REASONS: ReadonlySet<string> = new Set([
  'ErrImagePull',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
  'PreStartHookError',
  'PostStartHookError',
  'CrashLoopBackOff',
]);

const WAITING_REASON_ALIASES: Readonly<Record<string, string>> = { ImagePullBackOff: 'ErrImagePull' };

/** The exit code and reason of a container's last run that ended, if any. */
function lastExit(cs: V1ContainerStatus): { exitCode: number; reason?: string; message?: string } | undefined {
  return cs.state?.terminated ?? cs.lastState?.terminated;
}

/**
 * What the kubelet says is wrong with one container, or undefined. A container that exited and runs
 * again, not ready yet, is between two crashes of a CrashLoopBackOff when the CR already showed one
 * (`crashLooping`): keeping the reason through the restart keeps one status, not two per restart.
 */
export function containerProblem(pod: string, cs: V1ContainerStatus, crashLooping: boolean): PodProblem | undefined {
  const waiting = cs.state?.waiting?.reason;
  const reason = waiting ? (WAITING_REASON_ALIASES[waiting] ?? waiting) : undefined;
  const exit = lastExit(cs);
  const crashed =
    reason === 'CrashLoopBackOff' ||
    (!!cs.state?.terminated && cs.state.terminated.exitCode !== 0) ||
    (crashLooping && !!cs.state?.running && !cs.ready && !!exit && exit.exitCode !== 0);
  if (crashed && exit) {
    const detail = exit.message?.trim() ? `: ${exit.message.trim().split('\n')[0]}` : '';
    return {
      reason: 'CrashLoopBackOff',
      message: `container "${cs.name}" of pod ${pod} exited with code ${exit.exitCode}${exit.reason ? ` (${exit.reason})` : ''}${detail}; the kubelet restarts it with back-off`,
    };
  }
  if (!reason || !KUBELET_FAILURE_REASONS.has(reason)) return undefined;
  return { reason, message: `container "${cs.name}" of pod ${pod}: ${cs.state?.waiting?.message ?? reason}` };
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * The first problem the kubelet reports of `pods` (by pod name, then container order): a container
 * that cannot run (KUBELET_FAILURE_REASONS), else a running pod that is not ready, with the pod's
 * Ready condition's reason and message (ContainersNotReady: "containers with unready status: [app]").
 */
export function podProblem(pods: readonly V1Pod[], crashLooping: boolean): PodProblem | undefined {
  const sorted = [...pods].filter((p) => !p.metadata?.deletionTimestamp).sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  for (const pod of sorted) {
    if (isReady(pod)) continue;
    for (const cs of pod.status?.containerStatuses ?? []) {
      const problem = containerProblem(pod.metadata!.name!, cs, crashLooping);
      if (problem) return problem;
    }
  }
  for (const pod of sorted) {
    if (isReady(pod) || pod.status?.phase !== 'Running') continue;
    const c = pod.status.conditions?.find((x) => x.type === 'Ready');
    if (c?.reason) return { reason: c.reason, message: `pod ${pod.metadata!.name}: ${c.message ?? c.reason}` };
  }
  return undefined;
}

/**
 * What of a pod decides whether status may change, as one string: readiness, and each container's
 * problem class and last exit code, not the kubelet's retry counts, back-off messages or timestamps
 * (a pod in CrashLoopBackOff changes at every restart; its CR's status does not).
 */
export function podProblemKey(pod: V1Pod): string {
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
  const containers = (pod.status?.containerStatuses ?? []).map(
    (cs) => `${cs.name}:${containerProblem('', cs, true)?.reason ?? ''}:${lastExit(cs)?.exitCode ?? ''}`,
  );
  return JSON.stringify([pod.status?.phase, ready?.status, ready?.reason, containers]);
}
