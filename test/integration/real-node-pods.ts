// Pods on the real node for tests: the echo app (examples/echo, loaded as takeyan/flask:0.0.3) behind a
// NodePort Service, and plain HTTP to loopback NodePorts the way `curl localhost:<nodePort>` does.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { request } from 'node:http';
import { ECHO_STAND_IN_FOR } from '../../tools/echo-image.js';
import { eventually } from './cluster.js';

export interface HttpAnswer {
  status: number;
  body: string;
}

/** GET http://127.0.0.1:<port><path> with a fresh connection each time (so kube-proxy picks a pod each time). */
export function getLocal(port: number, path: string, timeoutMs = 3000): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout GET 127.0.0.1:${port}${path}`)));
    req.on('error', reject);
    req.end();
  });
}

/** One echo pod and a NodePort Service for it; resolves with the NodePort once the pod is Running. */
export async function runEchoPod(kc: KubeConfig, namespace: string, name = 'echo'): Promise<number> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { app: name } },
      spec: {
        containers: [{ name: 'echo', image: ECHO_STAND_IN_FOR, imagePullPolicy: 'IfNotPresent', ports: [{ containerPort: 5000 }] }],
        terminationGracePeriodSeconds: 1,
      },
    },
  });
  const service = await core.createNamespacedService({
    namespace,
    body: { metadata: { name }, spec: { type: 'NodePort', selector: { app: name }, ports: [{ port: 5000 }] } },
  });
  await eventually(`pod ${namespace}/${name} Running`, async () => (await core.readNamespacedPod({ name, namespace })).status?.phase === 'Running', 120_000);
  const nodePort = service.spec?.ports?.[0]?.nodePort;
  if (!nodePort) throw new Error(`Service ${namespace}/${name} got no nodePort`);
  return nodePort;
}
