// A failed API request in the terms a caller acts on: its code, reason and message, and whether to retry.
import { ApiError } from './rest.js';

/** What a failed API request said: HTTP code, the Status reason and the server's message. */
export interface ApiFailure {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  /**
   * Set when the server throttled the request (429, or 503 with Retry-After): how long it asked to
   * wait (1 s when it did not say). Such a request was not executed: retry it later, report nothing.
   */
  readonly retryAfterMs?: number;
}

/** The server's own words for a failed request (an ApiError of the RestClient), or the error's message. */
export function apiFailure(e: unknown): ApiFailure {
  if (e instanceof ApiError)
    return { code: e.code, reason: e.reason, message: e.message, retryAfterMs: e.throttled ? (e.retryAfterMs ?? 1000) : undefined };
  return { code: 0, reason: 'ClientError', message: e instanceof Error ? e.message : String(e) };
}
