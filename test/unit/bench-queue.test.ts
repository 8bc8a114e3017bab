import { describe, expect, it } from '@jest/globals';
import { queueBetween, queueOf } from '../../bench/operator-run.js';

const exposition = (reconciles: number, reconcileSeconds: number, waits: number, waitSeconds: number) =>
  [
    '# TYPE controller_runtime_reconcile_time_seconds histogram',
    `controller_runtime_reconcile_time_seconds_sum{controller="app"} ${reconcileSeconds}`,
    `controller_runtime_reconcile_time_seconds_count{controller="app"} ${reconciles}`,
    `workqueue_queue_duration_seconds_sum{name="app"} ${waitSeconds}`,
    `workqueue_queue_duration_seconds_count{name="app"} ${waits}`,
  ].join('\n');

describe('the work queue from /metrics', () => {
  it('over the whole run: counts and mean milliseconds', () => {
    expect(queueOf(exposition(100, 5, 100, 20), 42)).toEqual({ reconciles: 100, reconcileMsMean: 50, queueWaitMsMean: 200, mostQueued: 42 });
  });

  it('over one phase: what changed between two reads, not the means since start', () => {
    const before = exposition(100, 5, 100, 20);
    // 10 reconciles of 10 ms each, 10 waits of 1 ms each, after 100 slow ones.
    expect(queueBetween(before, exposition(110, 5.1, 110, 20.01))).toEqual({ reconciles: 10, reconcileMsMean: 10, queueWaitMsMean: 1 });
    expect(queueBetween(before, before)).toEqual({ reconciles: 0, reconcileMsMean: 0, queueWaitMsMean: 0 });
  });
});
