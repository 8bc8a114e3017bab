// The kind rollouts on their own (an injected clock and wake-up list): who rolls, who waits, when the
// next wave starts, when a failing wave stops the rollout, and what the kind's summary says.
import { beforeEach, describe, expect, test } from '@jest/globals';
import { AppKind } from 'cdk8s-appkind';
import { KindWaves, maxConcurrentOf, rolloutCondition, WaveReason } from '../../operator/controller/waves.js';

const V1: AppKind = { group: 'w.example.com', version: 'v1', kind: 'Web', plural: 'webs', appName: 'web', image: 'web:1', port: 80, rollout: { maxConcurrent: '2', progressDeadlineSeconds: 60 } };
const V2: AppKind = { ...V1, image: 'web:2' };
const key = (i: number) => `Web/ns/app-${i}`;

describe('maxConcurrentOf', () => {
  test('a number, or a percentage of the kind\'s CRs rounded down and at least 1; 10% by default', () => {
    expect(maxConcurrentOf({ maxConcurrent: '5' }, 300)).toBe(5);
    expect(maxConcurrentOf({ maxConcurrent: '25%' }, 10)).toBe(2);
    expect(maxConcurrentOf({ maxConcurrent: '100%' }, 300)).toBe(300);
    expect(maxConcurrentOf(undefined, 300)).toBe(30);
    expect(maxConcurrentOf(undefined, 5)).toBe(1);
    expect(maxConcurrentOf({ maxConcurrent: '10%' }, 0)).toBe(1);
  });
});

describe('KindWaves', () => {
  let now: number;
  let woken: string[];
  let waves: KindWaves;
  let stops: string[];

  beforeEach(() => {
    now = 1_000_000;
    woken = [];
    stops = [];
    waves = new KindWaves({ total: () => 6, wake: (keys) => woken.push(...keys), stopped: (kind, reason) => void stops.push(`${kind}: ${reason}`), now: () => now });
    waves.kindChanged(V1, V2);
  });

  test('at most maxConcurrent apps roll; the others wait and say so', () => {
    const turns = [1, 2, 3, 4].map((i) => waves.turn(V2, key(i)));
    expect(turns).toEqual(['roll', 'roll', 'wait', 'wait']);
    // Asked again (any event of the app), an app keeps its answer.
    expect(waves.turn(V2, key(1))).toBe('roll');
    expect(waves.turn(V2, key(3))).toBe('wait');
    expect(waves.waitingReason(V2, key(3))).toEqual({ reason: WaveReason.Waiting, message: expect.stringContaining('at most 2 of the kind') });
    expect(waves.waitingReason(V2, key(1))).toBeUndefined();
    expect(waves.summary(V2)).toMatchObject({ updated: 0, inFlight: 2, waiting: 2, failed: 0, failedApps: [] });
  });

  test('an app Ready at the new template frees its slot: the first waiting app is woken and rolls', () => {
    for (const i of [1, 2, 3, 4]) waves.turn(V2, key(i));
    expect(waves.observe(V2, key(1), { atTarget: true, ready: false })).toEqual({ deadlineInMs: 60_000 });
    expect(woken).toEqual([]);
    waves.observe(V2, key(1), { atTarget: true, ready: true });
    expect(woken).toEqual([key(3)]);
    // A free slot goes to the first app that asks: here not the one woken.
    expect(waves.turn(V2, key(4))).toBe('roll');
    expect(waves.turn(V2, key(3))).toBe('wait');
    expect(waves.summary(V2)).toMatchObject({ updated: 1, inFlight: 2, waiting: 1 });
  });

  test('a kubelet failure stops the rollout: no more turns, the waiting apps woken once to say why, the failed app named', () => {
    for (const i of [1, 2, 3, 4]) waves.turn(V2, key(i));
    expect(waves.observe(V2, key(2), { atTarget: true, ready: false, failure: () => 'ErrImagePull' })).toEqual({ failed: 'ErrImagePull' });
    expect(woken).toEqual([key(3), key(4)]);
    expect(stops).toEqual([expect.stringMatching(/^Web: ns\/app-2 \(ErrImagePull\) did not become Ready/)]);
    waves.observe(V2, key(1), { atTarget: true, ready: true });
    expect(woken).toEqual([key(3), key(4)]);
    expect(waves.turn(V2, key(3))).toBe('wait');
    expect(waves.waitingReason(V2, key(3))).toEqual({ reason: WaveReason.Stopped, message: expect.stringContaining('ns/app-2 (ErrImagePull) did not become Ready') });
    expect(waves.summary(V2)).toEqual({
      template: expect.stringMatching(/^[0-9a-f]{10}$/), updated: 1, inFlight: 0, waiting: 2, failed: 1,
      failedApps: ['ns/app-2 (ErrImagePull)'], stopped: expect.stringContaining("fix or revert the kind's settings"),
    });
  });

  test("the kind's RolloutStopped condition names the failed apps while stopped, and carries no counts", () => {
    for (const i of [1, 2, 3]) waves.turn(V2, key(i));
    const going = rolloutCondition('Web', waves.summary(V2));
    waves.observe(V2, key(1), { atTarget: true, ready: true });
    expect(rolloutCondition('Web', waves.summary(V2))).toEqual(going);
    expect(going).toMatchObject({ type: 'RolloutStopped', status: 'False' });
    waves.observe(V2, key(2), { atTarget: true, ready: false, failure: () => 'FailedCreate' });
    expect(rolloutCondition('Web', waves.summary(V2))).toEqual({
      type: 'RolloutStopped', status: 'True', reason: WaveReason.Stopped, message: expect.stringContaining('the Web rollout stopped: ns/app-2 (FailedCreate)'),
    });
  });

  test('an app not Ready within progressDeadlineSeconds of its turn fails', () => {
    waves.turn(V2, key(1));
    now += 59_000;
    expect(waves.observe(V2, key(1), { atTarget: true, ready: false })).toEqual({ deadlineInMs: 1_000 });
    now += 1_000;
    expect(waves.observe(V2, key(1), { atTarget: true, ready: false })).toEqual({ failed: 'not Ready within 60 s' });
    expect(waves.summary(V2).stopped).toBeDefined();
  });

  test('the next change of the kind starts a new rollout: held and failed apps are woken, turns are given again', () => {
    for (const i of [1, 2, 3]) waves.turn(V2, key(i));
    waves.observe(V2, key(1), { atTarget: true, ready: false, failure: () => 'CrashLoopBackOff' });
    woken.length = 0;
    const V3 = { ...V2, image: 'web:3' };
    waves.kindChanged(V2, V3);
    expect(woken.sort()).toEqual([key(1), key(2), key(3)]);
    expect(waves.previous('Web')).toBe(V2);
    expect(waves.summary(V3)).toMatchObject({ inFlight: 0, waiting: 0, failed: 0 });
    expect(waves.summary(V3).stopped).toBeUndefined();
    expect([1, 2, 3].map((i) => waves.turn(V3, key(i)))).toEqual(['roll', 'roll', 'wait']);
  });

  test('a change of the rollout settings alone keeps the rollout, with the new limit', () => {
    for (const i of [1, 2, 3, 4]) waves.turn(V2, key(i));
    waves.kindChanged(V2, { ...V2, rollout: { maxConcurrent: '3' } });
    expect(woken).toEqual([key(3)]);
    expect(waves.previous('Web')).toBe(V1);
  });

  test('what a reconcile begun with the settings before a change saw counts for nothing in the new rollout', () => {
    const V3 = { ...V2, image: 'web:3' };
    waves.kindChanged(V2, V3);
    waves.observe(V2, key(1), { atTarget: true, ready: true });
    expect(waves.summary(V3)).toMatchObject({ updated: 0 });
    expect([1, 2, 3].map((i) => waves.turn(V3, key(i)))).toEqual(['roll', 'roll', 'wait']);
  });

  test('a deleted app in flight frees its slot', () => {
    for (const i of [1, 2, 3]) waves.turn(V2, key(i));
    waves.forget('Web', key(1));
    expect(woken).toEqual([key(3)]);
    expect(waves.summary(V2)).toMatchObject({ inFlight: 1, waiting: 1 });
  });

  test('apps at the new template without a turn (their own change, or never affected) count as updated', () => {
    waves.observe(V2, key(5), { atTarget: true, ready: false });
    waves.observe(V2, key(6), { atTarget: true, ready: true });
    expect(waves.summary(V2)).toMatchObject({ updated: 2, inFlight: 0 });
  });
});
