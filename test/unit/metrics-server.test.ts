// What the real node's metrics-server is configured with: the aggregation layer's flags on the API
// server, the front-proxy certificate they name (made by openssl, checked with Node's X509 parser),
// metrics-server's kubelet client and its registration, and the cache path build.sh prints.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiserverArgs, CONTROLLERS, controllerManagerArgs, type Ports } from '../../tools/controlplane/components.js';
import { FRONT_PROXY_CLIENT, writeFrontProxyCerts } from '../../tools/controlplane/front-proxy.js';
import { METRICS_API_SERVICE, METRICS_SERVER_USER, metricsServerArgs, metricsServerObjects } from '../../tools/controlplane/node/metrics-server.js';

const ports: Ports = { etcdClient: 1, etcdPeer: 2, apiserver: 3, kwok: 4 };
const files = { certDir: '/c', tokenFile: '/t', serviceAccountPublicKey: '/p', serviceAccountPrivateKey: '/k' };

describe('the aggregation layer', () => {
  it('the API server proxies with the front-proxy client certificate and routes to the endpoint, only when given one', () => {
    const args = apiserverArgs(ports, { ...files, frontProxy: { caFile: '/f/ca.crt', certFile: '/f/c.crt', keyFile: '/f/c.key' } });
    expect(args).toEqual(expect.arrayContaining([
      '--requestheader-client-ca-file=/f/ca.crt',
      `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
      '--requestheader-username-headers=X-Remote-User',
      '--proxy-client-cert-file=/f/c.crt',
      '--proxy-client-key-file=/f/c.key',
      '--enable-aggregator-routing=true',
    ]));
    expect(apiserverArgs(ports, files).some((a) => a.startsWith('--requestheader') || a.startsWith('--proxy-client') || a.startsWith('--enable-aggregator'))).toBe(false);
  });

  it('openssl writes a client certificate for front-proxy-client signed by the CA', () => {
    const dir = mkdtempSync(join(tmpdir(), 'appkind-front-proxy-'));
    try {
      const written = writeFrontProxyCerts(dir);
      const ca = new X509Certificate(readFileSync(written.caFile));
      const client = new X509Certificate(readFileSync(written.certFile));
      expect(client.subject).toBe(`CN=${FRONT_PROXY_CLIENT}`);
      expect(client.checkIssued(ca)).toBe(true);
      expect(client.verify(ca.publicKey)).toBe(true);
      expect(client.ca).toBe(false);
      expect(ca.ca).toBe(true);
      expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']); // clientAuth
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the HPA controller', () => {
  it('kube-controller-manager runs it and syncs HPAs every 5 s', () => {
    expect(CONTROLLERS).toContain('horizontal-pod-autoscaler-controller');
    const args = controllerManagerArgs('/k', '/sa.key', '/ca.crt');
    expect(args.find((a) => a.startsWith('--controllers='))).toContain('horizontal-pod-autoscaler-controller');
    expect(args).toContain('--horizontal-pod-autoscaler-sync-period=5s');
  });
});

describe('metrics-server', () => {
  it('listens on the node address, delegates auth through its kubeconfig and scrapes the kubelet by InternalIP at the Node status port', () => {
    const args = metricsServerArgs({ kubeconfig: '/m.kubeconfig', address: '10.243.0.1', port: 4443, certDir: '/m' });
    expect(args).toEqual(expect.arrayContaining([
      '--kubeconfig=/m.kubeconfig',
      '--authentication-kubeconfig=/m.kubeconfig',
      '--authorization-kubeconfig=/m.kubeconfig',
      '--bind-address=10.243.0.1',
      '--secure-port=4443',
      '--kubelet-insecure-tls',
      '--kubelet-preferred-address-types=InternalIP',
      '--kubelet-use-node-status-port',
    ]));
    const resolution = args.find((a) => a.startsWith('--metric-resolution='));
    expect(Number.parseInt(resolution?.split('=')[1] ?? '', 10)).toBeGreaterThanOrEqual(10); // its minimum
  });

  it('is registered as v1beta1.metrics.k8s.io behind a selector-less Service whose EndpointSlice holds its address and port', () => {
    const objects = metricsServerObjects('10.243.0.1', 4443) as ({ kind: string; metadata: { name: string; labels?: Record<string, string> } } & Record<string, unknown>)[];
    const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
    const service = byKind('Service')[0] as unknown as { metadata: { name: string; namespace: string }; spec: { selector?: object; ports: { name: string; port: number; targetPort: number }[] } };
    expect(service.spec.selector).toBeUndefined();
    expect(service.spec.ports).toEqual([expect.objectContaining({ name: 'https', port: 443, targetPort: 4443 })]);
    const slice = byKind('EndpointSlice')[0] as unknown as { metadata: { labels: Record<string, string> }; endpoints: { addresses: string[] }[]; ports: { name: string; port: number }[] };
    expect(slice.metadata.labels['kubernetes.io/service-name']).toBe(service.metadata.name);
    expect(slice.endpoints[0]?.addresses).toEqual(['10.243.0.1']);
    expect(slice.ports).toEqual([expect.objectContaining({ name: 'https', port: 4443 })]);
    const api = byKind('APIService')[0] as unknown as { metadata: { name: string }; spec: { group: string; version: string; service: { name: string; namespace: string; port: number } } };
    expect(api.metadata.name).toBe(METRICS_API_SERVICE);
    expect(api.spec).toMatchObject({ group: 'metrics.k8s.io', version: 'v1beta1', service: { name: service.metadata.name, namespace: service.metadata.namespace, port: 443 } });
    // Its own identity may read pods, nodes and the kubelet's metrics, and review the tokens it is sent.
    const subjects = [...byKind('ClusterRoleBinding'), ...byKind('RoleBinding')].map((b) => (b as unknown as { subjects: { name: string }[] }).subjects[0]?.name);
    expect(new Set(subjects)).toEqual(new Set([METRICS_SERVER_USER.name]));
    expect(byKind('ClusterRoleBinding').map((b) => (b as unknown as { roleRef: { name: string } }).roleRef.name)).toContain('system:auth-delegator');
  });

  it('build.sh --print-path names the binary in the cache, keyed by version and pinned sums, without building', () => {
    const script = join(process.cwd(), 'tools/metrics-server/build.sh');
    const path = execFileSync('bash', [script, '--print-path'], { encoding: 'utf8', env: { ...process.env, APPKIND_CACHE_DIR: '/nonexistent-cache' } }).trim();
    expect(path).toMatch(/^\/nonexistent-cache\/metrics-server\/v0\.8\.0-[0-9a-f]{12}\/metrics-server$/);
  });
});
