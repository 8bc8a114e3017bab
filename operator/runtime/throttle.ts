// What the operator does when the API server says "not now": 429 Too Many Requests (API Priority and
// Fairness rejecting a request of a saturated priority level, or a max-inflight limit), or 503 Service
// Unavailable with a Retry-After (an overloaded or starting server). Such a request was not executed,
// so it is safe to send again, whatever its verb: after the server's Retry-After at least, with an
// exponential backoff on top for repeated refusals, jittered so that throttled callers do not come back
// in lockstep, and capped.

/** Longest Retry-After honoured; a larger (or far-future date) value is taken as this. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/**
 * A Retry-After header value in milliseconds from `nowMs`: delay-seconds (`"1"`) or an HTTP-date
 * (`"Wed, 21 Oct 2015 07:28:00 GMT"`), as RFC 9110 section 10.2.3 allows. Undefined when absent or
 * not understood; a date in the past is 0; anything beyond MAX_RETRY_AFTER_MS is capped there.
 */
export function parseRetryAfter(value: string | readonly string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value) as string | undefined;
  const text = raw?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // Only an IMF-fixdate or one of the obsolete HTTP-date forms; Date.parse alone would take "1.5" or "soon-ish 2025".
  if (!/^[A-Za-z]{3},? /.test(text) && !/^[A-Za-z]+day, /.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - nowMs), MAX_RETRY_AFTER_MS);
}

/** Whether a response means "throttled, send it again later": 429, or 503 that says when (Retry-After). */
export function isThrottled(code: number, retryAfterMs: number | undefined): boolean {
  return code === 429 || (code === 503 && retryAfterMs !== undefined);
}

export interface BackoffOptions {
  /** First wait when the server gave no Retry-After. @default 1000 (what APF's rejections say) */
  readonly baseMs?: number;
  /** Longest wait of the exponential part; a longer Retry-After is still honoured. @default 30000 */
  readonly capMs?: number;
  /** Up to this fraction of the wait is added at random. @default 0.5 */
  readonly jitter?: number;
}

/**
 * How long to wait before the `attempt`-th retry (0 for the first) of a throttled request: the
 * server's Retry-After or the exponential backoff `base * 2^attempt` (capped at `capMs`), whichever
 * is longer, plus up to `jitter` of it at random. Never less than the Retry-After.
 * @param random a number in [0, 1) (Math.random; fixed in tests)
 */
export function throttleDelayMs(
  attempt: number,
  retryAfterMs: number | undefined,
  opts: BackoffOptions = {},
  random: () => number = Math.random,
): number {
  const base = opts.baseMs ?? 1000;
  const cap = opts.capMs ?? 30_000;
  const jitter = opts.jitter ?? 0.5;
  const exponential = Math.min(base * 2 ** Math.max(0, attempt), cap);
  const wait = Math.max(exponential, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
  return Math.round(wait * (1 + jitter * random()));
}

/**
 * A reconcile that stopped because the API server throttled it. Not a failure of the CR: its status
 * is left as it is (no Degraded), and the work queue runs the key again after `retryAfterMs` (already
 * jittered) at the earliest, taking other keys meanwhile.
 */
export class ThrottledError extends Error {
  override readonly name = 'ThrottledError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}
