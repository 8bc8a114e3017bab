import { describe, expect, it } from '@jest/globals';
import { fakeNode, fakeNodeCount, PODS_PER_FAKE_NODE } from '../../tools/controlplane/fake-node.js';

describe('kwok fake nodes', () => {
  it('adds one node per 2000 pods, at least one', () => {
    expect(PODS_PER_FAKE_NODE).toBe(2000);
    expect([undefined, 0, 2000, 2001, 3000, 7500].map((p) => fakeNodeCount(p))).toEqual([1, 1, 1, 2, 2, 4]);
  });

  it('names each node and gives it room for 2000 pods', () => {
    const node = fakeNode(1);
    expect(node.metadata?.name).toBe('kwok-node-1');
    expect(node.metadata?.labels?.['kubernetes.io/hostname']).toBe('kwok-node-1');
    expect(node.status?.allocatable?.pods).toBe('2000');
  });
});
