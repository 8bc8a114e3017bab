import type { KubernetesObject } from '@kubernetes/client-node';
import { Agent as HttpsAgent, AgentOptions, request as httpsRequest, RequestOptions } from 'node:https';
import type { ClientRequest, OutgoingHttpHeaders } from 'node:http';
import { HttpAgent, httpRequest } from './node-http.js';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { KubeAccess } from './kubeconfig.js';
import { abortError, sleep } from './sleep.js';
import { BackoffOptions, isThrottled, parseRetryAfter, throttleDelayMs } from './throttle.js';

/** `/api/v1` or `/apis/<group>/<version>`: where a group version's resources are served. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** URL path of a collection (in one namespace, or all) or, with a name, of one object. */
export function resourcePath(r: { apiVersion: string; plural: string; namespace?: string; name?: string }): string {
  const ns = r.namespace ? `/namespaces/${encodeURIComponent(r.namespace)}` : '';
  return `${groupVersionPath(r.apiVersion)}${ns}/${r.plural}${r.name ? `/${encodeURIComponent(r.name)}` : ''}`;
}

/** The body as JSON; a plain-text body (`404 page not found`) as its message. */
function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { message: text.trim() };
  }
}

/** The resourceVersion precondition of a create-only apply: no object has it. */
const CREATE_ONLY_RESOURCE_VERSION = '1';

/** A create-only apply (RestClient.apply's `createOnly`) found an object of that name and left it alone. */
export function isCreateOnlyRefusal(e: unknown): boolean {
  return e instanceof ApiError && e.code === 409 && /the object has been modified/.test(e.message);
}

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

  /** The server throttled this request (429, or 503 with Retry-After): retry later, it is nobody's fault. */
  get throttled(): boolean {
    return isThrottled(this.code, this.retryAfterMs);
  }
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

/**
 * Decides, at the moment a write would go out, whether it may: undefined to send it, else why not.
 * Leader election fences the client so: only a leader whose lease is current writes.
 */
export type WriteFence = () => string | undefined;

/** A write the fence held back: it never left the process. */
export class WriteRefused extends Error {
  override readonly name = 'WriteRefused';
}

/** Methods that change nothing on the server; every other method is a write. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export const APPLY_PATCH = 'application/apply-patch+yaml';
export const MERGE_PATCH = 'application/merge-patch+json';

/** How often credentials are read again (a projected ServiceAccount token is rotated on disk). */
export const CREDENTIALS_TTL_MS = 60_000;

/**
 * A watch that receives nothing for this long is ended and resumed (a connection that died without a
 * FIN). The API server sends a bookmark to every watch that asks for them about once a minute.
 */
export const WATCH_IDLE_MS = 150_000;

/**
 * Sends the request's headers and body only once its connection is up, and only if `fence` allows
 * it then: the check and the hand-over of the bytes to the kernel happen in one turn of the event
 * loop, so a process frozen in between (SIGSTOP) cannot wake to a write queued before it froze.
 */
function endWhenFenceAllows(req: ClientRequest, body: string | undefined, fence: WriteFence): void {
  const go = () => {
    const refusal = fence();
    if (refusal === undefined) req.end(body);
    else req.destroy(new WriteRefused(refusal));
  };
  req.once('socket', (socket: Socket) => {
    // A new connection is still connecting when handed over; a kept-alive one is ready.
    if (!socket.connecting) go();
    else socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', go);
  });
}

/** What every request carries: auth headers and the one connection pool. */
interface Credentials {
  readonly headers: OutgoingHttpHeaders;
  readonly auth?: string;
  readonly agent: HttpsAgent | HttpAgent;
  readonly readAt: number;
}

/** TLS fields of the request options that the connection pool is built from. */
const TLS_FIELDS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

function tlsFingerprint(opts: RequestOptions): string {
  return JSON.stringify(
    TLS_FIELDS.map((f) => {
      const v = opts[f];
      return Buffer.isBuffer(v) ? v.toString('base64') : v;
    }),
  );
}

interface Resource {
  readonly name: string;
  readonly namespaced: boolean;
}

/** What a reconciler asks of the API server: read, apply, delete an object; patch a status. */
export type KubeClient = Pick<RestClient, 'get' | 'apply' | 'delete' | 'patchStatus'>;

/**
 * A small JSON client for the API server. client-node's typed serializer drops fields whose JSON
 * name differs from its model's (`default`, `x-kubernetes-*` in CRD schemas) and turns timestamps
 * into Dates; the reconciler needs objects exactly as the server and render() spell them.
 */
export class RestClient {
  private readonly server: string;
  private readonly discovery = new Map<string, Promise<Resource[]>>();
  private credentials?: Promise<Credentials>;
  private pool?: { fingerprint: string; agent: HttpsAgent | HttpAgent };
  private opened = 0;
  private readonly credentialsTtlMs: number;
  private fence?: WriteFence;

  /**
   * @param kc this package's kubeconfig (loadKubeAccess) or client-node's KubeConfig
   * @param throttle also `credentialsTtlMs`: how often credentials are read again (default a minute),
   *   and `userAgent`: the User-Agent header, which audit logs record (default none)
   */
  constructor(
    private readonly kc: KubeAccess,
    private readonly onRequest: (verb: string, code: number) => void = () => undefined,
    private readonly throttle: ThrottleOptions & { credentialsTtlMs?: number; userAgent?: string } = {},
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster; set KUBECONFIG or run in a cluster');
    this.server = cluster.server.replace(/\/$/, '');
    this.credentialsTtlMs = throttle.credentialsTtlMs ?? CREDENTIALS_TTL_MS;
  }

  /**
   * Auth headers and the connection pool. Credentials are read again once a minute (or after a 401):
   * a rotated token only changes a header, so requests keep one keep-alive pool across these reads;
   * it is rebuilt only when the TLS material itself (CA, client certificate, server name) changed.
   * Behind a proxy (a client-node KubeConfig with proxy-url), the proxy agent client-node builds is
   * used; client-node 2.0.1 keeps one per cluster and user (its agentCache), not one per call.
   */
  private async auth(refresh = false): Promise<Credentials> {
    const current = this.credentials && (await this.credentials.catch(() => undefined));
    if (!refresh && current && Date.now() - current.readAt < this.credentialsTtlMs) return current;
    const load = (async (): Promise<Credentials> => {
      const opts: RequestOptions = {};
      await this.kc.applyToHTTPSOptions(opts);
      let agent: HttpsAgent | HttpAgent;
      if (this.kc.getCurrentCluster()?.proxyUrl && opts.agent) {
        agent = opts.agent as HttpsAgent; // a proxy agent: client-node knows how to build those
      } else {
        const fingerprint = tlsFingerprint(opts);
        if (this.pool?.fingerprint !== fingerprint) {
          this.pool?.agent.destroy();
          const agentOpts: AgentOptions = { keepAlive: true, scheduling: 'lifo' };
          for (const f of TLS_FIELDS) if (opts[f] !== undefined) (agentOpts as Record<string, unknown>)[f] = opts[f];
          this.pool = {
            fingerprint,
            agent: this.server.startsWith('http:') ? new HttpAgent({ keepAlive: true }) : new HttpsAgent(agentOpts),
          };
        }
        agent = this.pool.agent;
      }
      return { headers: { ...(opts.headers as OutgoingHttpHeaders | undefined) }, auth: opts.auth ?? undefined, agent, readAt: Date.now() };
    })();
    this.credentials = load;
    return load;
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
    return this.opened;
  }

  /** Closes the pooled connections (the process keeps running otherwise until they time out). */
  close(): void {
    this.pool?.agent.destroy();
  }

  async request<T>(method: string, path: string, opts: RequestOpts = {}): Promise<T> {
    const url = this.url(path, opts.query ?? {});
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    let refresh = false;
    let resent = false;
    let reauthed = false;
    let throttledTimes = 0;
    const signal = opts.signal;
    for (;;) {
      if (signal?.aborted) throw abortError(signal);
      const creds = await this.auth(refresh);
      refresh = false;
      let sent: { code: number; text: string; retryAfter?: string };
      try {
        const fence = opts.unfenced || READ_METHODS.has(method) ? undefined : this.fence;
        sent = await this.send(url, method, path, body, opts.contentType, creds, signal, fence);
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
      const status = (parsed ?? {}) as { reason?: string; message?: string };
      const message = status.message ?? (text || `HTTP ${code}`);
      throw new ApiError(
        code,
        status.reason ?? 'Unknown',
        message,
        method,
        path,
        isThrottled(code, retryAfterMs) ? (retryAfterMs ?? 1000) : undefined,
      );
    }
  }

  /**
   * One watch request (`?watch=true`) on the pooled keep-alive connections, as client-go's watches
   * share its transport: no new TLS connection per watch, and a watch the server ends (timeoutSeconds)
   * hands its connection back for the next one. client-node's Watch opened a new connection each
   * time and ended any watch that was quiet for 30 s, so a quiet resource re-opened its watch (a TLS
   * handshake on the server) twice a minute. Each line of the stream is one event, parsed here.
   * Resolves when the server ends the watch or `signal` aborts it; rejects with an ApiError for an
   * error answer (a throttled one says its Retry-After) or a dropped connection (code 0), and with
   * a `TimeoutError` when nothing, not even a bookmark, came for `idleMs`.
   */
  async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: string, object: unknown) => void,
    opts: { signal?: AbortSignal; idleMs?: number } = {},
  ): Promise<void> {
    const url = this.url(path, { watch: true, ...query });
    const idleMs = opts.idleMs ?? WATCH_IDLE_MS;
    for (let resent = false; ;) {
      const creds = await this.auth();
      if (opts.signal?.aborted) return;
      try {
        return await this.stream(url, path, creds, onEvent, idleMs, opts.signal);
      } catch (e) {
        // As in request(): a kept-alive socket the server closed meanwhile fails before any answer.
        if ((e as { reused?: boolean }).reused && !resent) {
          resent = true;
          continue;
        }
        if (e instanceof ApiError || (e as Error).name === 'TimeoutError') throw e;
        this.onRequest('WATCH', 0);
        // Refused: nothing listens (an API server restarting); the informer resumes rather than relists.
        const reason = (e as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 'ConnectionRefused' : 'ConnectionFailed';
        throw new ApiError(0, reason, `WATCH ${path}: ${(e as Error).message}`, 'WATCH', path);
      }
    }
  }

  private stream(
    url: URL,
    path: string,
    creds: Credentials,
    onEvent: (type: string, object: unknown) => void,
    idleMs: number,
    signal?: AbortSignal,
  ): Promise<void> {
    const options: RequestOptions = {
      method: 'GET',
      agent: creds.agent,
      auth: creds.auth,
      headers: { ...this.userAgent(), ...creds.headers, Accept: 'application/json' },
    };
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise<void>((resolve, reject) => {
      let answered = false;
      /** Why this side ended the watch: aborted (resolve) or idle too long (TimeoutError). */
      let endedHere: Error | undefined;
      // Whatever ends the stream first decides; a cause set here wins over the errors it triggers.
      const settle = (e?: Error) => {
        if (endedHere?.name === 'AbortError') resolve();
        else if (endedHere) reject(endedHere);
        else if (e) reject(e);
        else resolve();
      };
      const end = (why: Error) => {
        endedHere ??= why;
        req.destroy(why);
      };
      const req = send(url, options, (res) => {
        answered = true;
        const code = res.statusCode ?? 0;
        this.onRequest('WATCH', code);
        res.setEncoding('utf8');
        if (code !== 200) {
          let text = '';
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            if (code === 401) this.credentials = undefined; // read them again for the next request
            const status = (parseJson(text) ?? {}) as { reason?: string; message?: string };
            const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
            settle(
              new ApiError(
                code,
                status.reason ?? 'Unknown',
                status.message ?? (text || `HTTP ${code}`),
                'WATCH',
                path,
                isThrottled(code, retryAfterMs) ? (retryAfterMs ?? 1000) : undefined,
              ),
            );
          });
          res.on('error', settle);
          return;
        }
        let pending = '';
        res.on('data', (chunk: string) => {
          pending += chunk;
          let nl: number;
          while (!endedHere && (nl = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            if (!line.trim()) continue;
            let event: { type?: string; object?: unknown };
            try {
              event = JSON.parse(line) as { type?: string; object?: unknown };
            } catch {
              continue; // not an event (the server only sends whole JSON lines)
            }
            if (event.type) onEvent(event.type, event.object);
          }
        });
        res.on('end', () => settle());
        res.on('error', settle);
        // A connection dropped mid-stream (an API server restart) closes without 'end'.
        res.on('close', () =>
          settle(
            res.complete ? undefined : new ApiError(0, 'ConnectionFailed', `WATCH ${path}: connection closed mid-stream`, 'WATCH', path),
          ),
        );
      });
      const onAbort = () => end(Object.assign(new Error(`WATCH ${path}: stopped`), { name: 'AbortError' }));
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('close', () => signal?.removeEventListener('abort', onAbort));
      req.setTimeout(idleMs, () =>
        end(Object.assign(new Error(`WATCH ${path}: nothing received for ${idleMs / 1000} s`), { name: 'TimeoutError' })),
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        const reused = !answered && !endedHere && req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
        settle(Object.assign(e, { reused }));
      });
      req.on('socket', () => {
        if (!req.reusedSocket) this.opened++;
      });
      req.end();
    });
  }

  private send(
    url: URL,
    method: string,
    path: string,
    body: string | undefined,
    contentType: string | undefined,
    creds: Credentials,
    signal?: AbortSignal,
    fence?: WriteFence,
  ): Promise<{ code: number; text: string; retryAfter?: string }> {
    const options: RequestOptions = {
      method,
      signal,
      agent: creds.agent,
      auth: creds.auth,
      headers: {
        ...this.userAgent(),
        ...creds.headers,
        Accept: 'application/json',
        ...(body !== undefined ? { 'Content-Type': contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(body) } : {}),
      },
    };
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), retryAfter: res.headers['retry-after'] }),
        );
        res.on('error', reject);
      });
      req.on('socket', () => {
        if (!req.reusedSocket) this.opened++;
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        const reused = req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
        reject(Object.assign(e, { reused }));
      });
      req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no answer within 60 s`)));
      if (fence) endWhenFenceAllows(req, body, fence);
      else req.end(body);
    });
  }

  private userAgent(): OutgoingHttpHeaders {
    return this.throttle.userAgent ? { 'User-Agent': this.throttle.userAgent } : {};
  }

  /** URL path of a collection or, with a name, of one object; resource names come from discovery. */
  async path(apiVersion: string, kind: string, namespace?: string, name?: string): Promise<string> {
    const resource = (await this.resources(apiVersion)).find((r) => r.kind === kind);
    if (!resource)
      throw new ApiError(404, 'NotFound', `the server does not serve ${kind} in ${apiVersion}; is its CRD installed?`, 'GET', apiVersion);
    return resourcePath({ apiVersion, plural: resource.name, namespace: resource.namespaced ? namespace : undefined, name });
  }

  private url(path: string, query: Record<string, string | number | boolean | undefined>): URL {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  private async resources(apiVersion: string): Promise<(Resource & { kind: string })[]> {
    let found = this.discovery.get(apiVersion);
    if (!found) {
      found = this.discover(groupVersionPath(apiVersion));
      found.catch(() => this.discovery.delete(apiVersion));
      this.discovery.set(apiVersion, found);
    }
    return (await found) as (Resource & { kind: string })[];
  }

  /** A group version's resources; a CRD established a moment ago may need a few tries to appear. */
  private async discover(base: string): Promise<(Resource & { kind: string })[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const list = await this.request<{ resources: (Resource & { kind: string })[] }>('GET', base);
        return list.resources.filter((x) => !x.name.includes('/'));
      } catch (e) {
        if (!(e instanceof ApiError) || e.code !== 404 || attempt >= 10) throw e;
        await sleep(300);
      }
    }
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
