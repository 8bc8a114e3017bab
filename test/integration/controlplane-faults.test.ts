// Fault tests get their own control plane (restarting the shared one would disturb other files):
// etcd and kube-apiserver restarts keep data and service, and stop() leaves nothing behind.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { eventually } from './cluster.js';
import { processesMentioning } from './controlplane-processes.js';

let cp: ControlPlane;
let core: CoreV1Api;

beforeAll(async () => {
  // No scheduler: these tests are about the API server and its storage, and it starts faster.
  cp = await ControlPlane.start({ scheduler: false });
  core = cp.kubeConfig().makeApiClient(CoreV1Api);
});

afterAll(async () => {
  await cp?.stop();
});

async function configMapValue(name: string): Promise<string | undefined> {
  return (await core.readNamespacedConfigMap({ name, namespace: 'default' })).data?.value;
}

describe('control plane faults', () => {
  test('data and service survive an etcd restart', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'before-etcd' }, data: { value: 'a' } } });

    await cp.restart('etcd');

    expect(await configMapValue('before-etcd')).toBe('a');
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'after-etcd' }, data: { value: 'b' } } });
    expect(await configMapValue('after-etcd')).toBe('b');
  });

  test('data and service survive a kube-apiserver restart, on the same address', async () => {
    const server = cp.server;

    await cp.restart('kube-apiserver');

    expect(cp.server).toBe(server);
    expect(await configMapValue('before-etcd')).toBe('a');
    expect(await configMapValue('after-etcd')).toBe('b');
  });

  test('the controller manager keeps working after both restarts', async () => {
    const apps = cp.kubeConfig().makeApiClient(AppsV1Api);
    const labels = { app: 'after-restart' };
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'after-restart' },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'registry.invalid/app:1' }] } },
        },
      },
    });
    await eventually('ReplicaSet and Pod after restarts', async () => {
      const pods = await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=after-restart' });
      return pods.items.length === 1;
    });
  });

  test('stop() kills every component and removes the temp data; a second stop() is a no-op', async () => {
    expect(processesMentioning(cp.dir).length).toBeGreaterThanOrEqual(3);

    await cp.stop();
    await cp.stop();

    expect(processesMentioning(cp.dir)).toEqual([]);
    expect(existsSync(cp.dir)).toBe(false);
  });
});
