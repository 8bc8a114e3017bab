import { describe, expect, it } from '@jest/globals';
import { backoffDelay, QueueHooks, TokenBucket, WorkQueue } from '../../operator/runtime/queue.js';
import { ThrottledError } from '../../operator/runtime/throttle.js';

/** A promise the test resolves by hand, to hold a handler in flight for as long as it wants. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets already-settled promise callbacks run (handlers start synchronously from add/start). */
const tick = () => new Promise<void>((r) => setImmediate(r));

/** A handler that records calls and concurrency, and blocks each call until released. */
function recorder(opts: { block?: boolean } = {}) {
  const calls: string[] = [];
  const inFlight = new Set<string>();
  let maxInFlight = 0;
  let sameKeyOverlap = false;
  const gates: Map<string, { promise: Promise<void>; resolve: () => void }[]> = new Map();
  const handler = async (key: string) => {
    if (inFlight.has(key)) sameKeyOverlap = true;
    inFlight.add(key);
    maxInFlight = Math.max(maxInFlight, inFlight.size);
    calls.push(key);
    if (opts.block) {
      const gate = deferred();
      gates.set(key, [...(gates.get(key) ?? []), gate]);
      await gate.promise;
    }
    inFlight.delete(key);
  };
  const release = (key: string) => {
    const gate = gates.get(key)?.shift();
    if (!gate) throw new Error(`no handler for ${key} is waiting`);
    gate.resolve();
  };
  return { handler, calls, inFlight, release, stats: () => ({ maxInFlight, sameKeyOverlap }) };
}

describe('WorkQueue', () => {
  it('collapses repeated adds of a queued key into one run', async () => {
    const r = recorder();
    const q = new WorkQueue(r.handler, { workers: 2 });
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.depth).toBe(2);
    q.start();
    await q.whenIdle();
    expect(r.calls.sort()).toEqual(['a', 'b']);
    expect(q.depth).toBe(0);
  });

  it('runs a key added while it is processing once more afterwards, never concurrently', async () => {
    const r = recorder({ block: true });
    const q = new WorkQueue(r.handler, { workers: 4 });
    q.start();
    q.add('a');
    await tick();
    expect(r.calls).toEqual(['a']);
    q.add('a');
    q.add('a');
    await tick();
    expect(r.calls).toEqual(['a']); // still only the first run
    r.release('a');
    await tick();
    expect(r.calls).toEqual(['a', 'a']);
    r.release('a');
    await q.whenIdle();
    expect(r.calls).toEqual(['a', 'a']);
    expect(r.stats().sameKeyOverlap).toBe(false);
  });

  it('runs different keys in parallel up to the worker count', async () => {
    const r = recorder({ block: true });
    const q = new WorkQueue(r.handler, { workers: 2 });
    q.add('a');
    q.add('b');
    q.add('c');
    q.start();
    await tick();
    expect([...r.inFlight].sort()).toEqual(['a', 'b']);
    expect(q.depth).toBe(1);
    q.add('a'); // dirty while processing: must wait for its own run to end
    r.release('b');
    await tick();
    expect([...r.inFlight].sort()).toEqual(['a', 'c']);
    r.release('a');
    await tick();
    expect([...r.inFlight].sort()).toEqual(['a', 'c']); // the second run of a
    r.release('a');
    r.release('c');
    await q.whenIdle();
    expect(r.calls).toEqual(['a', 'b', 'c', 'a']);
    expect(r.stats()).toEqual({ maxInFlight: 2, sameKeyOverlap: false });
  });

  it('retries a failing key with exponential backoff, capped, and resets after success', async () => {
    let failuresLeft = 4;
    let calls = 0;
    const retries: [string, number, number][] = [];
    const results: string[] = [];
    const hooks: QueueHooks = {
      onRetry: (key, failures, delayMs) => retries.push([key, failures, delayMs]),
      onResult: (_key, result) => results.push(result),
    };
    const q = new WorkQueue(
      async () => {
        calls++;
        if (failuresLeft-- > 0) throw new Error('boom');
      },
      { workers: 1, baseDelayMs: 2, maxDelayMs: 8 },
      hooks,
    );
    q.start();
    q.add('k');
    await q.whenIdle();
    expect(calls).toBe(5);
    expect(retries).toEqual([
      ['k', 1, 2],
      ['k', 2, 4],
      ['k', 3, 8],
      ['k', 4, 8],
    ]);
    expect(results).toEqual(['error', 'error', 'error', 'error', 'success']);

    // After a success the key's failure count is forgotten: the next failure waits the base delay.
    failuresLeft = 1;
    q.add('k');
    await q.whenIdle();
    expect(retries.at(-1)).toEqual(['k', 1, 2]);
    expect(calls).toBe(7);
  });

  it('forget() restarts a failing key\'s backoff from the base delay', async () => {
    let failuresLeft = 4;
    const retries: number[] = [];
    const q = new WorkQueue(
      async () => {
        if (failuresLeft-- > 0) throw new Error('boom');
      },
      { workers: 1, baseDelayMs: 2, maxDelayMs: 1000 },
      { onRetry: (_key, _failures, delayMs) => retries.push(delayMs) },
    );
    q.start();
    q.add('k');
    // Three failures in a row: 2, 4, 8 ms; then forgotten, the fourth waits the base delay again.
    while (retries.length < 3) await new Promise((r) => setTimeout(r, 1));
    q.forget('k');
    await q.whenIdle();
    expect(retries).toEqual([2, 4, 8, 2]);
  });

  it('addUnlessFailing (an event the key\'s own run caused) never cuts a failing key\'s backoff short', async () => {
    // The handler "writes status" at every run, and the write comes back as an event during the run.
    let calls = 0;
    const q = new WorkQueue(
      async (key) => {
        calls++;
        q.addUnlessFailing(key);
        throw new Error(`denied, request ${calls}`);
      },
      { workers: 1, baseDelayMs: 60_000, maxDelayMs: 60_000 },
    );
    q.start();
    q.add('k');
    await q.whenIdle({ ignoreDelayed: true });
    expect(calls).toBe(1);
    // The event arrives after the run, the retry pending: still only the retry will run it.
    q.addUnlessFailing('k');
    await q.whenIdle({ ignoreDelayed: true });
    expect(calls).toBe(1);
    // A plain add (news from elsewhere) still promotes it.
    q.add('k');
    await q.whenIdle({ ignoreDelayed: true });
    expect(calls).toBe(2);
    await q.shutdown(0);
  });

  it('addUnlessFailing runs a healthy key again, once more after a run in progress that succeeds', async () => {
    const r = recorder({ block: true });
    const q = new WorkQueue(r.handler, { workers: 1 });
    q.start();
    q.addUnlessFailing('k');
    await tick();
    expect(r.calls).toEqual(['k']);
    q.addUnlessFailing('k');
    r.release('k');
    await tick();
    expect(r.calls).toEqual(['k', 'k']);
    r.release('k');
    await q.whenIdle();
  });

  it('computes backoff as base * 2^failures capped at max', () => {
    expect(backoffDelay(0, 5, 1_000_000)).toBe(5);
    expect(backoffDelay(1, 5, 1_000_000)).toBe(10);
    expect(backoffDelay(10, 5, 1_000_000)).toBe(5120);
    expect(backoffDelay(30, 5, 1_000_000)).toBe(1_000_000);
    expect(backoffDelay(5000, 5, 1_000_000)).toBe(1_000_000); // 2^5000 is Infinity
  });

  it('waits at least a failure\'s retryAfterMs (a throttled request) and takes other keys meanwhile', async () => {
    const retries: number[] = [];
    const done: string[] = [];
    let throttledOnce = false;
    const q = new WorkQueue(
      async (key) => {
        if (key === 'throttled' && !throttledOnce) {
          throttledOnce = true;
          throw new ThrottledError('429', 60);
        }
        done.push(key);
      },
      { workers: 1, baseDelayMs: 1, maxDelayMs: 1000 },
      { onRetry: (_k, _f, delayMs) => retries.push(delayMs) },
    );
    q.start();
    q.add('throttled');
    q.add('other');
    await q.whenIdle({ ignoreDelayed: true });
    // The retry was scheduled after the throttle's 60 ms, not the 1 ms base backoff, and the other key ran first.
    expect(retries).toEqual([60]);
    expect(done).toEqual(['other']);
    await q.whenIdle();
    expect(done).toEqual(['other', 'throttled']);
  });

  it('ignores a retryAfterMs that is not a positive number', async () => {
    const retries: number[] = [];
    let failed = false;
    const q = new WorkQueue(
      async () => {
        if (!failed) {
          failed = true;
          throw Object.assign(new Error('odd'), { retryAfterMs: 'soon' });
        }
      },
      { workers: 1, baseDelayMs: 3, maxDelayMs: 1000 },
      { onRetry: (_k, _f, delayMs) => retries.push(delayMs) },
    );
    q.start();
    q.add('k');
    await q.whenIdle();
    expect(retries).toEqual([3]);
  });

  it('TokenBucket: a burst at once, then one token per 1/qps s, reservations queued in order', () => {
    let now = 0;
    const b = new TokenBucket(10, 3, () => now);
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 0]);
    expect(b.reserve()).toBeCloseTo(100);
    expect(b.reserve()).toBeCloseTo(200);
    now = 1000; // 10 tokens came back, minus the 2 reserved ahead: capped at the burst
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 0]);
    expect(b.reserve()).toBeCloseTo(100);
  });

  it('spreads the retries of many failing keys over the retry rate; a key added meanwhile runs before them', async () => {
    const retries: number[] = [];
    const done: string[] = [];
    const q = new WorkQueue(
      async (key) => {
        if (key.startsWith('bad')) throw new Error('always');
        done.push(key);
      },
      // The bucket's clock held still: the six failures count as one instant whatever the machine's
      // load (with the real clock, a pause of 10 ms between two failures refilled the bucket a little).
      { workers: 1, baseDelayMs: 1, maxDelayMs: 1, retryQps: 20, retryBurst: 2, retryClock: () => 0 },
      { onRetry: (_k, _f, delayMs) => retries.push(delayMs) },
    );
    q.start();
    for (let i = 0; i < 6; i++) q.add(`bad-${i}`);
    q.add('good');
    await q.whenIdle({ ignoreDelayed: true });
    expect(done).toEqual(['good']);
    // Per-key backoff alone would retry each after 1 ms; the bucket (2 at once, then 20 a second) spaces them 50 ms apart.
    expect(retries.slice(0, 6)).toEqual([1, 1, 50, 100, 150, 200]);
    expect(await q.shutdown(1000)).toBe(true);
  });

  it('keeps other keys flowing while one key keeps failing', async () => {
    const done: string[] = [];
    const q = new WorkQueue(
      async (key) => {
        if (key === 'bad') throw new Error('always');
        done.push(key);
      },
      { workers: 1, baseDelayMs: 1, maxDelayMs: 5 },
    );
    q.start();
    q.add('bad');
    q.add('good-1');
    q.add('good-2');
    await q.whenIdle({ ignoreDelayed: true });
    expect(done).toEqual(['good-1', 'good-2']);
    expect(await q.shutdown(1000)).toBe(true);
  });

  it('adds a key after a delay; the earliest of several pending delays wins', async () => {
    const r = recorder();
    const q = new WorkQueue(r.handler, { workers: 1 });
    q.start();
    const t0 = Date.now();
    q.addAfter('a', 40);
    q.addAfter('a', 60); // later than the pending one: ignored
    // Settled callbacks only, no turn of the event loop: its timers phase could run the 40 ms timer
    // already when the process was kept off the CPU that long (a loaded machine does).
    await Promise.resolve();
    expect(r.calls).toEqual([]);
    await q.whenIdle();
    expect(r.calls).toEqual(['a']);
    // Timers may fire a millisecond early against Date.now(); the bound only proves it waited.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(30);

    q.addAfter('b', 10_000);
    q.addAfter('b', 5); // earlier: replaces the pending delay
    await q.whenIdle();
    expect(r.calls).toEqual(['a', 'b']);
  });

  it('runs a key again when the handler asks to requeue after a delay', async () => {
    const results: string[] = [];
    let calls = 0;
    const q = new WorkQueue(
      async () => (++calls === 1 ? { requeueAfterMs: 5 } : undefined),
      { workers: 1 },
      { onResult: (_k, result) => results.push(result) },
    );
    q.start();
    q.add('a');
    await q.whenIdle();
    expect(calls).toBe(2);
    expect(results).toEqual(['requeue', 'success']);
  });

  it('drops a pending retry when the key succeeds meanwhile', async () => {
    let calls = 0;
    const retries: number[] = [];
    const q = new WorkQueue(
      async () => {
        if (++calls === 1) throw new Error('first run fails');
      },
      { workers: 1, baseDelayMs: 60_000 },
      { onRetry: (_k, failures) => retries.push(failures) },
    );
    q.start();
    q.add('a');
    await q.whenIdle({ ignoreDelayed: true });
    expect(retries).toEqual([1]); // a retry is pending, a minute away
    q.add('a'); // an event brings the key back now, and it succeeds
    await q.whenIdle(); // resolves only because the pending retry was dropped
    expect(calls).toBe(2);
  });

  it('on shutdown stops taking work and waits for in-flight handlers', async () => {
    const r = recorder({ block: true });
    const q = new WorkQueue(r.handler, { workers: 1 });
    q.start();
    q.add('a');
    q.add('b');
    q.addAfter('c', 1);
    await tick();
    expect(r.calls).toEqual(['a']);
    let finished: boolean | undefined;
    const stopping = q.shutdown(5_000).then((ok) => (finished = ok));
    q.add('d');
    await new Promise((res) => setTimeout(res, 10));
    expect(finished).toBeUndefined(); // still waiting for a
    r.release('a');
    await stopping;
    expect(finished).toBe(true);
    await new Promise((res) => setTimeout(res, 10));
    expect(r.calls).toEqual(['a']); // b (queued), c (delayed) and d (added late) never ran
    expect(q.depth).toBe(0);
  });

  it('resolves shutdown false when in-flight work outlasts the grace period', async () => {
    const r = recorder({ block: true });
    const q = new WorkQueue(r.handler, { workers: 1 });
    q.start();
    q.add('slow');
    await tick();
    expect(await q.shutdown(20)).toBe(false);
    r.release('slow');
    await q.whenIdle();
  });

  it('reports the queue depth to its hook', async () => {
    const depths: number[] = [];
    const q = new WorkQueue(async () => undefined, { workers: 1 }, { onDepth: (d) => depths.push(d) });
    q.add('a');
    q.add('b');
    q.start();
    await q.whenIdle();
    expect(depths.slice(0, 2)).toEqual([1, 2]);
    expect(depths.at(-1)).toBe(0);
  });

  it('reports how long each key waited from its add to a worker, on its clock', async () => {
    let now = 1_000;
    const waits: [string, number][] = [];
    const q = new WorkQueue(async () => undefined, { workers: 1, retryClock: () => now }, { onWait: (key, s) => waits.push([key, s]) });
    q.add('a');
    now += 2_500;
    q.add('b');
    now += 500;
    q.start();
    await q.whenIdle();
    expect(waits).toEqual([['a', 3], ['b', 0.5]]);
  });

  describe('event keys before failure retries', () => {
    /** Waits (without asserting any time) until `done()`: for timers the queue set to fire. */
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((r) => setTimeout(r, 1));
    };

    /**
     * A queue of one worker whose `bad-*` keys fail on their first run, `paced` asks to run again
     * after 1 ms on its first, and `blocker` holds the worker until released: the retries' and the
     * requeue's 1 ms timers fire while it runs, so they queue up behind it with what the test adds.
     */
    function setUp(opts: { retryMaxWaitMs?: number; retryClock?: () => number } = {}) {
      const calls: string[] = [];
      const ran = new Set<string>();
      const gate = deferred();
      const q = new WorkQueue(async (key) => {
        calls.push(key);
        const first = !ran.has(key);
        ran.add(key);
        if (key === 'blocker') await gate.promise;
        if (key.startsWith('bad') && first) throw new Error('first run fails');
        if (key === 'paced' && first) return { requeueAfterMs: 1 };
        return undefined;
      }, { workers: 1, baseDelayMs: 1, retryClock: () => 0, ...opts });
      q.start();
      return { q, calls, release: gate.resolve };
    }

    it('serves keys added by events before keys back from a failure retry', async () => {
      const { q, calls, release } = setUp();
      q.add('bad-1');
      q.add('bad-2');
      q.add('blocker');
      await until(() => calls.includes('blocker') && q.depth === 2); // both retries queued behind the blocker
      q.add('good-1');
      q.add('good-2');
      expect(q.depth).toBe(4);
      release();
      await q.whenIdle();
      // One FIFO would run bad-1 and bad-2 (queued first) before good-1 and good-2.
      expect(calls).toEqual(['bad-1', 'bad-2', 'blocker', 'good-1', 'good-2', 'bad-1', 'bad-2']);
    });

    it('promotes a waiting retry that an event adds again, and runs it once', async () => {
      const { q, calls, release } = setUp();
      q.add('bad-1');
      q.add('bad-2');
      q.add('bad-3');
      q.add('blocker');
      await until(() => calls.includes('blocker') && q.depth === 3);
      q.add('good');
      q.add('bad-3'); // moves up behind good; not queued twice
      q.add('bad-3');
      expect(q.depth).toBe(4);
      release();
      await q.whenIdle();
      expect(calls).toEqual(['bad-1', 'bad-2', 'bad-3', 'blocker', 'good', 'bad-3', 'bad-1', 'bad-2']);
    });

    it('queues a handler\'s requeueAfterMs (status pacing) with the event keys, ahead of retries', async () => {
      const { q, calls, release } = setUp();
      q.add('bad'); // its retry timer (1 ms) is set first and fires first
      q.add('paced');
      q.add('blocker');
      await until(() => calls.includes('blocker') && q.depth === 2);
      release();
      await q.whenIdle();
      expect(calls).toEqual(['bad', 'paced', 'blocker', 'paced', 'bad']);
    });

    it('a retry waits behind a constant stream of events at most retryMaxWaitMs of its clock, then goes first', async () => {
      let now = 0;
      const calls: string[] = [];
      let badFailed = false;
      const q: WorkQueue = new WorkQueue(async (key) => {
        calls.push(key);
        if (key === 'bad' && !badFailed) {
          badFailed = true;
          throw new Error('first run fails');
        }
        if (!key.startsWith('event-')) return;
        // A turn of timers: the retry's 1 ms timer, set before this one, has fired when this resumes.
        await new Promise((r) => setTimeout(r, 2));
        const n = Number(key.slice('event-'.length));
        if (n === 5) now = 99; // short of the bound
        if (n === 10) now = 100; // at the bound: the retry goes before event-11
        if (n < 12) q.add(`event-${n + 1}`); // the stream: an event key always waits
      }, { workers: 1, baseDelayMs: 1, retryMaxWaitMs: 100, retryClock: () => now });
      q.start();
      q.add('bad');
      q.add('event-1');
      await q.whenIdle();
      const events = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `event-${from + i}`);
      expect(calls).toEqual(['bad', ...events(1, 10), 'bad', ...events(11, 12)]);
    });

    it('a success drops a pending retry also when it asks to run again later (no retry-tier run of a healthy key)', async () => {
      let calls = 0;
      const q = new WorkQueue(async () => {
        calls++;
        if (calls === 1) throw new Error('first run fails');
        return calls === 2 ? { requeueAfterMs: 60_000 } : undefined;
      }, { workers: 1, baseDelayMs: 20 });
      q.start();
      q.add('a');
      await q.whenIdle({ ignoreDelayed: true }); // failed; its retry 20 ms away
      q.add('a'); // runs at once (no timer turn since): succeeds and asks for a minute
      await q.whenIdle({ ignoreDelayed: true });
      expect(calls).toBe(2);
      // A later timer than the retry's: had the retry been kept (the earlier of the two delays), it ran by now.
      await new Promise((r) => setTimeout(r, 50));
      expect(calls).toBe(2);
      expect(await q.shutdown(1000)).toBe(true);
    });
  });

  it('rejects a worker count below one', () => {
    expect(() => new WorkQueue(async () => undefined, { workers: 0 })).toThrow(/workers/);
  });
});
