// The client of the API server that the rest of the operator imports: the verbs (get, apply, delete,
// list, patch a status, watch) and one request's retries (a dead kept-alive connection, a 401, throttling).
// The transport, the write fence, the watch stream and discovery are each in a file of their own.
import type { KubernetesObject } from '@kubernetes/client-node';
import { ApiError } from './api-failure.js';
import { Discovery } from './discovery.js';
import type { KubeAccess } from './kubeconfig.js';
import { abortError, sleep } from './sleep.js';
import { BackoffOptions, isThrottled, parseRetryAfter, throttleDelayMs } from './throttle.js';
import { Answer, parseJson, Transport } from './transport.js';
import { watchStream } from './watch-stream.js';
import { isWrite, WriteFence, WriteRefused } from './write-fence.js';

// What callers of the client name besides it: its error and the URL path of a resource.
export { ApiError } from './api-failure.js';
export { resourcePath } from './discovery.js';

/** The resourceVersion precondition of a create-only apply: no object has it. */
const CREATE_ONLY_RESOURCE_VERSION = '1';

/** A create-only apply (RestClient.apply's `createOnly`) found an object of that name and left it alone. */
export function isCreateOnlyRefusal(e: unknown): boolean {
  return e instanceof ApiError && e.code === 409 && /the object has been modified/.test(e.message);
}

/** How the client reacts to throttling, and who hears of it. */
export interface ThrottleOptions extends BackoffOptions {
  /**
   * Retries of one throttled request inside the client, each after its backoff; then the request
   * fails with a throttled ApiError and the caller (the work queue) retries later, so that one
   * worker does not sit on a key while others wait. @default 3
   */
  readonly retries?: number;
  /** A throttled answer came in; the request is sent again after `delayMs` (or given up when undefined). */
  readonly onThrottled?: (method: string, code: number, delayMs: number | undefined) => void;
}

export interface RequestOpts {
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
  /**
   * Gives the request up: an answer not yet in, or a throttled retry not yet sent, is dropped and the
   * request rejects with the signal's reason. A leader's Lease renewal is bounded by its renew
   * deadline so: no retry of it is sent after the leader stepped down.
   */
  readonly signal?: AbortSignal;
  /** Sent even while the write fence is closed: leader election's own Lease requests. @default false */
  readonly unfenced?: boolean;
}

export const APPLY_PATCH = 'application/apply-patch+yaml';
export const MERGE_PATCH = 'application/merge-patch+json';

/** What a reconciler asks of the API server: read, apply, delete an object; patch a status. */
export type KubeClient = Pick<RestClient, 'get' | 'apply' | 'delete' | 'patchStatus'>;

/**
 * A small JSON client for the API server. client-node's typed serializer drops fields whose JSON
 * name differs from its model's (`default`, `x-kubernetes-*` in CRD schemas) and turns timestamps
 * into Dates; the reconciler needs objects exactly as the server and render() spell them.
 */
export class RestClient {
  private readonly transport: Transport;
  private readonly discovery = new Discovery((path) => this.request('GET', path));
  private fence?: WriteFence;

  /**
   * @param kc this package's kubeconfig (loadKubeAccess) or client-node's KubeConfig
   * @param throttle also `credentialsTtlMs`: how often credentials are read again (default a minute),
   *   and `userAgent`: the User-Agent header, which audit logs record (default none)
   */
  constructor(
    kc: KubeAccess,
    private readonly onRequest: (verb: string, code: number) => void = () => undefined,
    private readonly throttle: ThrottleOptions & { credentialsTtlMs?: number; userAgent?: string } = {},
  ) {
    this.transport = new Transport(kc, throttle.credentialsTtlMs, throttle.userAgent);
  }

  /**
   * From now on every write (any method but GET, HEAD, OPTIONS; not `unfenced` ones) is checked
   * against `fence` at the moment it would go out: after any wait for credentials, a connection or
   * a throttled retry, in the same turn as its bytes are handed to the socket. A refused write
   * rejects with an ApiError of reason `WriteRefused` and never reaches the server.
   */
  fenceWrites(fence: WriteFence): void {
    this.fence = fence;
  }

  /** Connections opened so far (requests on a kept-alive connection do not count). */
  get connectionsOpened(): number {
    return this.transport.connectionsOpened;
  }

  /** Closes the pooled connections (the process keeps running otherwise until they time out). */
  close(): void {
    this.transport.close();
  }

  async request<T>(method: string, path: string, opts: RequestOpts = {}): Promise<T> {
    const url = this.transport.url(path, opts.query ?? {});
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    let refresh = false;
    let resent = false;
    let reauthed = false;
    let throttledTimes = 0;
    const signal = opts.signal;
    for (;;) {
      if (signal?.aborted) throw abortError(signal);
      const creds = await this.transport.auth(refresh);
      refresh = false;
      let sent: Answer;
      try {
        const fence = opts.unfenced || !isWrite(method) ? undefined : this.fence;
        sent = await this.transport.send(url, method, path, body, opts.contentType, creds, signal, fence);
      } catch (e) {
        if (signal?.aborted) throw abortError(signal);
        if (e instanceof WriteRefused) {
          this.onRequest(method, 0);
          throw new ApiError(0, 'WriteRefused', `${method} ${path} not sent: ${e.message}`, method, path);
        }
        // A kept-alive socket the server closed meanwhile (an API server restart, an idle timeout)
        // fails on first use; the request never reached the server, so sending it again is safe.
        if ((e as { reused?: boolean }).reused && !resent) {
          resent = true;
          continue;
        }
        this.onRequest(method, 0);
        throw new ApiError(0, 'ConnectionFailed', `${method} ${path}: ${(e as Error).message}`, method, path);
      }
      const { code, text } = sent;
      // Expired or rotated credentials: read them again and retry once.
      if (code === 401 && !reauthed) {
        this.onRequest(method, code);
        reauthed = refresh = true;
        continue;
      }
      this.onRequest(method, code);
      // Throttled (API Priority and Fairness, max-inflight, an overloaded server): the request was not
      // executed; send it again after the server's Retry-After, backing off further on each refusal.
      const retryAfterMs = parseRetryAfter(sent.retryAfter);
      if (isThrottled(code, retryAfterMs)) {
        const retry = throttledTimes < (this.throttle.retries ?? 3);
        const delayMs = retry ? throttleDelayMs(throttledTimes, retryAfterMs, this.throttle) : undefined;
        this.throttle.onThrottled?.(method, code, delayMs);
        if (delayMs !== undefined) {
          throttledTimes++;
          await sleep(delayMs, signal);
          continue;
        }
      }
      const parsed = parseJson(text);
      if (code >= 200 && code < 300) return parsed as T;
      throw ApiError.ofAnswer(code, parsed, text, method, path, retryAfterMs);
    }
  }

  /** One watch of `path` (watch-stream.ts says how it ends); each event goes to `onEvent`. */
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: string, object: unknown) => void,
    opts: { signal?: AbortSignal; idleMs?: number } = {},
  ): Promise<void> {
    return watchStream(this.transport, path, query, { onEvent, onRequest: this.onRequest }, opts);
  }

  /** URL path of a collection or, with a name, of one object; resource names come from discovery. */
  path(apiVersion: string, kind: string, namespace?: string, name?: string): Promise<string> {
    return this.discovery.path(apiVersion, kind, namespace, name);
  }

  /**
   * Server-side apply under `fieldManager`, taking over conflicting fields. `createOnly`: only when no
   * object of that name exists; an existing one is left untouched and the apply fails with a 409
   * that `isCreateOnlyRefusal` tells. The body then carries `metadata.resourceVersion` "1", a
   * precondition no object meets (etcd's first write is revision 2), which the API server checks
   * against an existing object ("the object has been modified") and ignores on a create; the
   * managedFields never record it, so what the apply owns is as without it
   * (test/integration/create-race.test.ts, on the real API server).
   */
  async apply<T extends KubernetesObject>(obj: T, fieldManager: string, opts: { createOnly?: boolean } = {}): Promise<T> {
    const body = { ...obj, metadata: { ...obj.metadata } };
    // managedFields and a stale resourceVersion in an apply body are rejected or cause conflicts.
    delete body.metadata.managedFields;
    delete body.metadata.resourceVersion;
    if (opts.createOnly) body.metadata.resourceVersion = CREATE_ONLY_RESOURCE_VERSION;
    const path = await this.path(obj.apiVersion!, obj.kind!, obj.metadata?.namespace, obj.metadata?.name);
    return this.request<T>('PATCH', path, { body, contentType: APPLY_PATCH, query: { fieldManager, force: true } });
  }

  /** The live object, or undefined when it does not exist. */
  async get<T extends KubernetesObject>(ref: KubernetesObject): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', await this.path(ref.apiVersion!, ref.kind!, ref.metadata?.namespace, ref.metadata?.name));
    } catch (e) {
      if (e instanceof ApiError && e.code === 404) return undefined;
      throw e;
    }
  }

  /** Deletes an object; only the exact object (uid precondition) when it carries a uid. */
  async delete(obj: KubernetesObject): Promise<void> {
    const path = await this.path(obj.apiVersion!, obj.kind!, obj.metadata?.namespace, obj.metadata?.name);
    const uid = obj.metadata?.uid;
    await this.request('DELETE', path, { body: { propagationPolicy: 'Background', ...(uid ? { preconditions: { uid } } : {}) } });
  }

  /**
   * Objects of a kind (one namespace or all), with the list's resourceVersion: every page of
   * `pages()` gathered.
   */
  async list<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    namespace?: string,
    labelSelector?: string,
    opts: { limit?: number; fieldSelector?: string } = {},
  ): Promise<{ items: T[]; resourceVersion?: string }> {
    const items: T[] = [];
    let resourceVersion: string | undefined;
    for await (const page of this.pages<T>(apiVersion, kind, namespace, labelSelector, opts)) {
      items.push(...page.items);
      resourceVersion = page.resourceVersion;
    }
    return { items, resourceVersion };
  }

  /**
   * A list in pages of at most `limit` objects (`limit`/`continue`, as client-go's reflector lists),
   * so that no single answer holds every object of a large collection: the caller can trim a page
   * before the next one is read. The pages are one consistent snapshot, at the resourceVersion each
   * carries. A continue token that expired meanwhile (410) fails the list: list again from the start.
   * Without a limit, one request.
   */
  async *pages<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    namespace?: string,
    labelSelector?: string,
    opts: { limit?: number; fieldSelector?: string } = {},
  ): AsyncGenerator<{ items: T[]; resourceVersion?: string }> {
    const path = await this.path(apiVersion, kind, namespace);
    let next: string | undefined;
    do {
      const page = await this.request<{ items: T[]; metadata?: { resourceVersion?: string; continue?: string } }>('GET', path, {
        query: { labelSelector, fieldSelector: opts.fieldSelector, limit: opts.limit, continue: next },
      });
      next = page.metadata?.continue || undefined;
      yield { items: page.items.map((i) => ({ ...i, apiVersion, kind })), resourceVersion: page.metadata?.resourceVersion };
    } while (next);
  }

  /** JSON merge patch of an object's status subresource; resolves with the object as written. */
  async patchStatus(obj: KubernetesObject, status: unknown): Promise<KubernetesObject> {
    const path = await this.path(obj.apiVersion!, obj.kind!, obj.metadata?.namespace, obj.metadata?.name);
    return this.request<KubernetesObject>('PATCH', `${path}/status`, { body: { status }, contentType: MERGE_PATCH });
  }
}
