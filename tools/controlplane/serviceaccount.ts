// Acting as a ServiceAccount: a bound token from the TokenRequest API, and a kubeconfig that uses it
// against the same server and CA as the admin KubeConfig it was minted with.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { writeKubeconfig } from './files.js';

/** A bound ServiceAccount token (the API server enforces a minimum of 600 s). */
export async function requestServiceAccountToken(
  admin: KubeConfig,
  namespace: string,
  name: string,
  expirationSeconds = 3600,
): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const body = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [], expirationSeconds } };
  const response = await core.createNamespacedServiceAccountToken({ name, namespace, body });
  const token = response.status?.token;
  if (!token) throw new Error(`controlplane: TokenRequest for ${namespace}/${name} returned no token`);
  return token;
}

/** Writes a kubeconfig (24 h token) for the ServiceAccount at `path`. */
export async function writeServiceAccountKubeconfig(admin: KubeConfig, namespace: string, name: string, path: string): Promise<void> {
  const cluster = admin.getCurrentCluster();
  if (!cluster?.caData) throw new Error('controlplane: admin kubeconfig has no cluster with certificate-authority-data');
  const token = await requestServiceAccountToken(admin, namespace, name, 24 * 3600);
  const caPem = Buffer.from(cluster.caData, 'base64').toString('utf8');
  writeKubeconfig(path, { server: cluster.server, caPem, user: `system:serviceaccount:${namespace}:${name}`, token });
}
