import { describe, expect, it } from '@jest/globals';
import { AppStatus, computeStatus, StatusInput } from '../../operator/controller/status.js';
import { MAX_PROGRESS_INTERVAL_MS, PROGRESS_WRITES_PER_INTERVAL, StatusPacer, urgent } from '../../operator/controller/status-pacer.js';
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

  it('counts the first status, a new generation and a Ready flip as urgent (the pacing of a rollout starts over)', () => {
    expect(urgent(undefined, first)).toBe(true);
    expect(urgent(first, { ...first, observedGeneration: 2 })).toBe(true);
    expect(urgent(first, ready)).toBe(true);
    expect(urgent(first, status({ deployment: deployment(3, 0), failure: { reason: 'ApplyFailed', message: 'no' }, previous: first }))).toBe(true);
  });

  it('writes at once a settled app\'s pod list catching up after Ready (the pod cache behind the Deployment\'s)', () => {
    const readyTwoListed = status({ deployment: deployment(3, 3), pods: [pod('p1', true), pod('p2', true)], previous: first });
    expect(readyTwoListed.conditions.find((c) => c.type === 'Ready')!.status).toBe('True');
    expect(urgent(readyTwoListed, ready)).toBe(true);
    const pacer = new StatusPacer(10_000, () => 1_000);
    pacer.wrote('k');
    expect(pacer.delayMs('k', readyTwoListed, ready)).toBe(0);
    // Nothing changed: nothing to write, and not urgent either.
    expect(urgent(ready, ready)).toBe(false);
    // While not Ready, the pod list is progress and may wait.
    expect(urgent(onePod, status({ deployment: deployment(3, 0), pods: [pod('p1', false), pod('p2', false)], previous: first }))).toBe(false);
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

  it('adds no write for Reconciling, and writes Stalled at once', () => {
    // Reconciling follows Ready: a status an earlier operator wrote without it is not made urgent by it.
    const withoutReconciling = { ...onePod, conditions: onePod.conditions.filter((c) => c.type !== 'Reconciling') };
    expect(onePod.conditions.some((c) => c.type === 'Reconciling')).toBe(true);
    expect(urgent(withoutReconciling, twoPods)).toBe(false);
    expect(urgent(onePod, twoPods)).toBe(false);
    const stuck: V1Deployment = {
      ...deployment(3, 1),
      status: { ...deployment(3, 1).status, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] },
    };
    const stalled = status({ deployment: stuck, pods: [pod('p1', true), pod('p2', false)], previous: twoPods });
    expect(stalled.conditions.find((c) => c.type === 'Stalled')?.reason).toBe('ProgressDeadlineExceeded');
    expect(urgent(twoPods, stalled)).toBe(true);
    expect(urgent(stalled, twoPods)).toBe(true);
    // A new CR that cannot progress is written at once, not coalesced with a rollout that never ends.
    const pacer = new StatusPacer(60_000, () => 1_000);
    expect(pacer.delayMs('k', undefined, status({ failure: { reason: 'ImageNotAllowed', message: 'no' } }))).toBe(0);
    expect(pacer.delayMs('k', { observedGeneration: 0 }, status({ failure: { reason: 'NameConflict', message: 'no' } }))).toBe(0);
    // Its ordinary first status (the CRD's default status before it) still waits for the rollout's end.
    expect(pacer.delayMs('k', { observedGeneration: 0 }, first)).toBe(60_000);
  });

  it('holds pod-count changes back until the interval since the last write has passed', () => {
    let now = 1_000;
    const pacer = new StatusPacer(10_000, () => now);
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

  it('spaces the progress writes of one rollout out, twice as far each time, until the next urgent write', () => {
    let now = 0;
    const pacer = new StatusPacer(10_000, () => now);
    pacer.wrote('k', true); // the rollout starts: a new generation
    now = 10_000;
    expect(pacer.delayMs('k', first, onePod)).toBe(0);
    pacer.wrote('k', false);
    now = 25_000;
    expect(pacer.delayMs('k', onePod, twoPods)).toBe(5_000); // 20 s after the first progress write
    now = 30_000;
    pacer.wrote('k', false);
    expect(pacer.delayMs('k', twoPods, onePod)).toBe(40_000);
    // An urgent write (Ready flipped, a new generation) starts over at the interval.
    pacer.wrote('k', true);
    expect(pacer.delayMs('k', first, onePod)).toBe(10_000);
    // Capped: never more than MAX_PROGRESS_INTERVAL_MS between two progress writes.
    for (let i = 0; i < 20; i++) pacer.wrote('k', false);
    expect(pacer.delayMs('k', first, onePod)).toBe(MAX_PROGRESS_INTERVAL_MS);
  });

  it('writes every change with interval 0, and at once for a CR this process never wrote', () => {
    expect(new StatusPacer(0).delayMs('k', first, onePod)).toBe(0);
    expect(new StatusPacer(0).delayMs('k', undefined, first)).toBe(0);
    expect(new StatusPacer(10_000).delayMs('other', first, onePod)).toBe(0);
  });

  it('holds a new CR\'s first status back for the interval while its rollout is ordinary', () => {
    let now = 1_000;
    const pacer = new StatusPacer(10_000, () => now);
    expect(pacer.delayMs('k', undefined, first)).toBe(10_000);
    now += 4_000;
    // Counted from the first time it was wanted, not from each reconcile.
    expect(pacer.delayMs('k', undefined, onePod)).toBe(6_000);
    expect(pacer.delayMs('k', {}, twoPods)).toBe(6_000);
    now += 6_000;
    expect(pacer.delayMs('k', undefined, twoPods)).toBe(0);
    pacer.wrote('k');
    // A CR deleted and created again under the same name starts over.
    pacer.forget('k');
    expect(pacer.delayMs('k', undefined, first)).toBe(10_000);
  });

  it('writes a new CR\'s first status at once when it is Ready, Degraded or refused', () => {
    const pacer = new StatusPacer(10_000, () => 1_000);
    expect(pacer.delayMs('a', undefined, status({ deployment: deployment(3, 3) }))).toBe(0);
    expect(pacer.delayMs('b', undefined, status({ failure: { reason: 'ApplyFailed', message: 'no' } }))).toBe(0);
    const refused: V1Deployment = {
      ...deployment(3, 0),
      status: { ...deployment(3, 0).status, conditions: [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'pods "a" is forbidden' }] },
    };
    expect(pacer.delayMs('c', undefined, status({ deployment: refused }))).toBe(0);
    expect(pacer.delayMs('d', undefined, status({ size: 0, deployment: deployment(0, 0) }))).toBe(0);
  });

  describe('a new generation (an edit)', () => {
    // Converged at generation 1 (3 pods ready), then spec.size 3 -> 4: generation 2.
    const converged = ready;
    const edited = (over: Partial<StatusInput>): AppStatus => status({ size: 4, generation: 2, previous: converged, ...over });
    const scaling = edited({ deployment: deployment(3, 3), pods: ready.nodes.map((n) => pod(n, true)) });
    const scaled = edited({ deployment: deployment(4, 4), pods: ['p1', 'p2', 'p3', 'p4'].map((n) => pod(n, true)) });

    it('holds its first status back while its rollout is ordinary, and writes its Ready at once', () => {
      expect(scaling.observedGeneration).toBe(2);
      expect(scaling.conditions.find((c) => c.type === 'Ready')!.status).toBe('False');
      let now = 1_000;
      const pacer = new StatusPacer(10_000, () => now);
      pacer.wrote('k');
      now = 50_000;
      expect(pacer.delayMs('k', converged, scaling)).toBe(10_000);
      now += 4_000;
      // Counted from when it was first wanted; a further edit meanwhile does not restart the wait.
      expect(pacer.delayMs('k', converged, { ...scaling, observedGeneration: 3 })).toBe(6_000);
      expect(pacer.delayMs('k', converged, scaled)).toBe(0);
      pacer.wrote('k', urgent(converged, scaled));
      // The next edit waits a whole interval again.
      now += 1_000;
      expect(pacer.delayMs('k', scaled, { ...scaling, observedGeneration: 3 })).toBe(10_000);
    });

    it('writes it once the interval has passed, and paces the rest of the rollout from there', () => {
      let now = 0;
      const pacer = new StatusPacer(10_000, () => now);
      expect(pacer.delayMs('k', converged, scaling)).toBe(10_000);
      now = 10_000;
      expect(pacer.delayMs('k', converged, scaling)).toBe(0);
      pacer.wrote('k', urgent(converged, scaling));
      now = 12_000;
      const onMore = edited({ deployment: deployment(4, 3), pods: ['p1', 'p2', 'p3', 'p4'].map((n) => pod(n, n !== 'p4')) });
      expect(pacer.delayMs('k', scaling, onMore)).toBe(8_000);
    });

    it('stretches the waits when many rollouts wait at once, so all of them get about as many progress writes per interval as one', () => {
      let now = 0;
      const pacer = new StatusPacer(10_000, () => now);
      const many = PROGRESS_WRITES_PER_INTERVAL * 25;
      // A lone slow rollout shows within the interval.
      expect(pacer.delayMs('cr-0', converged, scaling)).toBe(10_000);
      for (let i = 1; i < many; i++) pacer.delayMs(`cr-${i}`, converged, scaling);
      now = 10_000;
      // 250 rollouts waiting: the first one's wait is 25 intervals, not one.
      expect(pacer.delayMs('cr-0', converged, scaling)).toBe(240_000);
      // Their Ready is not held back.
      expect(pacer.delayMs('cr-0', converged, scaled)).toBe(0);
      pacer.wrote('cr-0', urgent(converged, scaled));
      // As rollouts end (written, or their status already up to date), the stretch shrinks with them.
      for (let i = 1; i < many - PROGRESS_WRITES_PER_INTERVAL; i++) {
        if (i % 2) pacer.wrote(`cr-${i}`, true);
        else pacer.upToDate(`cr-${i}`);
      }
      expect(pacer.delayMs(`cr-${many - 1}`, converged, scaling)).toBe(0);
      // Progress writes after the first are stretched the same way.
      const busy = new StatusPacer(10_000, () => now);
      busy.wrote('k', true);
      for (let i = 0; i < PROGRESS_WRITES_PER_INTERVAL * 3; i++) busy.delayMs(`other-${i}`, converged, scaling);
      const onMore = edited({ deployment: deployment(4, 3), pods: ['p1', 'p2', 'p3', 'p4'].map((n) => pod(n, n !== 'p4')) });
      expect(busy.delayMs('k', scaling, onMore)).toBe(30_000);
    });

    it('writes it at once when it is not an ordinary rollout: a failure before or now, a refusal, a new NodePort', () => {
      const pacer = new StatusPacer(10_000, () => 1_000);
      const degraded = status({ deployment: deployment(3, 3), failure: { reason: 'ApplyFailed', message: 'no' } });
      expect(pacer.delayMs('a', degraded, scaling)).toBe(0);
      expect(pacer.delayMs('b', converged, edited({ deployment: deployment(3, 3), failure: { reason: 'ApplyFailed', message: 'no' } }))).toBe(0);
      const refused: V1Deployment = {
        ...deployment(3, 3),
        status: { ...deployment(3, 3).status, conditions: [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'pods "a" is forbidden' }] },
      };
      expect(pacer.delayMs('c', converged, edited({ deployment: refused }))).toBe(0);
      expect(pacer.delayMs('d', { ...converged, nodePort: 30001 }, { ...scaling, nodePort: 30002 })).toBe(0);
      // The same edit with nothing of that kind waits.
      expect(pacer.delayMs('e', converged, scaling)).toBe(10_000);
    });
  });
});
