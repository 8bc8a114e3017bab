import { afterEach, describe, expect, it } from '@jest/globals';
import { startHttpServer, startProbeServers } from '../../operator/runtime/health.js';
import { OperatorMetrics } from '../../operator/runtime/metrics.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function get(port: number, path: string, method = 'GET') {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

describe('probe and metrics servers', () => {
  it('serves all three paths on one port; /readyz is 503 until ready() turns true', async () => {
    let ready = false;
    const metrics = new OperatorMetrics({ defaultMetrics: false });
    metrics.reconcile('EchoFlask', 'success', 0.1);
    const s = await startProbeServers({ metricsPort: 0, healthPort: 0, host: '127.0.0.1', ready: () => ready, metrics });
    closers.push(() => s.close());
    expect(s.metricsPort).toBe(s.healthPort);
    expect(s.healthPort).toBeGreaterThan(0);

    expect(await get(s.healthPort!, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect((await get(s.healthPort!, '/readyz')).status).toBe(503);
    ready = true;
    expect(await get(s.healthPort!, '/readyz?verbose')).toMatchObject({ status: 200, body: 'ok\n' });

    const m = await get(s.metricsPort!, '/metrics');
    expect(m.status).toBe(200);
    expect(m.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(m.body).toContain('controller_runtime_reconcile_total{controller="EchoFlask",result="success"} 1');
  });

  it('serves metrics and probes on separate ports when they differ, and disables a port of -1', async () => {
    const metrics = new OperatorMetrics({ defaultMetrics: false });
    const health = await startHttpServer({ port: 0, host: '127.0.0.1', routes: {} });
    const healthPort = health.port;
    await health.close(); // a port known to be free, distinct from the metrics port 0 below
    const s = await startProbeServers({ metricsPort: 0, healthPort, host: '127.0.0.1', ready: () => true, metrics });
    closers.push(() => s.close());
    expect(s.healthPort).toBe(healthPort);
    expect(s.metricsPort).not.toBe(healthPort);
    expect((await get(s.healthPort!, '/metrics')).status).toBe(404);
    expect((await get(s.metricsPort!, '/healthz')).status).toBe(404);
    expect((await get(s.metricsPort!, '/metrics')).status).toBe(200);

    const off = await startProbeServers({ metricsPort: -1, healthPort: 0, host: '127.0.0.1', ready: () => true, metrics });
    closers.push(() => off.close());
    expect(off.metricsPort).toBeUndefined();
    expect((await get(off.healthPort!, '/healthz')).status).toBe(200);
  });

  it('reports /healthz 503 when alive() fails, 405 for writes, 500 when a route throws', async () => {
    const s = await startHttpServer({
      port: 0,
      host: '127.0.0.1',
      routes: {
        '/boom': () => {
          throw new Error('broken');
        },
      },
    });
    closers.push(() => s.close());
    expect(await get(s.port, '/boom')).toMatchObject({ status: 500, body: '/boom failed: broken\n' });
    expect((await get(s.port, '/boom', 'POST')).status).toBe(405);
    expect((await get(s.port, '/nope')).status).toBe(404);

    const dead = await startProbeServers({ metricsPort: -1, healthPort: 0, host: '127.0.0.1', ready: () => true, alive: () => false, metrics: new OperatorMetrics({ defaultMetrics: false }) });
    closers.push(() => dead.close());
    expect((await get(dead.healthPort!, '/healthz')).status).toBe(503);
  });

  it('fails with the port in the message when the port is taken', async () => {
    const first = await startHttpServer({ port: 0, host: '127.0.0.1', routes: {} });
    closers.push(() => first.close());
    await expect(startHttpServer({ port: first.port, host: '127.0.0.1', routes: {} })).rejects.toThrow(`127.0.0.1:${first.port}`);
  });
});
