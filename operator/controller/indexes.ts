// What the app-kind controller indexes and keeps of its children and pods: indexes from a CR or a
// child to the keys that find it, and the slimmed views the caches hold.
import { KubernetesObject, V1ContainerStateTerminated, V1ContainerStatus, V1Pod, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { ContainerApp } from 'cdk8s-appkind';

/** Index of CRs by the NodePort their spec asks for: the CRs a Service freeing that port may unblock. */
export const NODE_PORT_INDEX = 'nodePort';

export function nodePortIndex(obj: KubernetesObject & { spec?: { nodePort?: unknown } }): string[] {
  const port = obj.spec?.nodePort;
  return typeof port === 'number' ? [String(port)] : [];
}

/** Which of a CR's children (ContainerApp.objectNames) an object of each kind would be. */
const CHILD_OF_KIND = {
  Deployment: 'deployment',
  Service: 'service',
  PodDisruptionBudget: 'podDisruptionBudget',
  NetworkPolicy: 'networkPolicy',
} as const;

/**
 * The name of the CR whose child of `kind` is named `name` (`<cr>-deployment`, `<cr>-svc`, and those of
 * the PodDisruptionBudget and NetworkPolicy a kind may ask for), or undefined when no CR's child takes
 * it: the CR a deleted foreign object of that name kept Degraded NameConflict. The inverse of
 * ContainerApp.objectNames, found from the CR name's cache entry instead of an index of four names per CR.
 */
export function crNameOfChild(kind: string, name: string): string | undefined {
  const child = CHILD_OF_KIND[kind as keyof typeof CHILD_OF_KIND];
  if (!child) return undefined;
  const suffix = ContainerApp.objectNames('')[child];
  const base = name.endsWith(suffix) ? name.slice(0, name.length - suffix.length) : '';
  return base && ContainerApp.objectNames(base)[child] === name ? base : undefined;
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
