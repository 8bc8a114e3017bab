import { describe, expect, it } from '@jest/globals';
import { apiFailure } from '../../operator/runtime/api-failure.js';
import { ApiError } from '../../operator/runtime/rest.js';
import { isThrottled, MAX_RETRY_AFTER_MS, parseRetryAfter, throttleDelayMs } from '../../operator/runtime/throttle.js';

const NOW = Date.parse('2026-12-03T10:00:00Z');

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('1', NOW)).toBe(1000);
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter(' 30 ', NOW)).toBe(30_000);
    expect(parseRetryAfter(['2', '5'], NOW)).toBe(2000); // a repeated header: the first one
  });

  it('reads an HTTP-date, relative to now; a past date is 0', () => {
    expect(parseRetryAfter('Thu, 03 Dec 2026 10:00:05 GMT', NOW)).toBe(5000);
    expect(parseRetryAfter('Thursday, 03-Dec-26 10:00:07 GMT', NOW)).toBe(7000); // obsolete RFC 850 form
    expect(parseRetryAfter('Thu, 03 Dec 2026 09:59:00 GMT', NOW)).toBe(0);
  });

  it('caps what it honours', () => {
    expect(parseRetryAfter('86400', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Fri, 04 Dec 2026 10:00:00 GMT', NOW)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('gives undefined for an absent or malformed value', () => {
    for (const bad of [undefined, '', '  ', '-1', '1.5', 'soon', '2026-12-03T10:00:05Z', '5s', '0x10']) {
      expect(parseRetryAfter(bad, NOW)).toBeUndefined();
    }
  });
});

describe('isThrottled', () => {
  it('is 429 always, 503 only with a Retry-After, nothing else', () => {
    expect(isThrottled(429, undefined)).toBe(true);
    expect(isThrottled(429, 1000)).toBe(true);
    expect(isThrottled(503, 1000)).toBe(true);
    expect(isThrottled(503, 0)).toBe(true);
    expect(isThrottled(503, undefined)).toBe(false);
    expect(isThrottled(500, 1000)).toBe(false);
    expect(isThrottled(409, undefined)).toBe(false);
  });
});

describe('throttleDelayMs', () => {
  const none = () => 0;
  const most = () => 0.999999;

  it('grows exponentially from the base and stops at the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map((a) => throttleDelayMs(a, undefined, { baseMs: 1000, capMs: 30_000 }, none)))
      .toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('never waits less than the Retry-After, even above the cap', () => {
    expect(throttleDelayMs(0, 5000, { baseMs: 1000 }, none)).toBe(5000);
    expect(throttleDelayMs(3, 1000, { baseMs: 1000 }, none)).toBe(8000);
    expect(throttleDelayMs(0, 120_000, { capMs: 30_000 }, none)).toBe(120_000);
    expect(throttleDelayMs(0, 10 * MAX_RETRY_AFTER_MS, {}, none)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('adds up to the jitter fraction on top, never below the wait', () => {
    expect(throttleDelayMs(0, 1000, { jitter: 0.5 }, most)).toBe(1500);
    expect(throttleDelayMs(0, 1000, { jitter: 0 }, most)).toBe(1000);
    const seen = new Set(Array.from({ length: 200 }, () => throttleDelayMs(0, 1000)));
    for (const d of seen) {
      expect(d).toBeGreaterThanOrEqual(1000);
      expect(d).toBeLessThanOrEqual(1500);
    }
    expect(seen.size).toBeGreaterThan(10); // spread out, not in lockstep
  });
});

describe('apiFailure on throttled requests', () => {
  it('carries the Retry-After of a throttled ApiError, 1 s when the server gave none', () => {
    expect(apiFailure(new ApiError(429, 'TooManyRequests', 'too many requests', 'PATCH', '/x', 3000)).retryAfterMs).toBe(3000);
    expect(apiFailure(new ApiError(429, 'TooManyRequests', 'too many requests', 'PATCH', '/x')).retryAfterMs).toBe(1000);
    expect(apiFailure(new ApiError(503, 'ServiceUnavailable', 'later', 'GET', '/x', 2000)).retryAfterMs).toBe(2000);
    expect(apiFailure(new ApiError(503, 'ServiceUnavailable', 'down', 'GET', '/x')).retryAfterMs).toBeUndefined();
    expect(apiFailure(new ApiError(422, 'Invalid', 'bad', 'PATCH', '/x')).retryAfterMs).toBeUndefined();
  });

  it('reports an error that is not an API answer (a refused connection) as a client error, never as throttling', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    expect(apiFailure(refused)).toEqual({ code: 0, reason: 'ClientError', message: 'connect ECONNREFUSED 127.0.0.1:6443' });
  });
});
