// metrics-server beside the real node, so a HorizontalPodAutoscaler reads pods' CPU: built from the
// pinned Go module on first use (tools/metrics-server/build.sh), run as a process on the node address
// (no registry for its image), and registered as the APIService v1beta1.metrics.k8s.io behind a
// selector-less Service whose EndpointSlice points at that process.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RestClient } from 'appkind-operator/runtime';
import { applyObjects } from '../apply.js';

const buildScript = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'metrics-server', 'build.sh');

/** The identity the API server's static token file gives it; RBAC as in metrics-server's own manifest. */
export const METRICS_SERVER_USER = { name: 'system:metrics-server', groups: [] as string[] };
export const METRICS_API_SERVICE = 'v1beta1.metrics.k8s.io';
const NAMESPACE = 'kube-system';
const NAME = 'metrics-server';
/**
 * How often it scrapes the kubelet (its minimum; upstream's default is 60 s). A pod's CPU is the rate
 * between two scrapes, so it is known one period after the pod starts.
 */
export const METRIC_RESOLUTION_S = 10;

/** Runs build.sh (a cached binary returns at once; a first build takes minutes) and resolves with the binary's path. */
export function buildMetricsServer(log: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('bash', [buildScript], { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`controlplane: ${buildScript} failed (${err.message.split('\n')[0]}):\n${stderr.trim().split('\n').slice(-20).join('\n')}`));
      else resolve(stdout.trim().split('\n').pop() ?? '');
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.startsWith('metrics-server:')) log(line);
    });
  });
}

export interface MetricsServerFiles {
  kubeconfig: string;
  /** The node address: it listens there, where kube-apiserver's aggregator reaches it. */
  address: string;
  port: number;
  /** Its self-signed serving certificate goes here. */
  certDir: string;
}

export function metricsServerArgs(f: MetricsServerFiles): string[] {
  return [
    `--kubeconfig=${f.kubeconfig}`,
    // Delegated authentication and authorization (TokenReview, SubjectAccessReview) through the same
    // credentials; it is not in a pod, so there is no in-cluster config to fall back on.
    `--authentication-kubeconfig=${f.kubeconfig}`,
    `--authorization-kubeconfig=${f.kubeconfig}`,
    `--bind-address=${f.address}`,
    `--secure-port=${f.port}`,
    `--cert-dir=${f.certDir}`,
    `--metric-resolution=${METRIC_RESOLUTION_S}s`,
    // It must stay under 90% of the resolution (its default 10 s would not); the kubelet is local.
    '--kubelet-request-timeout=5s',
    // The kubelet serves a self-signed certificate of its own (its --cert-dir), as on kind and minikube.
    '--kubelet-insecure-tls',
    // The node's name resolves nowhere; a lookup would leave the machine for its name server.
    '--kubelet-preferred-address-types=InternalIP',
    // The kubelet listens on a free port, published in the Node's status.
    '--kubelet-use-node-status-port',
    '--v=1',
  ];
}

/** RBAC, the Service, its EndpointSlice and the APIService, as metrics-server's components.yaml has them. */
export function metricsServerObjects(address: string, port: number): KubernetesObject[] {
  const user = { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: METRICS_SERVER_USER.name };
  const clusterRole = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
  const role = `appkind:${NAME}`;
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: role },
      rules: [
        { apiGroups: [''], resources: ['nodes/metrics'], verbs: ['get'] },
        { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] },
      ],
    } as KubernetesObject,
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: role }, roleRef: clusterRole(role), subjects: [user] } as KubernetesObject,
    // TokenReviews and SubjectAccessReviews for the requests the aggregator proxies to it.
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `${role}:auth-delegator` }, roleRef: clusterRole('system:auth-delegator'), subjects: [user] } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${role}:auth-reader`, namespace: NAMESPACE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'extension-apiserver-authentication-reader' },
      subjects: [user],
    } as KubernetesObject,
    { apiVersion: 'v1', kind: 'Service', metadata: { name: NAME, namespace: NAMESPACE }, spec: { ports: [{ name: 'https', port: 443, targetPort: port, protocol: 'TCP' }] } } as KubernetesObject,
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: NAME, namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': NAME, 'endpointslice.kubernetes.io/managed-by': 'appkind-controlplane' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    } as KubernetesObject,
    {
      apiVersion: 'apiregistration.k8s.io/v1',
      kind: 'APIService',
      metadata: { name: METRICS_API_SERVICE },
      spec: {
        group: 'metrics.k8s.io',
        version: 'v1beta1',
        service: { name: NAME, namespace: NAMESPACE, port: 443 },
        // Its serving certificate is self-signed for localhost; upstream's manifest skips the check too.
        insecureSkipTLSVerify: true,
        groupPriorityMinimum: 100,
        versionPriority: 100,
      },
    } as KubernetesObject,
  ];
}

export function registerMetricsServer(kc: KubeConfig, address: string, port: number): Promise<void> {
  return applyObjects(kc, metricsServerObjects(address, port));
}

type ApiService = KubernetesObject & { status?: { conditions?: { type: string; status: string; message?: string }[] } };

/** True once the aggregator reaches metrics-server; until then throws its reason, which waitFor's timeout names. */
export async function metricsApiAvailable(kc: KubeConfig): Promise<boolean> {
  const api = await new RestClient(kc).get<ApiService>({ apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: METRICS_API_SERVICE } });
  const available = api?.status?.conditions?.find((c) => c.type === 'Available');
  if (available?.status === 'True') return true;
  if (available?.message) throw new Error(`APIService ${METRICS_API_SERVICE} not Available: ${available.message}`);
  return false;
}
