// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does it,
// so that of several operator replicas exactly one reconciles at a time.
// One concern past 350 lines: acquiring, renewing, losing and releasing the Lease are one state machine
// over one Lease record and one clock, and the write fence (mayWrite) reads that same state, so a split
// would pass the state between files without making any part readable alone.
import { V1Lease } from '@kubernetes/client-node';
import { apiFailure } from './api-failure.js';
import { Logger, silentLogger } from './log.js';
import { ApiError, RestClient } from './rest.js';
import { throttleDelayMs } from './throttle.js';

/** Where the Lease lives, who we are, and the timing (client-go's names and meaning). */
export interface LeaderElectorOptions {
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Name of the Lease. */
  readonly name: string;
  /** This candidate's identity, written to `holderIdentity` (the pod name in a cluster). */
  readonly identity: string;
  /** How long a holder's claim lasts after its last renewal; others wait this long to take over. */
  readonly leaseDurationSeconds: number;
  /** The leader gives up when it could not renew for this long; must be below the lease duration. */
  readonly renewDeadlineSeconds: number;
  /** Time between attempts to acquire or renew. */
  readonly retryPeriodSeconds: number;
  /** @default no logging */
  readonly log?: Logger;
  /**
   * Monotonic milliseconds: expiry, renew deadline, retry timing. Never compared with the Lease's
   * own timestamps, which come from whichever host wrote them. @default performance.now
   */
  readonly clock?: () => number;
}

/** What to do when leadership changes. */
export interface LeaderCallbacks {
  /** This candidate became the leader: start reconciling. */
  onStartedLeading(): void;
  /**
   * This candidate lost the lease involuntarily (could not renew within the renew deadline, or
   * another holder took it). Like controller-runtime, the operator should exit. Not called by
   * `release()` or `stop()`.
   */
  onStoppedLeading(): void;
  /** The Lease names a new holder (this candidate included). */
  onNewLeader?(identity: string): void;
}

/** The part of a Lease spec that decides who leads (times as the API server spells them). */
export interface LeaseRecord {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  readonly acquireTime?: Date | string;
  readonly renewTime?: Date | string;
  readonly leaseTransitions?: number;
}

/**
 * What this process last saw of the Lease, and when by its own monotonic clock (client-go's
 * observedRecord and observedTime). Another holder's claim lasts its leaseDurationSeconds from when
 * this process saw the record change, never from the renewTime in it: that time comes from another
 * host's clock, and judging it against ours would let a clock running ahead take a lease that is
 * still being renewed, or one running behind wait out a lease long dead.
 */
export class LeaseObservation {
  private record?: string;
  private observedAtMs = 0;
  private holderIdentity = '';
  private durationSeconds?: number;

  /** @param clock monotonic milliseconds (performance.now in the operator) */
  constructor(private readonly clock: () => number) {}

  /** Notes the Lease as read, or as this process's own write returned it; a changed record restarts its time. */
  observe(record: LeaseRecord): void {
    const key = JSON.stringify([
      record.holderIdentity ?? '',
      record.leaseDurationSeconds,
      spelled(record.acquireTime),
      spelled(record.renewTime),
      record.leaseTransitions,
    ]);
    if (key === this.record) return;
    this.record = key;
    this.observedAtMs = this.clock();
    this.holderIdentity = record.holderIdentity ?? '';
    this.durationSeconds = record.leaseDurationSeconds;
  }

  /** The holder of the record last seen ('' for none or a released Lease). */
  get holder(): string {
    return this.holderIdentity;
  }

  /**
   * Whether a candidate other than `identity` holds the Lease now: the record names it, and this
   * process saw that record change less than its lease duration (else `fallbackDurationSeconds`) ago.
   */
  heldByOther(identity: string, fallbackDurationSeconds: number): boolean {
    if (this.record === undefined || this.holderIdentity === '' || this.holderIdentity === identity) return false;
    return this.clock() < this.observedAtMs + (this.durationSeconds ?? fallbackDurationSeconds) * 1000;
  }
}

/** A Lease time as the record spells it (a string from the server; a Date where client-node parsed it). */
function spelled(value: Date | string | undefined): string | undefined {
  return value instanceof Date ? value.toISOString() : (value ?? undefined);
}

function statusOf(e: unknown): number | undefined {
  return e instanceof ApiError && e.code > 0 ? e.code : undefined;
}

/** A Lease's MicroTime as the API server spells it (RFC 3339 with six fractional digits). */
function microTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, -1)}000Z`;
}

/**
 * Campaigns for a Lease and keeps renewing it while leading. A candidate takes the Lease when it
 * is absent, released (no holder) or expired: its record unchanged for leaseDurationSeconds since
 * this process saw it change (client-go's rule; no remote timestamp is compared with this host's
 * clock). Writes carry the read resourceVersion, so of two racing candidates one gets 409 Conflict.
 * `mayWrite` fences the operator's other writes: only a leader within its renew deadline writes.
 */
export class LeaderElector {
  private readonly log: Logger;
  private callbacks?: LeaderCallbacks;
  private leading = false;
  private stopped = false;
  /** When the last successful acquire/renew was sent, on the monotonic clock. */
  private lastRenewMs = 0;
  private announcedHolder = '';
  private readonly clock: () => number;
  private readonly observed: LeaseObservation;
  /** The Lease as our last successful write returned it (its resourceVersion): the leader's renewals start from it. */
  private lastWritten?: V1Lease;
  private sleeping?: { timer: NodeJS.Timeout; wake: () => void };
  /** Set when the last attempt was throttled (429, or 503 with Retry-After): wait at least this long. */
  private throttledForMs?: number;
  private throttledInARow = 0;
  private loop?: Promise<void>;

  /**
   * @param rest the operator's own client: renewals (every retry period) reuse its kept-alive
   *   connections instead of opening a TLS connection each
   */
  constructor(
    private readonly rest: RestClient,
    private readonly opts: LeaderElectorOptions,
  ) {
    if (opts.renewDeadlineSeconds >= opts.leaseDurationSeconds) {
      throw new Error(
        `leader election: renew deadline (${opts.renewDeadlineSeconds}s) must be less than the lease duration (${opts.leaseDurationSeconds}s)`,
      );
    }
    if (opts.retryPeriodSeconds <= 0) throw new Error(`leader election: retry period must be positive, got ${opts.retryPeriodSeconds}s`);
    this.log = (opts.log ?? silentLogger).child({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
    this.clock = opts.clock ?? (() => performance.now());
    this.observed = new LeaseObservation(this.clock);
  }

  /** Whether this candidate currently leads. */
  isLeader(): boolean {
    return this.leading;
  }

  /**
   * The write fence (RestClient.fenceWrites): undefined while this candidate leads and its last
   * renewal was sent less than the renew deadline ago, else why it may not write. Checked by the
   * clock at each write, not only by the renew loop: a process frozen past its lease (SIGSTOP, a
   * paused VM) wakes with timers and socket data queued, and whichever runs first must not write.
   * Past the deadline leadership is lost here and now (onStoppedLeading), as in the renew loop.
   */
  mayWrite(): string | undefined {
    if (!this.leading) return 'not the leader';
    if (this.clock() < this.renewDeadlineMs()) return undefined;
    const reason = `could not renew within ${this.opts.renewDeadlineSeconds}s`;
    this.lose(reason);
    return `leadership lost: ${reason}`;
  }

  /**
   * Campaigns until stopped: calls `onStartedLeading` on acquiring the Lease, then renews every
   * retry period. Resolves when the loop ends: leadership lost (after `onStoppedLeading`),
   * `release()` or `stop()`. Do not await it before starting other work.
   */
  run(callbacks: LeaderCallbacks): Promise<void> {
    if (this.loop) throw new Error('leader election: run() was already called');
    this.callbacks = callbacks;
    this.loop = this.campaign();
    return this.loop;
  }

  /**
   * Graceful hand-over: stops campaigning and, if leading, clears the holder and sets the renew
   * time to now, so a standby takes over at its next attempt instead of waiting for expiry.
   */
  async release(): Promise<void> {
    this.halt();
    if (!this.loop) return;
    await this.loop;
    // Checked against the Lease itself: an attempt in flight during halt() may just have acquired it.
    // A renewal given up on at its deadline may still land meanwhile: its write makes ours conflict
    // (409), so read and try again.
    for (let tries = 1; ; tries++) {
      try {
        const lease = await this.request<V1Lease>('GET');
        if (lease.spec?.holderIdentity !== this.opts.identity) return;
        const now = microTime(Date.now());
        const spec = { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
        await this.request('PUT', { ...lease, spec });
        this.log.info('released the lease');
        return;
      } catch (e) {
        if (statusOf(e) === 409 && tries < 3) continue;
        // The lease then simply expires after its duration; shutting down must go on.
        this.log.warn('could not release the lease; a standby takes over when it expires', { err: e });
        return;
      }
    }
  }

  /**
   * Stops at once without touching the Lease and without callbacks, as a crash (SIGKILL) would:
   * others take over only after the lease duration. For tests and for a process about to exit.
   */
  stop(): void {
    this.halt();
  }

  private halt(): void {
    this.stopped = true;
    this.leading = false;
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.wake();
    }
  }

  private async campaign(): Promise<void> {
    this.log.info('campaigning for leadership');
    const retryMs = this.opts.retryPeriodSeconds * 1000;
    while (!this.stopped) {
      const renewed = await this.attempt();
      if (this.stopped) break;
      // A throttled attempt waits out the server's Retry-After (a leader that cannot renew within its
      // deadline still loses the lease, as it would with client-go).
      const throttledMs = this.throttledForMs ?? 0;
      if (!this.leading) {
        // Standbys jitter their polls (client-go uses factor 1.2) so they do not retry in lockstep.
        await this.sleep(Math.max(retryMs * (1 + Math.random() * 0.2), throttledMs));
      } else if (renewed) {
        // The next renewal one retry period after this one began (its renewTime), not after it
        // ended: the renew deadline counts from the renewTime, so a slow round trip must not also
        // delay the next renewal and leave it less of the deadline, or a leader on a busy machine loses its lease.
        await this.sleep(Math.max(0, this.lastRenewMs + retryMs - this.clock()));
      } else {
        // A renewal failed before the deadline (an error answer): try again soon, until the deadline.
        // A throttled one waits out the server's Retry-After, but never past the deadline: a leader
        // sleeping through it would go on leading on a Lease that may have expired, and a standby
        // take it meanwhile. At the deadline the next attempt steps down.
        const untilDeadlineMs = Math.max(0, this.renewDeadlineMs() - this.clock());
        await this.sleep(Math.min(Math.max(Math.min(retryMs, RETRY_RENEWAL_MS), throttledMs), untilDeadlineMs));
      }
    }
  }

  /** When the leader must have renewed by (its last renewal sent + the renew deadline), on the monotonic clock. */
  private renewDeadlineMs(): number {
    return this.lastRenewMs + this.opts.renewDeadlineSeconds * 1000;
  }

  /**
   * One acquire-or-renew round and the leadership transitions it implies; true when it holds the Lease.
   * The round is bounded by the renew deadline: at the deadline its requests are aborted (an answer
   * not yet in is dropped, a throttled retry not yet sent is not sent), so a leader that steps down
   * leaves no renewal of its own in flight to land afterwards.
   */
  private async attempt(): Promise<boolean> {
    const deadlineMs = this.leading ? this.renewDeadlineMs() : this.clock() + this.opts.renewDeadlineSeconds * 1000;
    if (this.leading && this.clock() >= deadlineMs) {
      this.lose(`could not renew within ${this.opts.renewDeadlineSeconds}s`);
      return false;
    }
    let outcome: { held: true; at: number } | { held: false; takenBy?: string };
    this.throttledForMs = undefined;
    const abort = new AbortController();
    const timeoutMs = Math.max(deadlineMs - this.clock(), 1);
    const timer = setTimeout(() => abort.abort(new Error(`lease request timed out after ${timeoutMs} ms (the renew deadline)`)), timeoutMs);
    try {
      outcome = await withTimeout(this.tryAcquireOrRenew(abort.signal), timeoutMs, 'lease request');
      this.throttledInARow = 0;
    } catch (e) {
      // Whatever is still in flight (withTimeout gave up on it) goes no further.
      abort.abort(new Error('lease request given up'));
      const code = statusOf(e);
      const retryAfterMs = apiFailure(e).retryAfterMs;
      if (retryAfterMs !== undefined) {
        this.throttledForMs = throttleDelayMs(this.throttledInARow++, retryAfterMs, { capMs: this.opts.leaseDurationSeconds * 1000 });
        this.log.warn('lease request throttled; waiting', { code, delayMs: this.throttledForMs });
      } else if (code === 409) this.log.debug('lease update conflicted with another writer; retrying', {});
      else this.log.warn('lease request failed', { err: e, code });
      outcome = { held: false };
    } finally {
      clearTimeout(timer);
    }
    if (this.stopped) return false;
    if (outcome.held) {
      this.lastRenewMs = outcome.at;
      if (!this.leading) {
        this.leading = true;
        this.log.info('became leader');
        this.callbacks?.onStartedLeading();
      }
      return true;
    }
    if (!this.leading) return false;
    if (outcome.takenBy !== undefined) this.lose(`the lease is now held by ${outcome.takenBy}`);
    else if (this.clock() >= deadlineMs) this.lose(`could not renew within ${this.opts.renewDeadlineSeconds}s`);
    return false;
  }

  private lose(reason: string): void {
    if (this.stopped) return;
    this.log.error('lost leadership', { reason });
    this.halt();
    this.callbacks?.onStoppedLeading();
  }

  /**
   * Reads the Lease and claims or renews it when free, expired or ours. A leader that finds another
   * holder named has lost it, whatever that holder's claim looks like: both may have written meanwhile.
   */
  private async tryAcquireOrRenew(signal?: AbortSignal): Promise<{ held: true; at: number } | { held: false; takenBy?: string }> {
    const { name, namespace, identity } = this.opts;
    // Sent at: the renew deadline and the write fence count from here, before any request goes out.
    const sentMs = this.clock();
    // The Lease's times are for people and for other clients; nothing here compares them with a clock.
    const now = microTime(Date.now());
    const mine = { holderIdentity: identity, leaseDurationSeconds: this.opts.leaseDurationSeconds, renewTime: now };
    const held = (written: V1Lease) => {
      this.lastWritten = written;
      this.observed.observe(written.spec ?? {});
      this.announce(identity);
      return { held: true as const, at: sentMs };
    };
    // Fast path (client-go's too): the leader renews with one write of the Lease its last write
    // returned. That write's resourceVersion makes it a compare-and-swap: if anyone wrote since, it
    // fails with 409 and the read-then-write below decides. One round trip instead of two.
    const last = this.leading ? this.lastWritten : undefined;
    if (last) {
      try {
        return held(await this.request<V1Lease>('PUT', { ...last, spec: { ...last.spec, ...mine } }, signal));
      } catch (e) {
        if (statusOf(e) !== 409) throw e;
        this.lastWritten = undefined;
        this.log.debug('the lease changed since our last renewal; reading it', {});
      }
    }
    let lease: V1Lease;
    try {
      lease = await this.request<V1Lease>('GET', undefined, signal);
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
      const created = await this.request<V1Lease>(
        'POST',
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: { ...mine, acquireTime: now, leaseTransitions: 0 },
        },
        signal,
      );
      return held(created);
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    this.observed.observe(spec);
    this.announce(holder);
    if (this.leading && holder !== '' && holder !== identity) return { held: false, takenBy: holder };
    if (this.observed.heldByOther(identity, this.opts.leaseDurationSeconds)) return { held: false };
    const takeover = holder !== identity;
    const body = {
      ...lease,
      spec: {
        ...spec,
        ...mine,
        acquireTime: takeover ? now : spec.acquireTime,
        leaseTransitions: takeover ? (spec.leaseTransitions ?? 0) + 1 : spec.leaseTransitions,
      },
    };
    // metadata.resourceVersion from the read makes this a compare-and-swap: 409 if anyone wrote since.
    const written = await this.request<V1Lease>('PUT', body, signal);
    if (takeover) this.log.info('took over the lease', { previousHolder: holder || undefined });
    return held(written);
  }

  /** Tells of a holder not seen before (onNewLeader). */
  private announce(holder: string): void {
    if (holder === this.announcedHolder) return;
    this.announcedHolder = holder;
    if (holder !== '') {
      this.log.info('new leader observed', { leader: holder });
      if (!this.stopped) this.callbacks?.onNewLeader?.(holder);
    }
  }

  /** GET or PUT the Lease, or POST it to the collection (the client's request hook counts them). */
  private request<T = unknown>(method: 'GET' | 'PUT' | 'POST', body?: object, signal?: AbortSignal): Promise<T> {
    const { name, namespace } = this.opts;
    const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
    // Unfenced: the fence (mayWrite) keeps the operator's writes to the leader; these decide who that is.
    return this.rest.request<T>(method, method === 'POST' ? collection : `${collection}/${encodeURIComponent(name)}`, {
      body,
      signal,
      unfenced: true,
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((wake) => {
      const timer = setTimeout(() => {
        this.sleeping = undefined;
        wake();
      }, ms);
      this.sleeping = { timer, wake };
    });
  }
}

/** Pause before the leader tries again after a failed renewal (an error answer, before its deadline). */
const RETRY_RENEWAL_MS = 250;

/** Rejects when `promise` takes longer than `ms`; a hung API server must not stall the renew loop. */
function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
