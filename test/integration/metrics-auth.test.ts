// /metrics over HTTPS with authentication and authorization, as kubebuilder v4 scaffolds it:
// the operator, run as the bundle's ServiceAccount with the bundle's RBAC, checks each scrape's bearer
// token with a TokenReview and its user with a SubjectAccessReview (get on the non-resource URL
// /metrics) on the real control plane. A ServiceAccount bound to the bundle's metrics-reader ClusterRole
// reads the metrics; one without it gets 403, no token or a bad one 401. The probes stay plain HTTP.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { OperatorBundle } from 'cdk8s-appkind';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { MetricsAuthorizer, type ReviewClient } from '../../operator/runtime/metrics-auth.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { requestServiceAccountToken } from '../../tools/controlplane/serviceaccount.js';
import { createTestNamespace, eventually, readSharedAuditLog, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';
import { installCrds, metricValue, OperatorProcess } from './operator-process.js';

jest.setTimeout(120_000);

// Cluster-scoped names of its own (the metrics ClusterRoles and bindings): other test files share the cluster.
const operatorName = `appkind-operator-${randomBytes(3).toString('hex')}`;

let kc: KubeConfig;
let admin: RestClient;
let ns: string;
let operatorUser: string;
let scraperToken: string;
let strangerToken: string;
let scratch: string;
const operators: OperatorProcess[] = [];

interface Scrape {
  readonly status: number;
  readonly body: string;
  /** The certificate the server presented. */
  readonly peer: X509Certificate;
}

/** GET over HTTPS on loopback with an optional bearer token; verifies the server against `ca` when given. */
function scrape(port: number, path: string, token?: string, ca?: string): Promise<Scrape> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1', port, path, method: 'GET',
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        // A connection of its own: a pooled one would keep the certificate of an earlier handshake.
        agent: false,
        ...(ca ? { ca, servername: 'localhost' } : { rejectUnauthorized: false }),
      },
      (res) => {
        // Read while the response holds its socket (it is detached once the body has ended).
        const peer = (res.socket as TLSSocket).getPeerX509Certificate();
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('error', reject);
        res.on('end', () => (peer ? resolve({ status: res.statusCode!, body, peer }) : reject(new Error('the server presented no certificate'))));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** TokenReviews and SubjectAccessReviews the operator's identity made since `since` (ISO), from the audit log. */
async function reviewsSince(since: string): Promise<{ tokenreviews: number; subjectaccessreviews: number }> {
  const events = (await readSharedAuditLog()).filter(
    (e) => e.stage === 'ResponseComplete' && e.user.username === operatorUser && e.verb === 'create' && e.stageTimestamp > since,
  );
  const count = (resource: string) => events.filter((e) => e.objectRef?.resource === resource).length;
  return { tokenreviews: count('tokenreviews'), subjectaccessreviews: count('subjectaccessreviews') };
}

async function startOperator(env: Record<string, string> = {}): Promise<OperatorProcess> {
  const op = await OperatorProcess.spawn({
    kubeconfig: await sharedServiceAccountKubeconfig(ns, operatorName),
    env: { APPKIND_WATCH_NAMESPACE: ns, APPKIND_METRICS_SECURE: 'true', ...env },
  });
  operators.push(op);
  return op;
}

const sa = (name: string): KubernetesObject => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  admin = new RestClient(kc);
  scratch = mkdtempSync(join(tmpdir(), 'appkind-metrics-auth-'));
  ns = await createTestNamespace(kc, 'metrics');
  operatorUser = `system:serviceaccount:${ns}:${operatorName}`;
  await installCrds(kc, [SAMPLE_KIND]);
  // The bundle as a cluster admin installs it for one namespace (its Deployment left out: we run the process).
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds: [SAMPLE_KIND], namespace: ns, name: operatorName, createNamespace: false, crds: false, watchNamespaces: [ns], admissionPolicy: false });
  const bundle = (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment');
  expect(bundle.filter((o) => o.kind?.startsWith('ClusterRole')).map((o) => `${o.kind}/${o.metadata?.name}`).sort()).toEqual(
    expect.arrayContaining([`ClusterRole/${operatorName}-metrics-auth`, `ClusterRole/${operatorName}-metrics-reader`, `ClusterRoleBinding/${operatorName}-metrics-auth`]),
  );
  await applyManifests(kc, [
    ...bundle,
    sa('scraper'),
    sa('stranger'),
    // What an admin does for Prometheus: bind the bundle's metrics-reader ClusterRole to its identity.
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `${operatorName}-scraper` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${operatorName}-metrics-reader` },
      subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: ns }],
    } as KubernetesObject,
  ]);
  scraperToken = await requestServiceAccountToken(kc, ns, 'scraper', 3600);
  strangerToken = await requestServiceAccountToken(kc, ns, 'stranger', 3600);
});

afterAll(async () => {
  for (const op of operators) await op.stop('SIGTERM');
  for (const [k, name] of [
    ['ClusterRoleBinding', `${operatorName}-scraper`], ['ClusterRoleBinding', `${operatorName}-self-reader`], ['ClusterRoleBinding', `${operatorName}-metrics-auth`],
    ['ClusterRole', `${operatorName}-metrics-auth`], ['ClusterRole', `${operatorName}-metrics-reader`],
    ['ClusterRoleBinding', `${operatorName}-crds`], ['ClusterRole', `${operatorName}-crds`],
  ] as const) {
    await admin?.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: k, metadata: { name } }).catch(() => undefined);
  }
  admin?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('/metrics over HTTPS with TokenReview and SubjectAccessReview', () => {
  let op: OperatorProcess;
  let metricsPort: number;

  beforeAll(async () => {
    op = await startOperator();
    const start = op.logs.find((l) => l.msg === 'operator starting')!;
    expect(start).toMatchObject({ metricsScheme: 'https', metricsCertificate: 'self-signed' });
    metricsPort = op.ports.metrics!;
    expect(op.ports.health).not.toBe(metricsPort);
  });

  test('a ServiceAccount bound to the metrics-reader ClusterRole reads the metrics: 200, with the reconcile counters', async () => {
    const res = await scrape(metricsPort, '/metrics', scraperToken);
    expect(res.status).toBe(200);
    expect(res.body).toContain('# TYPE controller_runtime_reconcile_total counter');
    expect(metricValue(res.body, 'controller_runtime_reconcile_total', { controller: SAMPLE_KIND.kind, result: 'success' })).toBeGreaterThanOrEqual(0);
    // The self-signed certificate made at start, for localhost and the loopback addresses.
    expect(res.peer.subject).toContain('CN=appkind-operator');
    expect(res.peer.checkHost('localhost')).toBe('localhost');
    expect(res.peer.checkIP('127.0.0.1')).toBe('127.0.0.1');
  });

  test("the operator's own ServiceAccount: 403 while it is not a reader, 200 once bound to metrics-reader (as kubebuilder's e2e test binds it)", async () => {
    const before = await scrape(metricsPort, '/metrics', await requestServiceAccountToken(kc, ns, operatorName, 3600));
    expect(before.status).toBe(403);
    await applyManifests(kc, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `${operatorName}-self-reader` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${operatorName}-metrics-reader` },
        subjects: [{ kind: 'ServiceAccount', name: operatorName, namespace: ns }],
      } as KubernetesObject,
    ]);
    // The API server's RBAC authorizer sees the binding through its informer, a moment after the create.
    await eventually('the binding in force', async () =>
      (await admin.request<{ status: { allowed: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: operatorUser, groups: ['system:serviceaccounts', 'system:authenticated'], nonResourceAttributes: { path: '/metrics', verb: 'get' } } },
      })).status.allowed, 30_000);
    // A new token: the denial of the first one is cached for 30 s (controller-runtime's DenyCacheTTL).
    const after = await scrape(metricsPort, '/metrics', await requestServiceAccountToken(kc, ns, operatorName, 3600));
    expect(after.status).toBe(200);
    expect(after.body).toContain('# TYPE controller_runtime_reconcile_total counter');
  });

  test('a ServiceAccount without it: 403, and no metrics', async () => {
    const res = await scrape(metricsPort, '/metrics', strangerToken);
    expect(res.status).toBe(403);
    expect(res.body).toContain(`Authorization denied for user system:serviceaccount:${ns}:stranger`);
    expect(res.body).not.toContain('controller_runtime');
  });

  test('no token, or one the API server does not authenticate: 401, and no metrics', async () => {
    for (const token of [undefined, 'not-a-token', `${scraperToken.slice(0, -4)}AAAA`]) {
      const res = await scrape(metricsPort, '/metrics', token);
      expect({ token: token?.slice(-8), status: res.status }).toEqual({ token: token?.slice(-8), status: 401 });
      expect(res.body).not.toContain('controller_runtime');
    }
    // Any other path is refused the same way before a route is looked up.
    expect((await scrape(metricsPort, '/healthz')).status).toBe(401);
  });

  test('a scraper every 15 s costs no review while its answers are cached: ten scrapes, one TokenReview and one SubjectAccessReview', async () => {
    const token = await requestServiceAccountToken(kc, ns, 'scraper', 3600); // a token not reviewed yet
    const since = new Date().toISOString(); // after the earlier tests' reviews were answered
    for (let i = 0; i < 10; i++) expect((await scrape(metricsPort, '/metrics', token)).status).toBe(200);
    // The audit log is written asynchronously: wait for the first review of each kind, then count.
    await eventually('the reviews in the audit log', async () => {
      const r = await reviewsSince(since);
      return r.tokenreviews > 0 && r.subjectaccessreviews > 0;
    });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await reviewsSince(since)).toEqual({ tokenreviews: 1, subjectaccessreviews: 1 });
  });

  test('the kubelet probes stay plain HTTP on their own port, without a token', async () => {
    const health = op.ports.health!;
    for (const path of ['/healthz', '/readyz']) expect((await fetch(`http://127.0.0.1:${health}${path}`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${health}/metrics`)).status).toBe(404);
    // The metrics port speaks TLS only.
    await expect(fetch(`http://127.0.0.1:${metricsPort}/metrics`)).rejects.toThrow();
  });

  test("the operator's reviews need only the bundle's metrics-auth ClusterRole: create on tokenreviews and subjectaccessreviews", async () => {
    const review = async (group: string, resource: string, verb: string) =>
      (await admin.request<{ status: { allowed: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: operatorUser, groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'], resourceAttributes: { group, resource, verb } } },
      })).status.allowed;
    expect(await review('authentication.k8s.io', 'tokenreviews', 'create')).toBe(true);
    expect(await review('authorization.k8s.io', 'subjectaccessreviews', 'create')).toBe(true);
    expect(await review('authorization.k8s.io', 'subjectaccessreviews', 'list')).toBe(false);
    expect(await review('', 'secrets', 'get')).toBe(false);
  });
});

describe('/metrics with a mounted certificate (APPKIND_METRICS_CERT_DIR)', () => {
  test('serves the tls.crt and tls.key of the folder, and the new pair once they change', async () => {
    const pair = async (cn: string) => generate([{ name: 'commonName', value: cn }], {
      keyType: 'ec', algorithm: 'sha256',
      extensions: [{ name: 'basicConstraints', cA: false }, { name: 'extKeyUsage', serverAuth: true }, { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
    });
    const dir = join(scratch, 'cert');
    const write = (p: { cert: string; private: string }) => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'tls.crt'), p.cert);
      writeFileSync(join(dir, 'tls.key'), p.private);
    };
    const first = await pair('metrics-one.example');
    write(first);
    const op = await startOperator({ APPKIND_METRICS_CERT_DIR: dir });
    expect(op.logs.find((l) => l.msg === 'operator starting')).toMatchObject({ metricsScheme: 'https', metricsCertificate: dir });
    const port = op.ports.metrics!;
    // Verified against the mounted certificate itself (a client that trusts it, as Prometheus would trust its CA).
    const res = await scrape(port, '/metrics', scraperToken, first.cert);
    expect(res.status).toBe(200);
    expect(res.peer.subject).toContain('CN=metrics-one.example');

    const second = await pair('metrics-two.example');
    write(second);
    await op.waitForLog((l) => l.msg === 'metrics certificate reloaded', 30_000);
    const after = await scrape(port, '/metrics', scraperToken, second.cert);
    expect(after.status).toBe(200);
    expect(after.peer.subject).toContain('CN=metrics-two.example');
  });

  test('a folder without a valid pair stops the start with exit code 2, naming the setting', async () => {
    const op = await OperatorProcess.spawn({
      kubeconfig: await sharedServiceAccountKubeconfig(ns, operatorName),
      env: { APPKIND_WATCH_NAMESPACE: ns, APPKIND_METRICS_SECURE: 'true', APPKIND_METRICS_CERT_DIR: join(scratch, 'missing') },
      until: () => false,
      timeoutMs: 30_000,
    }).catch((e: Error) => e);
    expect(op).toBeInstanceOf(Error);
    expect(String(op)).toContain('exit code 2');
    expect(String(op)).toContain('APPKIND_METRICS_CERT_DIR');
  });
});

describe("the review caches (MetricsAuthorizer in this process, its reviews sent to the API server as the operator's identity)", () => {
  /** A client of the operator's ServiceAccount that records the path of each review it sends. */
  async function reviewer(): Promise<{ client: ReviewClient; sent: string[]; close: () => void }> {
    const kubeconfig = new KubeConfig();
    kubeconfig.loadFromFile(await sharedServiceAccountKubeconfig(ns, operatorName));
    const rest = new RestClient(kubeconfig);
    const sent: string[] = [];
    const client: ReviewClient = {
      request: <T>(method: string, path: string, opts?: { body?: unknown }) => {
        sent.push(path.split('/').pop()!);
        return rest.request<T>(method, path, opts);
      },
    };
    return { client, sent, close: () => rest.close() };
  }
  const count = (sent: string[]) => ({ tokenreviews: sent.filter((p) => p === 'tokenreviews').length, subjectaccessreviews: sent.filter((p) => p === 'subjectaccessreviews').length });

  test("controller-runtime's lifetimes: a token's review 1 min, an allowed decision 5 min, a denied one 30 s", async () => {
    const { client, sent, close } = await reviewer();
    let clock = Date.now();
    const auth = new MetricsAuthorizer(client, { now: () => clock });
    const bearer = (t: string) => `Bearer ${t}`;
    try {
      expect(await auth.decide(bearer(scraperToken), 'GET', '/metrics')).toMatchObject({ allowed: true });
      expect(await auth.decide(bearer(scraperToken), 'GET', '/metrics')).toMatchObject({ allowed: true });
      expect(count(sent)).toEqual({ tokenreviews: 1, subjectaccessreviews: 1 });
      clock += 61_000; // the token's review expired, the allowed decision not
      expect(await auth.decide(bearer(scraperToken), 'GET', '/metrics')).toMatchObject({ allowed: true });
      expect(count(sent)).toEqual({ tokenreviews: 2, subjectaccessreviews: 1 });
      clock += 300_000; // both expired
      expect(await auth.decide(bearer(scraperToken), 'GET', '/metrics')).toMatchObject({ allowed: true });
      expect(count(sent)).toEqual({ tokenreviews: 3, subjectaccessreviews: 2 });

      sent.length = 0;
      expect(await auth.decide(bearer(strangerToken), 'GET', '/metrics')).toMatchObject({ allowed: false, status: 403 });
      clock += 29_000;
      expect(await auth.decide(bearer(strangerToken), 'GET', '/metrics')).toMatchObject({ allowed: false, status: 403 });
      expect(count(sent)).toEqual({ tokenreviews: 1, subjectaccessreviews: 1 });
      clock += 2_000; // the denial expired (30 s), the token's review not (1 min)
      expect(await auth.decide(bearer(strangerToken), 'GET', '/metrics')).toMatchObject({ allowed: false, status: 403 });
      expect(count(sent)).toEqual({ tokenreviews: 1, subjectaccessreviews: 2 });
    } finally {
      close();
    }
  });

  test('random tokens cannot grow memory: each is reviewed and refused with 401, and at most maxEntries answers are kept', async () => {
    const { client, sent, close } = await reviewer();
    const auth = new MetricsAuthorizer(client, { maxEntries: 8 });
    try {
      for (let i = 0; i < 20; i++) {
        expect(await auth.decide(`Bearer ${randomBytes(24).toString('base64url')}`, 'GET', '/metrics')).toMatchObject({ allowed: false, status: 401 });
      }
      expect(count(sent)).toEqual({ tokenreviews: 20, subjectaccessreviews: 0 });
      expect(auth.cached).toEqual({ tokens: 8, decisions: 0 });
    } finally {
      close();
    }
  });
});
