// The fake Nodes kwok keeps alive. Scheduled pods land on them and kwok marks them Running/Ready.
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE } from './components.js';

export const FAKE_NODE_NAME = 'kwok-node-0';
/** Pods one fake node takes; ControlPlane.start({ pods }) adds nodes for more. */
export const PODS_PER_FAKE_NODE = 2000;

// No taints, so ordinary pods schedule here.
const capacity = { cpu: '1000', memory: '4Ti', pods: String(PODS_PER_FAKE_NODE) };

/** Fake nodes needed for `pods` pods (at least one). */
export function fakeNodeCount(pods = 0): number {
  return Math.max(1, Math.ceil(pods / PODS_PER_FAKE_NODE));
}

export function fakeNode(index = 0): V1Node {
  const name = `kwok-node-${index}`;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_NODE_ANNOTATION]: KWOK_NODE_ANNOTATION_VALUE, 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        type: 'kwok',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
      },
    },
    status: { capacity, allocatable: capacity },
  };
}

export async function createFakeNodes(kc: KubeConfig, count = 1): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < count; i++) await core.createNode({ body: fakeNode(i) });
}

/** Every one of the first `count` fake nodes is Ready. */
export async function fakeNodesReady(kc: KubeConfig, count = 1): Promise<boolean> {
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < count; i++) {
    const node = await core.readNode({ name: `kwok-node-${i}` });
    if (!node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return false;
  }
  return true;
}
