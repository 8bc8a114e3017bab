// The operator's REST client on the real API server: one keep-alive connection pool per process
// (client-node's applyToHTTPSOptions would open a new TLS connection for every request).
import { afterAll, describe, expect, it } from '@jest/globals';
import { RestClient } from '../../operator/rest.js';
import { sharedCluster } from './cluster.js';

describe('RestClient connections', () => {
  const rest = new RestClient(sharedCluster().kubeConfig);
  afterAll(() => rest.close());

  it('sends one request after another over a single connection', async () => {
    for (let i = 0; i < 20; i++) {
      const ns = await rest.request<{ metadata: { name: string } }>('GET', '/api/v1/namespaces/default');
      expect(ns.metadata.name).toBe('default');
    }
    expect(rest.connectionsOpened).toBe(1);
  });

  it('opens no more connections than requests in flight, and reuses them afterwards', async () => {
    const before = rest.connectionsOpened;
    const burst = () => Promise.all(Array.from({ length: 5 }, () => rest.request('GET', '/api/v1/namespaces/default')));
    await burst();
    const afterFirst = rest.connectionsOpened;
    expect(afterFirst - before).toBeLessThanOrEqual(4); // one idle connection was there already
    await burst();
    await burst();
    expect(rest.connectionsOpened).toBe(afterFirst);
  });

  it('still reports API errors with the server reason over a kept-alive connection', async () => {
    await expect(rest.request('GET', '/api/v1/namespaces/does-not-exist-here')).rejects.toMatchObject({ code: 404, reason: 'NotFound' });
    await expect(rest.request('GET', '/api/v1/namespaces/default')).resolves.toBeDefined();
  });
});
