// The shared real control plane behaves like a cluster: controllers reconcile, the garbage collector
// collects, the API server allocates NodePorts, RBAC is enforced and requests are audited.
import { beforeAll, describe, expect, test } from '@jest/globals';
import { AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import {
  createTestNamespace,
  eventually,
  readSharedAuditLog,
  sharedCluster,
  sharedServiceAccountKubeconfig,
} from './cluster.js';

const cluster = sharedCluster();
const kc = cluster.kubeConfig;
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
let namespace = '';

beforeAll(async () => {
  namespace = await createTestNamespace(kc, 'controlplane');
});

/** client-node throws ApiException with `code`; a 404 from reads means "gone". */
function statusCode(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'number' ? err.code : undefined;
}

const isReady = (pod: V1Pod): boolean =>
  pod.status?.phase === 'Running' && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

describe('real control plane', () => {
  test('a Deployment gets a ReplicaSet and Pods from the controller manager', async () => {
    const labels = { app: 'web' };
    const deployment = await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] } },
        },
      },
    });

    await eventually('ReplicaSet owned by the Deployment', async () => {
      const sets = await apps.listNamespacedReplicaSet({ namespace });
      return sets.items.some((rs) => rs.metadata?.ownerReferences?.some((o) => o.uid === deployment.metadata?.uid));
    });
    await eventually('2 Pods', async () => (await core.listNamespacedPod({ namespace })).items.length === 2);
    if (cluster.hasScheduler) {
      await eventually('2 Pods Running and Ready on the fake node', async () => {
        const pods = (await core.listNamespacedPod({ namespace })).items;
        return pods.length === 2 && pods.every((pod) => isReady(pod) && pod.spec?.nodeName);
      });
      await eventually('Deployment reports 2 ready replicas', async () => {
        const status = (await apps.readNamespacedDeployment({ name: 'web', namespace })).status;
        return status?.readyReplicas === 2;
      });
    }
  });

  test('deleting an owner garbage-collects what it owns', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'owner' } } });
    const ownerRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' };
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'owned', ownerReferences: [ownerRef] } } });

    await core.deleteNamespacedConfigMap({ name: 'owner', namespace });

    await eventually('owned ConfigMap collected', async () => {
      try {
        await core.readNamespacedConfigMap({ name: 'owned', namespace });
        return false;
      } catch (err) {
        if (statusCode(err) === 404) return true;
        throw err;
      }
    });
  });

  test('a NodePort Service gets a port from the configured range', async () => {
    const service = await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    const nodePort = service.spec?.ports?.[0]?.nodePort ?? 0;
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    expect(nodePort).toBeLessThanOrEqual(32767);
    expect(service.spec?.clusterIP).toMatch(/^10\.0\.\d+\.\d+$/); // SERVICE_CLUSTER_IP_RANGE, a /16
  });

  test('RBAC allows a ServiceAccount what its Role grants and denies the rest', async () => {
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'reader' } } });
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'configmap-reader' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace }],
      },
    });
    const saConfig = new KubeConfig();
    saConfig.loadFromFile(await sharedServiceAccountKubeconfig(namespace, 'reader'));
    const asReader = saConfig.makeApiClient(CoreV1Api);

    const configMaps = await asReader.listNamespacedConfigMap({ namespace });
    expect(configMaps.items.length).toBeGreaterThanOrEqual(0);
    const denied = async (call: () => Promise<unknown>): Promise<number | undefined> => {
      try {
        await call();
        return undefined;
      } catch (err) {
        return statusCode(err);
      }
    };
    expect(await denied(() => asReader.listNamespacedSecret({ namespace }))).toBe(403);
    expect(await denied(() => asReader.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'nope' } } }))).toBe(403);
    expect(await denied(() => asReader.listNamespacedConfigMap({ namespace: 'default' }))).toBe(403);
  });

  test('the audit log records a request as it is made', async () => {
    const name = `audited-${Date.now()}`;
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name } } });

    const events = await readSharedAuditLog();
    const event = events.find((e) => e.verb === 'create' && e.objectRef?.name === name);
    expect(event).toMatchObject({
      user: { username: 'appkind-admin' },
      objectRef: { resource: 'configmaps', namespace, name },
      responseStatus: { code: 201 },
    });
  });
});
