import { describe, expect, it } from '@jest/globals';
import { Chart, Testing } from 'cdk8s';
import { OperatorBundle, OperatorMonitoring, OperatorMonitoringProps } from 'cdk8s-appkind';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { bundleObjects, installYaml } from '../../tools/release/manifests.js';
import { expressions, metricNames, promqlProblem } from './promql.js';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
  data?: Record<string, string>;
  spec?: {
    selector?: { matchLabels: Record<string, string> };
    namespaceSelector?: { matchNames: string[] };
    endpoints?: { port: string; scheme: string; bearerTokenFile: string; tlsConfig: Record<string, unknown> }[];
    groups?: { name: string; rules: { alert: string; expr: string; for: string; labels: Record<string, string> }[] }[];
  };
}

function synth(props: Partial<OperatorMonitoringProps> = {}, chartNamespace?: string): Manifest[] {
  const chart = new Chart(Testing.app(), 'monitoring', { namespace: chartNamespace });
  const bundle = new OperatorBundle(chart, 'operator', { kinds: [SAMPLE_KIND], namespace: 'ops', name: 'apps' });
  new OperatorMonitoring(chart, 'monitoring', { bundle, ...props });
  return Testing.synth(chart) as Manifest[];
}

const only = (objs: Manifest[], kind: string) => objs.filter((o) => o.kind === kind);

describe('OperatorMonitoring', () => {
  it('renders a ServiceMonitor that scrapes the bundle\'s metrics Service over HTTPS with the scraper\'s token', () => {
    const objs = synth();
    const [sm] = only(objs, 'ServiceMonitor');
    const [service] = only(objs, 'Service');
    expect(sm).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', metadata: { name: 'apps', namespace: 'ops' } });
    // The selector picks the bundle's metrics Service, and the endpoint its port by name.
    expect(service!.metadata.name).toBe('apps-metrics');
    for (const [k, v] of Object.entries(sm!.spec!.selector!.matchLabels)) expect(service!.metadata.labels![k]).toBe(v);
    expect(sm!.spec!.namespaceSelector).toEqual({ matchNames: ['ops'] });
    expect(sm!.spec!.endpoints).toEqual([
      expect.objectContaining({ port: 'https', scheme: 'https', bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token', tlsConfig: { insecureSkipVerify: true } }),
    ]);
    // The bundle's own objects are bundle.test.ts's; these are the construct's.
    expect(objs.filter((o) => ['ServiceMonitor', 'PrometheusRule'].includes(o.kind) || o.metadata.name === 'apps-dashboard')).toMatchSnapshot();
  });

  it('verifies the serving certificate by the Service name against a CA Secret when given', () => {
    const [sm] = only(synth({ caSecret: { name: 'metrics-ca', key: 'ca.crt' } }), 'ServiceMonitor');
    expect(sm!.spec!.endpoints![0]!.tlsConfig).toEqual({ ca: { secret: { name: 'metrics-ca', key: 'ca.crt' } }, serverName: 'apps-metrics.ops.svc' });
  });

  it("binds Prometheus' ServiceAccount to the bundle's metrics-reader ClusterRole only when it is named", () => {
    expect(only(synth(), 'ClusterRoleBinding').map((b) => b.metadata.name)).not.toContain('apps-metrics-scraper');
    const objs = synth({ prometheusServiceAccount: { name: 'prometheus-k8s', namespace: 'monitoring' } }, 'somewhere');
    const binding = only(objs, 'ClusterRoleBinding').find((b) => b.metadata.name === 'apps-metrics-scraper')!;
    expect(binding.metadata.namespace).toBeUndefined();
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'apps-metrics-reader' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'monitoring' }]);
    expect(only(objs, 'ClusterRole').map((r) => r.metadata.name)).toContain('apps-metrics-reader');
  });

  it("carries Prometheus' selector labels on the ServiceMonitor and PrometheusRule, and the sidecar's on the dashboard", () => {
    const objs = synth({ prometheusSelectorLabels: { release: 'kps' }, dashboardLabels: { dashboards: 'appkind' }, dashboardNamespace: 'grafana' });
    for (const kind of ['ServiceMonitor', 'PrometheusRule']) expect(only(objs, kind)[0]!.metadata.labels).toMatchObject({ release: 'kps' });
    const dash = only(objs, 'ConfigMap').find((c) => c.metadata.name === 'apps-dashboard')!;
    expect(dash.metadata).toMatchObject({ namespace: 'grafana', labels: { dashboards: 'appkind' } });
    expect(dash.metadata.labels).not.toHaveProperty('grafana_dashboard');
    expect(only(synth(), 'ConfigMap').find((c) => c.metadata.name === 'apps-dashboard')!.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(only(synth({ dashboard: false }), 'ConfigMap').map((c) => c.metadata.name)).toEqual(['apps-kinds']);
  });

  it('alerts on CRs not Ready, Degraded or Stalled, reconcile errors and time, queue depth, leadership and refused kinds', () => {
    const [rule] = only(synth({ notReadyForMinutes: 30 }), 'PrometheusRule');
    const rules = rule!.spec!.groups![0]!.rules;
    expect(rules.map((r) => r.alert)).toEqual([
      'AppKindOperatorDown', 'AppKindResourcesNotReady', 'AppKindResourcesDegraded', 'AppKindResourcesStalled', 'AppKindReconcileErrors',
      'AppKindReconcileSlow', 'AppKindWorkqueueBacklog', 'AppKindWorkqueueLatency', 'AppKindNoLeader', 'AppKindLeaderChanges', 'AppKindKindsRefused', 'AppKindAPIThrottled',
    ]);
    const byName = new Map(rules.map((r) => [r.alert, r]));
    expect(byName.get('AppKindResourcesNotReady')!.for).toBe('30m');
    for (const r of rules) {
      expect({ alert: r.alert, severity: ['critical', 'warning', 'info'].includes(r.labels.severity!) }).toEqual({ alert: r.alert, severity: true });
      // Every expression reads only this operator's series.
      expect({ alert: r.alert, scoped: r.expr.includes('job="apps-metrics",namespace="ops"') }).toEqual({ alert: r.alert, scoped: true });
    }
  });

  it('every PromQL expression of the rules and the dashboard reads as PromQL and names the metrics it is expected to', () => {
    const exprs = expressions(synth());
    expect(exprs.length).toBeGreaterThan(20);
    for (const { where, expr } of exprs) expect({ where, problem: promqlProblem(expr) }).toEqual({ where, problem: undefined });
    const names = new Set(exprs.flatMap((e) => metricNames(e.expr)));
    expect([...names].sort()).toEqual([
      'appkind_config_last_reload_successful', 'appkind_resource_conditions', 'appkind_resources', 'appkind_rest_client_throttled_total',
      'controller_runtime_reconcile_errors_total', 'controller_runtime_reconcile_time_seconds_bucket', 'controller_runtime_reconcile_total',
      'leader_election_master_status', 'nodejs_eventloop_lag_p99_seconds', 'process_cpu_seconds_total', 'process_resident_memory_bytes',
      'rest_client_requests_total', 'up', 'workqueue_depth', 'workqueue_queue_duration_seconds_bucket', 'workqueue_retries_total',
    ]);
  });

  it('the shallow PromQL reader catches what it is there to catch', () => {
    expect(promqlProblem('sum by (kind) (rate(x{a="b"}[5m])')).toMatch(/unclosed/);
    expect(promqlProblem('sum(rate(x[5 m]))')).toMatch(/bad range/);
    expect(promqlProblem('sum(x{a=b})')).toMatch(/bad label matcher/);
    expect(promqlProblem('summ(x)')).toMatch(/unknown function summ/);
    expect(metricNames('max by (kind) (a_total{type="Ready"}) - on (kind) group_left b > 0')).toEqual(['a_total', 'b']);
  });
});

describe('docs/grafana-dashboard.json', () => {
  it('is the dashboard of the default bundle (run `npm run dashboard` when this fails)', () => {
    const chart = new Chart(Testing.app(), 'docs');
    const monitoring = new OperatorMonitoring(chart, 'monitoring', { bundle: new OperatorBundle(chart, 'operator', { kinds: [SAMPLE_KIND] }) });
    expect(readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'grafana-dashboard.json'), 'utf8')).toBe(`${monitoring.dashboardJson}\n`);
  });
});

describe('install.yaml of the release', () => {
  it('holds the monitoring objects only with --monitoring', () => {
    const kinds = (yaml: string) => yaml.split(/^---$/m).map((d) => (parse(d) as Manifest | null)?.kind).filter(Boolean);
    const env = {}; // the sample kind
    expect(kinds(installYaml(env))).not.toContain('ServiceMonitor');
    const withMonitoring = kinds(installYaml(env, undefined, true));
    for (const kind of ['ServiceMonitor', 'PrometheusRule']) expect(withMonitoring).toContain(kind);
    expect(withMonitoring.length).toBe(bundleObjects({ kinds: [SAMPLE_KIND] }).length + 3);
  });
});
