import { ApiException, KubernetesObject } from '@kubernetes/client-node';
import { ApiError } from './rest.js';
import { isThrottled, parseRetryAfter } from './throttle.js';

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

/** The server's own words for a failed request, whatever client-node wrapped them in. */
export function apiFailure(e: unknown): ApiFailure {
  if (e instanceof ApiError)
    return { code: e.code, reason: e.reason, message: e.message, retryAfterMs: e.throttled ? (e.retryAfterMs ?? 1000) : undefined };
  if (e instanceof ApiException) {
    const body = parseBody(e.body);
    const retryAfter = parseRetryAfter((e.headers as Record<string, string> | undefined)?.['retry-after']);
    return {
      code: e.code,
      reason: body?.reason ?? 'Unknown',
      message: body?.message ?? String(e.body ?? e.message),
      retryAfterMs: isThrottled(e.code, retryAfter) ? (retryAfter ?? 1000) : undefined,
    };
  }
  // client-node's Watch fails a refused watch request with only its status code (no headers): a 429 is throttling.
  const raw = (e as { statusCode?: number; code?: number }).statusCode ?? (e as { code?: unknown }).code;
  const code = typeof raw === 'number' ? raw : 0;
  return {
    code,
    reason: code === 429 ? 'TooManyRequests' : 'ClientError',
    message: e instanceof Error ? e.message : String(e),
    retryAfterMs: code === 429 ? 1000 : undefined,
  };
}

function parseBody(body: unknown): { reason?: string; message?: string } | undefined {
  if (typeof body === 'object' && body !== null) return body as { reason?: string; message?: string };
  if (typeof body !== 'string') return undefined;
  try {
    return JSON.parse(body) as { reason?: string; message?: string };
  } catch {
    return { message: body };
  }
}

/** `namespace/name` of an object, or `name` for cluster-scoped ones. */
export function objectKey(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${obj.metadata?.name}` : `${obj.metadata?.name}`;
}

/** `Kind namespace/name`, the way errors and logs name an object. */
export function describeObject(obj: KubernetesObject): string {
  return `${obj.kind} ${objectKey(obj)}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
