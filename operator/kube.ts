import { ApiException, KubernetesObject } from '@kubernetes/client-node';
import { ApiError } from './rest.js';

/** What a failed API request said: HTTP code, the Status reason and the server's message. */
export interface ApiFailure {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
}

/** The server's own words for a failed request, whatever client-node wrapped them in. */
export function apiFailure(e: unknown): ApiFailure {
  if (e instanceof ApiError) return { code: e.code, reason: e.reason, message: e.message };
  if (e instanceof ApiException) {
    const body = parseBody(e.body);
    return { code: e.code, reason: body?.reason ?? 'Unknown', message: body?.message ?? String(e.body ?? e.message) };
  }
  const code = (e as { statusCode?: number; code?: number }).statusCode ?? (e as { code?: unknown }).code;
  return { code: typeof code === 'number' ? code : 0, reason: 'ClientError', message: e instanceof Error ? e.message : String(e) };
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
