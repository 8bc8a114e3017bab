// The operator's HTTP endpoints: /healthz and /readyz for the kubelet's probes, /metrics for Prometheus.
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
}

/** A listening server. */
export interface RunningServer {
  /** The port it listens on (the chosen one when 0 was asked for). */
  readonly port: number;
  /** Stops listening and drops idle keep-alive connections. */
  close(): Promise<void>;
}

const TEXT = 'text/plain; charset=utf-8';

async function answer(routes: Record<string, Route>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
  let reply: RouteResponse;
  if (!route) reply = { status: 404, body: `no route ${path}\n` };
  else if (req.method !== 'GET' && req.method !== 'HEAD') reply = { status: 405, body: 'only GET and HEAD\n' };
  else {
    try {
      reply = await route();
    } catch (e) {
      reply = { status: 500, body: `${path} failed: ${(e as Error).message}\n` };
    }
  }
  res.writeHead(reply.status, { 'content-type': reply.contentType ?? TEXT, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : reply.body);
}

/** Starts a plain HTTP server for `routes`; resolves once it listens. */
export function startHttpServer(opts: HttpServerOptions): Promise<RunningServer> {
  const server = createServer((req, res) => void answer(opts.routes, req, res));
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

/** Settings of the probe and metrics endpoints (METRICS_PORT, HEALTH_PORT). */
export interface ProbeServerOptions {
  /** Port for /metrics; -1 disables it. The same port as `healthPort` serves all three paths. */
  readonly metricsPort: number;
  /** Port for /healthz and /readyz; -1 disables them. */
  readonly healthPort: number;
  /** @default all interfaces */
  readonly host?: string;
  readonly ready: () => boolean;
  readonly alive?: () => boolean;
  readonly metrics: { expose(): Promise<{ contentType: string; body: string }> };
}

/** The started endpoints; a port is undefined when its endpoint is disabled. */
export interface ProbeServers {
  readonly metricsPort?: number;
  readonly healthPort?: number;
  close(): Promise<void>;
}

/** Starts /metrics and /healthz+/readyz on their ports, as one server when the ports are equal. */
export async function startProbeServers(opts: ProbeServerOptions): Promise<ProbeServers> {
  const health = opts.healthPort >= 0 ? healthRoutes(opts) : undefined;
  const metrics = opts.metricsPort >= 0 ? metricsRoutes(opts.metrics) : undefined;
  const host = opts.host;
  if (health && metrics && opts.healthPort === opts.metricsPort) {
    const one = await startHttpServer({ port: opts.healthPort, host, routes: { ...health, ...metrics } });
    return { metricsPort: one.port, healthPort: one.port, close: () => one.close() };
  }
  const healthServer = health ? await startHttpServer({ port: opts.healthPort, host, routes: health }) : undefined;
  let metricsServer: RunningServer | undefined;
  try {
    metricsServer = metrics ? await startHttpServer({ port: opts.metricsPort, host, routes: metrics }) : undefined;
  } catch (e) {
    await healthServer?.close();
    throw e;
  }
  return {
    metricsPort: metricsServer?.port,
    healthPort: healthServer?.port,
    close: async () => {
      await Promise.all([healthServer?.close(), metricsServer?.close()]);
    },
  };
}
