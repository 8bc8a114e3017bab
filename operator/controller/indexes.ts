// What the app-kind controller indexes and keeps of its children and pods: indexes from a CR or a
// child to the keys that find it, and the slimmed views the caches hold.
import {
  KubernetesObject,
  V1ContainerStateTerminated,
  V1ContainerStatus,
  V1Deployment,
  V1Pod,
  V1ReplicaSet,
  V1Service,
} from '@kubernetes/client-node';
import { podProblemKey } from './pod-problems.js';
import { PROGRESS_DEADLINE_EXCEEDED } from './status.js';
import { ContainerApp } from 'cdk8s-appkind';
import { refKey } from '../runtime/ref.js';

/** Index of CRs by the NodePort their spec asks for: the CRs a Service freeing that port may unblock. */
export const NODE_PORT_INDEX = 'nodePort';

export function nodePortIndex(obj: KubernetesObject & { spec?: { nodePort?: unknown } }): string[] {
  const port = obj.spec?.nodePort;
  return typeof port === 'number' ? [String(port)] : [];
}

/**
 * Index of CRs by the names their children take, `Deployment/<namespace>/<name>`,
 * `Service/<namespace>/<name>` and those of the PodDisruptionBudget and NetworkPolicy a kind may ask
 * for: the CR a deleted foreign object of that name kept Degraded NameConflict.
 */
export const CHILD_NAME_INDEX = 'childName';

export function childNameIndex(obj: KubernetesObject): string[] {
  const name = obj.metadata?.name;
  if (!name) return [];
  const names = ContainerApp.objectNames(name);
  return [
    refKey({ kind: 'Deployment', namespace: obj.metadata?.namespace, name: names.deployment }),
    refKey({ kind: 'Service', namespace: obj.metadata?.namespace, name: names.service }),
    refKey({ kind: 'PodDisruptionBudget', namespace: obj.metadata?.namespace, name: names.podDisruptionBudget }),
    refKey({ kind: 'NetworkPolicy', namespace: obj.metadata?.namespace, name: names.networkPolicy }),
  ];
}

/**
 * The NodePorts a Service event gave up: all of a deleted Service's, those an update dropped.
 * A CR asking for one of them may have been refused it ("provided port is already allocated").
 */
export function freedNodePorts(type: 'add' | 'update' | 'delete', obj: V1Service, old?: V1Service): number[] {
  const ports = (s: V1Service | undefined) =>
    (s?.spec?.ports ?? []).map((p) => p.nodePort).filter((p): p is number => typeof p === 'number');
  if (type === 'add') return [];
  if (type === 'delete') return ports(obj);
  const kept = new Set(ports(obj));
  return ports(old).filter((p) => !kept.has(p));
}

/**
 * What status needs of a ReplicaSet: which Deployment controls it (its uid is what a pod's controller
 * reference names). Everything else is dropped before it is cached.
 */
export function replicaSetSummary(rs: V1ReplicaSet): V1ReplicaSet {
  const m = rs.metadata ?? {};
  return {
    apiVersion: rs.apiVersion,
    kind: rs.kind,
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, ownerReferences: m.ownerReferences },
  };
}

/**
 * What status needs of a pod: its name, labels, owners, whether it is terminating, its phase, Ready
 * (with the kubelet's reason and message), and of each container what the kubelet says is wrong
 * (waiting reason and message, the last exit). Everything else (spec, most of status) is dropped before
 * the pod is cached.
 */
export function podSummary(pod: V1Pod): V1Pod {
  const m = pod.metadata ?? {};
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
  const exit = (t: V1ContainerStateTerminated | undefined) =>
    t && { exitCode: t.exitCode, reason: t.reason, ...(t.message ? { message: t.message.slice(0, 256) } : {}) };
  const containers = pod.status?.containerStatuses?.map((cs): V1ContainerStatus => ({
    name: cs.name,
    image: cs.image,
    imageID: '',
    ready: cs.ready,
    restartCount: cs.restartCount,
    state: cs.state?.waiting
      ? { waiting: { reason: cs.state.waiting.reason, message: cs.state.waiting.message?.slice(0, 512) } }
      : cs.state?.terminated
        ? { terminated: exit(cs.state.terminated) }
        : cs.state?.running
          ? { running: {} }
          : {},
    ...(cs.lastState?.terminated ? { lastState: { terminated: exit(cs.lastState.terminated) } } : {}),
  }));
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      labels: m.labels,
      ownerReferences: m.ownerReferences,
      ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
    },
    status: {
      ...(pod.status?.phase ? { phase: pod.status.phase } : {}),
      ...(ready ? { conditions: [{ type: 'Ready', status: ready.status, reason: ready.reason, message: ready.message }] } : {}),
      ...(containers ? { containerStatuses: containers } : {}),
    },
  };
}

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
