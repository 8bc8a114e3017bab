// The one fake Node kwok keeps alive. Scheduled pods land on it and kwok marks them Running/Ready.
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE } from './components.js';

export const FAKE_NODE_NAME = 'kwok-node-0';

// Room for the benchmarks' ~1000 pods with headroom; no taints, so ordinary pods schedule here.
const capacity = { cpu: '1000', memory: '4Ti', pods: '2000' };

export function fakeNode(): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: FAKE_NODE_NAME,
      annotations: { [KWOK_NODE_ANNOTATION]: KWOK_NODE_ANNOTATION_VALUE, 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        type: 'kwok',
        'kubernetes.io/hostname': FAKE_NODE_NAME,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
      },
    },
    status: { capacity, allocatable: capacity },
  };
}

export async function createFakeNode(kc: KubeConfig): Promise<void> {
  await kc.makeApiClient(CoreV1Api).createNode({ body: fakeNode() });
}

export async function fakeNodeReady(kc: KubeConfig): Promise<boolean> {
  const node = await kc.makeApiClient(CoreV1Api).readNode({ name: FAKE_NODE_NAME });
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
