// The operator's HTTP endpoints: /healthz and /readyz for the kubelet's probes (plain HTTP), /metrics
// for Prometheus (HTTPS, each request authenticated and authorized through the API server: metrics-auth.ts).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from './node-http.js';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { AuthDecision } from './metrics-auth.js';

/** What a route answers. */
export interface RouteResponse {
  readonly status: number;
  readonly body: string;
  /** @default "text/plain; charset=utf-8" */
  readonly contentType?: string;
}

/** Answers GET (and HEAD) on one path. */
export type Route = () => RouteResponse | Promise<RouteResponse>;

/** A server to start. */
export interface HttpServerOptions {
  /** TCP port; 0 picks a free one (read the chosen port from the result). */
  readonly port: number;
  /** Address to listen on. @default all interfaces (the kubelet probes the pod IP) */
  readonly host?: string;
  /** Path (without query string) to route, e.g. `{ '/healthz': ... }`. */
  readonly routes: Record<string, Route>;
  /** Serve HTTPS with this key and certificate (PEM). @default plain HTTP */
  readonly tls?: { readonly key: string; readonly cert: string };
  /** Decides every request before its route: undefined lets it through, a response refuses it. @default none */
  readonly guard?: (req: IncomingMessage, path: string) => Promise<RouteResponse | undefined>;
}

/** A listening server. */
export interface RunningServer {
  /** The port it listens on (the chosen one when 0 was asked for). */
  readonly port: number;
  /** Stops listening and drops idle keep-alive connections. */
  close(): Promise<void>;
  /** Serves new connections with another key and certificate (an HTTPS server only). */
  setCertificate(c: { key: string; cert: string }): void;
}

const TEXT = 'text/plain; charset=utf-8';

/** The guard's refusal, else the route's answer (404 without one, 405 for other methods than GET and HEAD). */
async function reply(opts: HttpServerOptions, req: IncomingMessage, path: string): Promise<RouteResponse> {
  try {
    const refused = await opts.guard?.(req, path);
    if (refused) return refused;
    const route = Object.hasOwn(opts.routes, path) ? opts.routes[path] : undefined;
    if (!route) return { status: 404, body: `no route ${path}\n` };
    if (req.method !== 'GET' && req.method !== 'HEAD') return { status: 405, body: 'only GET and HEAD\n' };
    return await route();
  } catch (e) {
    return { status: 500, body: `${path} failed: ${(e as Error).message}\n` };
  }
}

async function answer(opts: HttpServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  const r = await reply(opts, req, path);
  res.writeHead(r.status, { 'content-type': r.contentType ?? TEXT, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : r.body);
}

/** Starts an HTTP (or, with `tls`, HTTPS) server for `routes`; resolves once it listens. */
export function startHttpServer(opts: HttpServerOptions): Promise<RunningServer> {
  const handle = (req: IncomingMessage, res: ServerResponse) => void answer(opts, req, res);
  const server: Server | HttpsServer = opts.tls
    ? createHttpsServer({ key: opts.tls.key, cert: opts.tls.cert, minVersion: 'TLSv1.2' }, handle)
    : createServer(handle);
  return new Promise((resolve, reject) => {
    const failed = (err: Error) =>
      reject(new Error(`cannot listen on ${opts.host ?? '*'}:${opts.port} (${err.message}); choose another port`));
    server.once('error', failed);
    server.listen(opts.port, opts.host, () => {
      server.off('error', failed);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((err) => (err ? fail(err) : done()));
            server.closeAllConnections();
          }),
        setCertificate: (c) => {
          if (!(server instanceof HttpsServer)) throw new Error('setCertificate: this server is plain HTTP');
          server.setSecureContext({ key: c.key, cert: c.cert, minVersion: 'TLSv1.2' });
        },
      });
    });
  });
}

/**
 * `/healthz`: 200 while the process answers (and `alive()`, when given, holds); `/readyz`: 503 until
 * `ready()` is true — the operator passes "every informer cache has synced".
 */
export function healthRoutes(opts: { ready: () => boolean; alive?: () => boolean }): Record<string, Route> {
  return {
    '/healthz': () => ((opts.alive?.() ?? true) ? { status: 200, body: 'ok\n' } : { status: 503, body: 'not alive\n' }),
    '/readyz': () => (opts.ready() ? { status: 200, body: 'ok\n' } : { status: 503, body: 'not ready: caches not synced\n' }),
  };
}

/** `/metrics` in the Prometheus text format. */
export function metricsRoutes(metrics: { expose(): Promise<{ contentType: string; body: string }> }): Record<string, Route> {
  return {
    '/metrics': async () => {
      const { contentType, body } = await metrics.expose();
      return { status: 200, body, contentType };
    },
  };
}

/** What makes /metrics HTTPS with authentication and authorization (kubebuilder v4's default). */
export interface SecureMetrics {
  /** Key and certificate (PEM) it is served with, and where they came from. */
  readonly certificate: { readonly key: string; readonly cert: string; readonly source?: string };
  /** Decides each request (metrics-auth.ts MetricsAuthorizer). */
  readonly authorizer: { decide(authorization: string | undefined, method: string, path: string): Promise<AuthDecision> };
  /** Hears of each refused request (to log it). @default none */
  readonly refused?: (decision: Exclude<AuthDecision, { allowed: true }>, req: IncomingMessage) => void;
}

/** Settings of the probe and metrics endpoints (METRICS_PORT, HEALTH_PORT, METRICS_SECURE). */
export interface ProbeServerOptions {
  /**
   * Port for /metrics; -1 disables it. Without `secure`, the same port as `healthPort` serves all
   * three paths; with it, the ports must differ (0 for both picks two free ports).
   */
  readonly metricsPort: number;
  /** Port for /healthz and /readyz (always plain HTTP, for the kubelet); -1 disables them. */
  readonly healthPort: number;
  /** @default all interfaces */
  readonly host?: string;
  readonly ready: () => boolean;
  readonly alive?: () => boolean;
  readonly metrics: { expose(): Promise<{ contentType: string; body: string }> };
  /** HTTPS and authorized scrapes for /metrics. @default plain HTTP, no authentication (local runs only) */
  readonly secure?: SecureMetrics;
}

/** The started endpoints; a port is undefined when its endpoint is disabled. */
export interface ProbeServers {
  readonly metricsPort?: number;
  readonly healthPort?: number;
  /** How /metrics is served. */
  readonly metricsScheme: 'http' | 'https';
  /** Serves /metrics with another key and certificate from now on (HTTPS only). */
  setMetricsCertificate(c: { key: string; cert: string }): void;
  close(): Promise<void>;
}

/** The guard of the HTTPS metrics server: each request is authenticated and authorized. */
function metricsGuard(secure: SecureMetrics): HttpServerOptions['guard'] {
  return async (req, path) => {
    const decision = await secure.authorizer.decide(req.headers.authorization, req.method ?? 'GET', path);
    if (decision.allowed) return undefined;
    secure.refused?.(decision, req);
    return { status: decision.status, body: `${decision.message}\n` };
  };
}

/** Starts /metrics and /healthz+/readyz on their ports, as one server when the ports are equal (plain HTTP only). */
export async function startProbeServers(opts: ProbeServerOptions): Promise<ProbeServers> {
  const health = opts.healthPort >= 0 ? healthRoutes(opts) : undefined;
  const metrics = opts.metricsPort >= 0 ? metricsRoutes(opts.metrics) : undefined;
  const host = opts.host;
  const { secure } = opts;
  const metricsScheme = secure ? 'https' : 'http';
  if (health && metrics && opts.healthPort === opts.metricsPort) {
    if (secure && opts.metricsPort !== 0) {
      throw new Error(
        `the metrics and health ports are both ${opts.metricsPort}: /metrics is HTTPS and the probes plain HTTP; give them different ports`,
      );
    }
    if (!secure) {
      const one = await startHttpServer({ port: opts.healthPort, host, routes: { ...health, ...metrics } });
      return {
        metricsPort: one.port,
        healthPort: one.port,
        metricsScheme,
        setMetricsCertificate: (c) => one.setCertificate(c),
        close: () => one.close(),
      };
    }
  }
  const healthServer = health ? await startHttpServer({ port: opts.healthPort, host, routes: health }) : undefined;
  let metricsServer: RunningServer | undefined;
  try {
    metricsServer = metrics
      ? await startHttpServer({
          port: opts.metricsPort,
          host,
          routes: metrics,
          ...(secure ? { tls: secure.certificate, guard: metricsGuard(secure) } : {}),
        })
      : undefined;
  } catch (e) {
    await healthServer?.close();
    throw e;
  }
  return {
    metricsPort: metricsServer?.port,
    healthPort: healthServer?.port,
    metricsScheme,
    setMetricsCertificate: (c) => metricsServer?.setCertificate(c),
    close: async () => {
      await Promise.all([healthServer?.close(), metricsServer?.close()]);
    },
  };
}
