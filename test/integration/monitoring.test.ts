// OperatorMonitoring against the real control plane: the prometheus-operator CRDs (vendored in
// prometheus-operator-crds/) installed, its ServiceMonitor and PrometheusRule applied with strict
// field validation and read back unchanged (no field pruned or refused by their schemas); then the
// operator, run as the bundle's ServiceAccount with HTTPS /metrics, is scraped with the token of the
// ServiceAccount the construct binds, and every metric an alert or a dashboard panel names is there.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Service } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { OperatorBundle, OperatorMonitoring } from 'cdk8s-appkind';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { requestServiceAccountToken } from '../../tools/controlplane/serviceaccount.js';
import { expressions, exposedNames, metricNames } from '../unit/promql.js';
import { createTestNamespace, crObject, eventually, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';
import { httpsGet, installCrds, metricValue, OperatorProcess } from './operator-process.js';

jest.setTimeout(180_000);

const CRDS = ['monitoring.coreos.com_servicemonitors.yaml', 'monitoring.coreos.com_prometheusrules.yaml'].map(
  (file) => parseAllDocuments(readFileSync(join(import.meta.dirname, 'prometheus-operator-crds', file), 'utf8'))[0]!.toJS() as KubernetesObject,
);
/** Series Prometheus makes itself for each target, not found in any /metrics. */
const PROMETHEUS_MADE = ['up'];
const FIELD_MANAGER = 'monitoring-test';

// Cluster-scoped names of its own (the metrics ClusterRoles and bindings): other test files share the cluster.
const operatorName = `appkind-operator-${randomBytes(3).toString('hex')}`;

let kc: KubeConfig;
let admin: RestClient;
let ns: string;
let objects: KubernetesObject[];
let op: OperatorProcess | undefined;

/** Server-side apply refusing unknown or duplicate fields, instead of warning and dropping them. */
function strictApply(obj: KubernetesObject, dryRun = false): Promise<KubernetesObject> {
  const plural = `${obj.kind!.toLowerCase()}s`;
  const path = `/apis/${obj.apiVersion}/namespaces/${obj.metadata!.namespace}/${plural}/${obj.metadata!.name}`;
  return admin.request<KubernetesObject>('PATCH', path, {
    body: obj,
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: FIELD_MANAGER, force: true, fieldValidation: 'Strict', ...(dryRun ? { dryRun: 'All' } : {}) },
  });
}

const find = (kind: string, suffix = '') => objects.find((o) => o.kind === kind && o.metadata?.name === `${operatorName}${suffix}`)!;

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  admin = new RestClient(kc);
  ns = await createTestNamespace(kc, 'monitoring');
  await installCrds(kc, [SAMPLE_KIND]);
  await applyManifests(kc, CRDS);
  const chart = new Chart(new App(), 'bundle');
  const bundle = new OperatorBundle(chart, 'op', {
    kinds: [SAMPLE_KIND], namespace: ns, name: operatorName, createNamespace: false, crds: false, watchNamespaces: [ns], admissionPolicy: false, authoringRoles: false,
  });
  new OperatorMonitoring(chart, 'monitoring', { bundle, prometheusServiceAccount: { name: 'prometheus', namespace: ns } });
  objects = chart.toJson() as KubernetesObject[];
});

afterAll(async () => {
  await op?.stop('SIGTERM');
  for (const [kind, name] of [
    ['ClusterRoleBinding', `${operatorName}-metrics-scraper`], ['ClusterRoleBinding', `${operatorName}-metrics-auth`],
    ['ClusterRole', `${operatorName}-metrics-auth`], ['ClusterRole', `${operatorName}-metrics-reader`],
    ['ClusterRoleBinding', `${operatorName}-crds`], ['ClusterRole', `${operatorName}-crds`],
  ] as const) {
    await admin?.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name } }).catch(() => undefined);
  }
  // Only this file uses them; the namespace's ServiceMonitor and PrometheusRule go with them.
  for (const crd of CRDS) await admin?.delete(crd).catch(() => undefined);
  admin?.close();
});

describe('the ServiceMonitor and PrometheusRule against the prometheus-operator CRDs (v0.93.0 schemas)', () => {
  test.each(['ServiceMonitor', 'PrometheusRule'])('the %s is accepted with strict field validation and stored with every field it was sent', async (kind) => {
    const obj = find(kind) as KubernetesObject & { spec: unknown };
    expect(obj.apiVersion).toBe('monitoring.coreos.com/v1');
    const applied = (await strictApply(obj)) as KubernetesObject & { spec: unknown };
    // Nothing pruned: the schema knows every field the construct writes (defaults it adds are allowed).
    expect(applied.spec).toMatchObject(obj.spec as object);
    const live = (await admin.get<KubernetesObject & { spec: unknown }>(obj))!;
    expect(live.spec).toMatchObject(obj.spec as object);
    expect(live.metadata?.labels).toEqual(obj.metadata?.labels);
  });

  test('the schemas do check: a rule whose "for" is no duration, and an endpoint field the CRD lacks, are refused', async () => {
    const rule = find('PrometheusRule') as KubernetesObject & { spec: { groups: { rules: { for: string }[] }[] } };
    const badRule = structuredClone(rule);
    badRule.spec.groups[0]!.rules[0]!.for = 'five minutes';
    const refused = await strictApply(badRule, true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe(422);
    expect((refused as ApiError).message).toContain('for');

    const monitor = find('ServiceMonitor') as KubernetesObject & { spec: { endpoints: Record<string, unknown>[] } };
    const badMonitor = structuredClone(monitor);
    badMonitor.spec.endpoints[0]!.bearerTokenFiles = 'typo';
    const unknown = await strictApply(badMonitor, true).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ApiError);
    expect((unknown as ApiError).message).toContain('bearerTokenFiles');
  });
});

describe("the operator's /metrics, scraped as the construct's bound ServiceAccount", () => {
  let body: string;

  beforeAll(async () => {
    // The bundle's RBAC and Service, the construct's binding and dashboard; the Deployment left out: we run the process.
    const rest = objects.filter((o) => o.kind !== 'Deployment' && !o.apiVersion?.startsWith('monitoring.coreos.com/'));
    await applyManifests(kc, [...rest, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'prometheus', namespace: ns } }]);
    op = await OperatorProcess.spawn({
      kubeconfig: await sharedServiceAccountKubeconfig(ns, operatorName),
      env: {
        APPKIND_WATCH_NAMESPACE: ns, APPKIND_METRICS_SECURE: 'true',
        APPKIND_LEADER_ELECT: 'true', APPKIND_LEASE_NAME: operatorName, APPKIND_LEASE_NAMESPACE: ns, APPKIND_POD_NAME: 'monitoring-test',
      },
      until: (l) => l.msg === 'workers started',
    });
    await admin.apply(crObject(SAMPLE_KIND, ns, 'watched', { size: 1 }), FIELD_MANAGER);
    const token = await requestServiceAccountToken(kc, ns, 'prometheus', 3600);
    // The binding reaches the API server's authorizer a moment after the create; the CR the cache a moment after its.
    await eventually('a 200 scrape counting the CR', async () => {
      const res = await httpsGet('127.0.0.1', op!.ports.metrics!, '/metrics', token);
      body = res.body;
      return res.status === 200 && metricValue(body, 'appkind_resources', { kind: SAMPLE_KIND.kind }) === 1;
    });
  });

  test("the ServiceMonitor's selector picks exactly the bundle's metrics Service in its namespace, which has the port it names", async () => {
    const sm = find('ServiceMonitor') as KubernetesObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] } };
    const labelSelector = Object.entries(sm.spec.selector.matchLabels).map(([k, v]) => `${k}=${v}`).join(',');
    const services = await admin.request<{ items: V1Service[] }>('GET', `/api/v1/namespaces/${ns}/services`, { query: { labelSelector } });
    expect(services.items.map((s) => s.metadata?.name)).toEqual([`${operatorName}-metrics`]);
    expect(services.items[0]!.spec?.ports?.map((p) => p.name)).toEqual([sm.spec.endpoints[0]!.port]);
  });

  test('every metric an alert or a dashboard panel names is served (Prometheus adds "up" itself)', () => {
    const exposed = exposedNames(body);
    const used = expressions(objects).flatMap(({ where, expr }) => metricNames(expr).map((name) => ({ where, name })));
    expect(used.length).toBeGreaterThan(20);
    const missing = used.filter(({ name }) => !exposed.has(name) && !PROMETHEUS_MADE.includes(name));
    expect(missing).toEqual([]);
  });

  test('the series the alerts subtract and compare exist with values: CRs, Ready by status, queue, leader, kinds', () => {
    const sample = (name: string, labels: string) => new RegExp(`^${name}\\{${labels}\\} \\d`, 'm');
    expect(body).toMatch(sample('appkind_resources', `kind="${SAMPLE_KIND.kind}"`));
    for (const status of ['True', 'False', 'Unknown']) {
      expect(body).toMatch(sample('appkind_resource_conditions', `kind="${SAMPLE_KIND.kind}",type="Ready",status="${status}"`));
    }
    expect(body).toMatch(sample('workqueue_depth', 'name="appkind"'));
    expect(metricValue(body, 'leader_election_master_status', { name: operatorName })).toBe(1);
    expect(body).toMatch(/^appkind_config_last_reload_successful 1$/m);
  });
});
