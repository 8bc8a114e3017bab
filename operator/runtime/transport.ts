// How requests reach the API server: credentials from the kubeconfig (read again as they rotate), one
// keep-alive connection pool, and one HTTP exchange at a time; retries are the caller's (rest.ts).
import { Agent as HttpsAgent, AgentOptions, request as httpsRequest, RequestOptions } from 'node:https';
import type { ClientRequest, OutgoingHttpHeaders } from 'node:http';
import { HttpAgent, httpRequest } from './node-http.js';
import type { KubeAccess } from './kubeconfig.js';
import { endWhenFenceAllows, WriteFence } from './write-fence.js';

/** How often credentials are read again (a projected ServiceAccount token is rotated on disk). */
export const CREDENTIALS_TTL_MS = 60_000;

/** What every request carries: auth headers and the one connection pool. */
export interface Credentials {
  readonly headers: OutgoingHttpHeaders;
  readonly auth?: string;
  readonly agent: HttpsAgent | HttpAgent;
  readonly readAt: number;
}

/** What the server answered: the status code, the body and its Retry-After header. */
export interface Answer {
  readonly code: number;
  readonly text: string;
  readonly retryAfter?: string;
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

/** The body as JSON; a plain-text body (`404 page not found`) as its message. */
export function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { message: text.trim() };
  }
}

/** The API server of a kubeconfig, its credentials and the connection pool to it. */
export class Transport {
  private readonly server: string;
  private credentials?: Promise<Credentials>;
  private pool?: { fingerprint: string; agent: HttpsAgent | HttpAgent };
  private opened = 0;

  constructor(
    private readonly kc: KubeAccess,
    private readonly credentialsTtlMs = CREDENTIALS_TTL_MS,
    private readonly userAgent?: string,
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster; set KUBECONFIG or run in a cluster');
    this.server = cluster.server.replace(/\/$/, '');
  }

  /**
   * Auth headers and the connection pool. Credentials are read again once a minute (or after a 401):
   * a rotated token only changes a header, so requests keep one keep-alive pool across these reads;
   * it is rebuilt only when the TLS material itself (CA, client certificate, server name) changed.
   * Behind a proxy (a client-node KubeConfig with proxy-url), the proxy agent client-node builds is
   * used; client-node 2.0.1 keeps one per cluster and user (its agentCache), not one per call.
   */
  async auth(refresh = false): Promise<Credentials> {
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

  /** The credentials are read again for the next request (a watch was answered 401). */
  forgetCredentials(): void {
    this.credentials = undefined;
  }

  /** Connections opened so far (requests on a kept-alive connection do not count). */
  get connectionsOpened(): number {
    return this.opened;
  }

  /** Closes the pooled connections (the process keeps running otherwise until they time out). */
  close(): void {
    this.pool?.agent.destroy();
  }

  url(path: string, query: Record<string, string | number | boolean | undefined>): URL {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  /** Starts a request with the credentials' agent, auth and headers; counts the connections it opens. */
  open(url: URL, options: RequestOptions, creds: Credentials, onAnswer: Parameters<typeof httpsRequest>[2]): ClientRequest {
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const req = send(
      url,
      {
        ...options,
        agent: creds.agent,
        auth: creds.auth,
        headers: {
          ...(this.userAgent ? { 'User-Agent': this.userAgent } : {}),
          ...creds.headers,
          Accept: 'application/json',
          ...options.headers,
        },
      },
      onAnswer,
    );
    req.on('socket', () => {
      if (!req.reusedSocket) this.opened++;
    });
    return req;
  }

  /**
   * One request and its whole answer. Rejects with the socket's error, marked `reused` when a
   * kept-alive connection the server had closed failed before the request reached it.
   */
  send(
    url: URL,
    method: string,
    path: string,
    body: string | undefined,
    contentType: string | undefined,
    creds: Credentials,
    signal?: AbortSignal,
    fence?: WriteFence,
  ): Promise<Answer> {
    const headers: OutgoingHttpHeaders =
      body !== undefined ? { 'Content-Type': contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(body) } : {};
    return new Promise((resolve, reject) => {
      const req = this.open(url, { method, signal, headers }, creds, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), retryAfter: res.headers['retry-after'] }),
        );
        res.on('error', reject);
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
}
