// The operator's REST client on the real API server: one keep-alive connection pool per process
// (client-node's applyToHTTPSOptions would open a new TLS connection for every request).
import { afterAll, describe, expect, it } from '@jest/globals';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Informer } from '../../operator/runtime/informer.js';
import { simpleKubeConfigFromFile } from '../../operator/runtime/kubeconfig.js';
import { createLogger } from '../../operator/runtime/log.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { createTestNamespace, eventually, sharedCluster } from './cluster.js';

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

  it('watches on the pooled connections: events arrive parsed, and a watch the server ends hands its connection to the next', async () => {
    const ns = 'default';
    const name = `rest-watch-${Date.now()}`;
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const list = await rest.request<{ metadata: { resourceVersion: string } }>('GET', path);
    const before = rest.connectionsOpened;
    const seen: string[] = [];
    // The server ends this watch after 2 s; the ConfigMap created meanwhile is its one event.
    const watching = rest.watch(path, { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 2 }, (type, obj) => {
      seen.push(`${type} ${(obj as { metadata: { name: string } }).metadata.name}`);
    });
    await rest.request('POST', path, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } } });
    await watching;
    expect(seen).toEqual([`ADDED ${name}`]);
    const afterFirst = rest.connectionsOpened;
    expect(afterFirst - before).toBeLessThanOrEqual(1); // the create ran beside the watch
    // Another watch and a request after it: no new connection.
    await rest.watch(path, { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 1, fieldSelector: `metadata.name=${name}` }, () => undefined);
    await rest.request('DELETE', `${path}/${name}`);
    expect(rest.connectionsOpened).toBe(afterFirst);
  });

  it('ends a watch when its signal aborts, and rejects an error answer with the server reason', async () => {
    const controller = new AbortController();
    const watching = rest.watch('/api/v1/namespaces/default/configmaps', {}, () => undefined, { signal: controller.signal });
    controller.abort();
    await expect(watching).resolves.toBeUndefined();
    await expect(rest.watch('/api/v1/namespaces/default/nosuchthings', {}, () => undefined)).rejects.toMatchObject({ code: 404 });
  });
});

describe('RestClient credentials and lists', () => {
  it('reads the kubeconfig without client-node and keeps its connection across credential checks', async () => {
    const kc = simpleKubeConfigFromFile(sharedCluster().kubeconfigPath);
    expect(kc).toBeDefined();
    // Credentials read again before every request (the operator: once a minute): a token that may
    // have been rotated changes a header, not the TLS connection.
    const rest = new RestClient(kc!, undefined, { credentialsTtlMs: 0 });
    try {
      for (let i = 0; i < 5; i++) await expect(rest.request('GET', '/api/v1/namespaces/default')).resolves.toBeDefined();
      expect(rest.connectionsOpened).toBe(1);
    } finally {
      rest.close();
    }
  });

  it('relists in pages (limit/continue): an informer over more objects than a page holds them all', async () => {
    const kc = sharedCluster().kubeConfig;
    const ns = await createTestNamespace(kc, 'pages');
    const gets: string[] = [];
    const rest = new RestClient(kc, (verb) => gets.push(verb));
    try {
      const path = `/api/v1/namespaces/${ns}/configmaps`;
      for (let i = 0; i < 5; i++) await rest.request('POST', path, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `page-${i}` } } });
      const listed = await rest.list('v1', 'ConfigMap', ns, undefined, { limit: 2 });
      expect(listed.items.map((c) => c.metadata?.name).filter((n) => n?.startsWith('page-')).sort()).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
      expect(listed.resourceVersion).toBeTruthy();

      gets.length = 0;
      const informer = new Informer<KubernetesObject>({ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespace: ns }, () => undefined, {
        rest,
        log: createLogger('warn'),
        staleMs: 60_000,
        pageSize: 2,
      });
      await informer.start();
      // 5 ConfigMaps and the namespace's kube-root-ca.crt: three pages of two.
      const lists = gets.length;
      expect(lists).toBe(3);
      expect(informer.list().map((c) => c.metadata?.name).filter((n) => n?.startsWith('page-')).sort()).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
      // The watch resumes from the paged list's resourceVersion: a change after it arrives.
      await rest.request('DELETE', `${path}/page-0`);
      await eventually('the informer saw page-0 deleted', async () => !informer.get(ns, 'page-0'));
      informer.stop();
    } finally {
      rest.close();
    }
  });
});
