// A failed API request: the error the client throws (ApiError), and its terms a caller acts on (code,
// reason, message, and whether to retry).
import { isThrottled } from './throttle.js';

/** A request the API server answered with an error Status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly verb: string,
    readonly path: string,
    /** For a throttled request (429, or 503 with Retry-After) given up on: how long the server asked to wait. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  /** The error of an answer with error `code`: its Status's reason and message, or its text. */
  static ofAnswer(code: number, parsed: unknown, text: string, verb: string, path: string, retryAfterMs: number | undefined): ApiError {
    const status = (parsed ?? {}) as { reason?: string; message?: string };
    const throttledFor = isThrottled(code, retryAfterMs) ? (retryAfterMs ?? 1000) : undefined;
    return new ApiError(code, status.reason ?? 'Unknown', status.message ?? (text || `HTTP ${code}`), verb, path, throttledFor);
  }

  /** The server throttled this request (429, or 503 with Retry-After): retry later, it is nobody's fault. */
  get throttled(): boolean {
    return isThrottled(this.code, this.retryAfterMs);
  }
}

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
