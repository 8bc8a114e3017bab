import { describe, expect, it } from '@jest/globals';
import { AppStatus, computeStatus, StatusInput } from '../../operator/status.js';
import { StatusPacer, urgent } from '../../operator/status-pacer.js';
import { V1Deployment, V1Pod } from '@kubernetes/client-node';

const labels = { 'app.kubernetes.io/name': 'echoflask', 'app.kubernetes.io/instance': 'a', 'app.kubernetes.io/managed-by': 'cdk8s-appkind' };
const pod = (name: string, ready: boolean): V1Pod => ({ metadata: { name, labels }, status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } });
const deployment = (replicas: number, ready: number): V1Deployment => ({
  metadata: { name: 'a-deployment', generation: 1 },
  status: { replicas, readyReplicas: ready, updatedReplicas: replicas, observedGeneration: 1 },
});
const base: StatusInput = { size: 3, generation: 1, selectorLabels: labels, pods: [], now: new Date('2026-12-03T07:00:00Z') };
const status = (over: Partial<StatusInput>): AppStatus => computeStatus({ ...base, ...over });

describe('StatusPacer', () => {
  const first = status({ deployment: deployment(3, 0) });
  const onePod = status({ deployment: deployment(3, 0), pods: [pod('p1', false)], previous: first });
  const twoPods = status({ deployment: deployment(3, 1), pods: [pod('p1', true), pod('p2', false)], previous: first });
  const ready = status({ deployment: deployment(3, 3), pods: [pod('p1', true), pod('p2', true), pod('p3', true)], previous: first });

  it('writes the first status, a new generation and a Ready flip at once', () => {
    expect(urgent(undefined, first)).toBe(true);
    expect(urgent(first, { ...first, observedGeneration: 2 })).toBe(true);
    expect(urgent(first, ready)).toBe(true);
    expect(urgent(first, status({ deployment: deployment(3, 0), failure: { reason: 'ApplyFailed', message: 'no' }, previous: first }))).toBe(true);
  });

  it('leaves a Progressing flip alone until Ready follows', () => {
    const rolledOutNotReady = status({ deployment: deployment(3, 1), pods: [pod('p1', true), pod('p2', false), pod('p3', false)], previous: first });
    expect(rolledOutNotReady.conditions.find((c) => c.type === 'Progressing')!.status).toBe('False');
    expect(urgent(status({ deployment: { ...deployment(3, 0), status: { observedGeneration: 1, updatedReplicas: 1, replicas: 1 } } }), rolledOutNotReady)).toBe(false);
  });

  it('treats a new refusal reason as news, the ordinary rollout reasons not', () => {
    const missing = status({});
    expect(missing.conditions.find((c) => c.type === 'Ready')!.reason).toBe('DeploymentMissing');
    const fresh: V1Deployment = { metadata: { name: 'a-deployment', generation: 1 }, status: { observedGeneration: 1 } };
    expect(urgent(missing, status({ deployment: fresh, previous: missing }))).toBe(false);
    const refusedDeployment: V1Deployment = {
      ...deployment(3, 0),
      status: { ...deployment(3, 0).status, conditions: [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'pods "a" is forbidden' }] },
    };
    expect(urgent(first, status({ deployment: refusedDeployment, previous: first }))).toBe(true);
  });

  it('holds pod-count changes back until the interval since the last write has passed', () => {
    let now = 1_000;
    const pacer = new StatusPacer(10_000, () => now);
    expect(pacer.delayMs('k', undefined, first)).toBe(0);
    pacer.wrote('k');
    now += 2_000;
    expect(urgent(first, onePod)).toBe(false);
    expect(pacer.delayMs('k', first, onePod)).toBe(8_000);
    now += 5_000;
    expect(pacer.delayMs('k', first, twoPods)).toBe(3_000);
    // The final status is never held back.
    expect(pacer.delayMs('k', first, ready)).toBe(0);
    now += 3_000;
    expect(pacer.delayMs('k', first, twoPods)).toBe(0);
  });

  it('writes every change with interval 0, and at once for a CR this process never wrote', () => {
    expect(new StatusPacer(0).delayMs('k', first, onePod)).toBe(0);
    expect(new StatusPacer(10_000).delayMs('other', first, onePod)).toBe(0);
  });
});
