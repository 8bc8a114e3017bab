import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { OperatorBundle } from './bundle';

/** A ServiceAccount by name and namespace. */
export interface ServiceAccountRef {
  /** Name of the ServiceAccount. */
  readonly name: string;
  /** Namespace of the ServiceAccount. */
  readonly namespace: string;
}

/** A key of a Secret in the operator's namespace. */
export interface SecretKeyRef {
  /** Name of the Secret. */
  readonly name: string;
  /** Key in the Secret. */
  readonly key: string;
}

/** Props of an {@link OperatorMonitoring}. */
export interface OperatorMonitoringProps {
  /** The operator's install bundle: its namespace, name, pod labels and `<name>-metrics` Service are what is scraped. */
  readonly bundle: OperatorBundle;
  /**
   * Labels added to the ServiceMonitor and the PrometheusRule, for a Prometheus whose
   * `serviceMonitorSelector` and `ruleSelector` match labels (kube-prometheus-stack's default matches
   * `release: <its Helm release>`).
   * @default - No labels beyond the operator's own.
   */
  readonly prometheusSelectorLabels?: { [key: string]: string };
  /**
   * The ServiceAccount Prometheus scrapes as. When given, a ClusterRoleBinding `<name>-metrics-scraper`
   * binds it to the bundle's `<name>-metrics-reader` ClusterRole (get on the non-resource URL /metrics),
   * without which every scrape is refused with 403.
   * @default - No binding: bind the scraper's ServiceAccount to `<name>-metrics-reader` yourself.
   */
  readonly prometheusServiceAccount?: ServiceAccountRef;
  /**
   * The CA certificate (a Secret key in the operator's namespace) the scraper verifies the operator's
   * serving certificate against, by the name `<name>-metrics.<namespace>.svc`: give it when the bundle's
   * `metricsCertSecret` holds a certificate a CA signed (cert-manager's `ca.crt`, for instance).
   * @default - The certificate is not verified (the operator's self-signed one, as kubebuilder's scaffold scrapes it).
   */
  readonly caSecret?: SecretKeyRef;
  /**
   * How often Prometheus scrapes /metrics.
   * @default "30s"
   */
  readonly scrapeInterval?: string;
  /**
   * How long, in minutes, some CR of a kind must stay not Ready (or Degraded) before its alert fires.
   * @default 15
   */
  readonly notReadyForMinutes?: number;
  /**
   * Render the Grafana dashboard as a ConfigMap Grafana's dashboard sidecar loads.
   * @default true
   */
  readonly dashboard?: boolean;
  /**
   * Namespace of the dashboard ConfigMap (where the Grafana sidecar looks, if it does not search all namespaces).
   * @default - The operator's namespace.
   */
  readonly dashboardNamespace?: string;
  /**
   * Labels of the dashboard ConfigMap, which the Grafana sidecar selects it by.
   * @default { grafana_dashboard: "1" }
   */
  readonly dashboardLabels?: { [key: string]: string };
}

/** One alerting rule of the PrometheusRule. */
interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  readonly labels: { severity: 'critical' | 'warning' | 'info' };
  readonly annotations: { summary: string; description: string };
}

/** One panel of the dashboard: a title, its PromQL and how its series are named. */
interface Panel {
  readonly title: string;
  readonly type: 'timeseries' | 'stat';
  readonly unit?: string;
  readonly targets: { expr: string; legend: string }[];
}

/**
 * What a Prometheus Operator user installs beside the operator: a ServiceMonitor that scrapes its
 * `<name>-metrics` Service over HTTPS with Prometheus' ServiceAccount token (the operator checks it
 * with a TokenReview and a SubjectAccessReview: that ServiceAccount needs `get` on the non-resource
 * URL /metrics, which the bundle's `<name>-metrics-reader` ClusterRole grants), a PrometheusRule with
 * the alerts, and a Grafana dashboard in a ConfigMap. Needs the prometheus-operator CRDs
 * (monitoring.coreos.com/v1) in the cluster.
 *
 * @example
 * import { App, Chart } from 'cdk8s';
 * import { OperatorBundle, OperatorMonitoring } from 'cdk8s-appkind';
 *
 * const app = new App();
 * const chart = new Chart(app, 'appkind-operator');
 * const bundle = new OperatorBundle(chart, 'bundle', {
 *   kinds: [{
 *     group: 'maho.takara.org', version: 'v1alpha1', kind: 'Takara', plural: 'takaras',
 *     image: 'memcached:1.6-alpine', port: 11211, appName: 'takara', runAsNonRoot: true, runAsUser: 11211,
 *   }],
 * });
 * new OperatorMonitoring(chart, 'monitoring', {
 *   bundle,
 *   prometheusSelectorLabels: { release: 'kube-prometheus-stack' },
 *   prometheusServiceAccount: { name: 'kube-prometheus-stack-prometheus', namespace: 'monitoring' },
 * });
 * app.synth();
 */
export class OperatorMonitoring extends Construct {
  /** The ServiceMonitor `<name>` in the operator's namespace. */
  public readonly serviceMonitor: ApiObject;
  /** The PrometheusRule `<name>` in the operator's namespace. */
  public readonly prometheusRule: ApiObject;
  /** The dashboard ConfigMap `<name>-dashboard`, when rendered. */
  public readonly dashboardConfigMap?: k8s.KubeConfigMap;
  /** The Grafana dashboard (JSON text), as the ConfigMap holds it; import it by hand into a Grafana without the sidecar. */
  public readonly dashboardJson: string;
  /** The PromQL selector of the operator's series: the job and namespace Prometheus gives them. */
  public readonly seriesSelector: string;

  constructor(scope: Construct, id: string, props: OperatorMonitoringProps) {
    super(scope, id);
    const { bundle } = props;
    const name = bundle.name;
    const namespace = bundle.namespace;
    const service = `${name}-metrics`;
    const labels = { ...bundle.selectorLabels, 'app.kubernetes.io/part-of': 'cdk8s-appkind' };
    const selected = { ...labels, ...props.prometheusSelectorLabels };
    // A ServiceMonitor's job label is the Service's name; its namespace label the Service's namespace.
    this.seriesSelector = `job="${service}",namespace="${namespace}"`;

    const tlsConfig = props.caSecret
      ? { ca: { secret: { name: props.caSecret.name, key: props.caSecret.key } }, serverName: `${service}.${namespace}.svc` }
      : { insecureSkipVerify: true };
    this.serviceMonitor = new ApiObject(this, 'ServiceMonitor', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name, namespace, labels: selected },
      spec: {
        selector: { matchLabels: bundle.selectorLabels },
        namespaceSelector: { matchNames: [namespace] },
        endpoints: [
          {
            port: 'https',
            scheme: 'https',
            path: '/metrics',
            interval: props.scrapeInterval ?? '30s',
            // The token of Prometheus' own ServiceAccount, which the operator reviews with the API server.
            bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
            tlsConfig,
          },
        ],
      },
    });

    const notReadyFor = `${props.notReadyForMinutes ?? 15}m`;
    this.prometheusRule = new ApiObject(this, 'PrometheusRule', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name, namespace, labels: selected },
      spec: { groups: [{ name: 'appkind-operator', rules: alertRules(this.seriesSelector, name, notReadyFor) }] },
    });

    if (props.prometheusServiceAccount) {
      const sa = props.prometheusServiceAccount;
      clusterScoped(
        new k8s.KubeClusterRoleBinding(this, 'ScraperBinding', {
          metadata: { name: `${name}-metrics-scraper`, labels },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${name}-metrics-reader` },
          subjects: [{ kind: 'ServiceAccount', name: sa.name, namespace: sa.namespace }],
        }),
      );
    }

    this.dashboardJson = JSON.stringify(dashboard(this.seriesSelector, name), undefined, 2);
    if (props.dashboard ?? true) {
      this.dashboardConfigMap = new k8s.KubeConfigMap(this, 'Dashboard', {
        metadata: {
          name: `${name}-dashboard`,
          namespace: props.dashboardNamespace ?? namespace,
          labels: { ...labels, ...(props.dashboardLabels ?? { grafana_dashboard: '1' }) },
        },
        data: { [`${name}.json`]: this.dashboardJson },
      });
    }
  }
}

/** cdk8s gives every object its chart's namespace; a cluster-scoped object must not carry one. */
function clusterScoped<T extends ApiObject>(obj: T): T {
  if (Chart.of(obj).namespace) obj.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
  return obj;
}

/**
 * The alerts, on the metrics the operator serves. Standby replicas keep caches too and report the
 * same resource gauges, hence `max by (kind)` rather than `sum`.
 */
function alertRules(sel: string, name: string, notReadyFor: string): AlertRule[] {
  const crs = (type: string, status: string) => `max by (kind) (appkind_resource_conditions{${sel},type="${type}",status="${status}"})`;
  const howTo = `kubectl get <kind> -A and kubectl describe the CRs; the operator's log: kubectl logs -n <namespace> deploy/${name}`;
  return [
    {
      alert: 'AppKindOperatorDown',
      expr: `absent(up{${sel}} == 1)`,
      for: '5m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'No appkind operator replica is scraped',
        description: `Prometheus has scraped no replica of ${name} for 5 minutes: no CR is reconciled. Check its pods, and that Prometheus' ServiceAccount is bound to ${name}-metrics-reader (a 403 scrape is down too).`,
      },
    },
    {
      alert: 'AppKindResourcesNotReady',
      expr: `max by (kind) (appkind_resources{${sel}}) - ${crs('Ready', 'True')} > 0`,
      for: notReadyFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.kind }}: {{ $value }} CRs not Ready',
        description: `Some {{ $labels.kind }} CRs have not been Ready for ${notReadyFor} (the count stayed above zero; the CRs may differ). ${howTo}`,
      },
    },
    {
      alert: 'AppKindResourcesDegraded',
      expr: `${crs('Degraded', 'True')} > 0`,
      for: notReadyFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.kind }}: {{ $value }} CRs Degraded',
        description: `Some {{ $labels.kind }} CRs have been Degraded for ${notReadyFor}: the operator cannot apply their children (a name taken, an image not allowed, an invalid spec, a NodePort in use). ${howTo}`,
      },
    },
    {
      alert: 'AppKindResourcesStalled',
      expr: `${crs('Stalled', 'True')} > 0`,
      for: '5m',
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.kind }}: {{ $value }} CRs Stalled',
        description: `Some {{ $labels.kind }} CRs have been Stalled for 5 minutes: they cannot progress without a change from someone. ${howTo}`,
      },
    },
    {
      alert: 'AppKindReconcileErrors',
      expr: `sum by (controller) (rate(controller_runtime_reconcile_errors_total{${sel}}[5m])) / sum by (controller) (rate(controller_runtime_reconcile_total{${sel}}[5m])) > 0.1`,
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.controller }}: {{ $value | humanizePercentage }} of reconciles fail',
        description: `More than 10% of the reconciles of {{ $labels.controller }} CRs have failed for 15 minutes. ${howTo}`,
      },
    },
    {
      alert: 'AppKindReconcileSlow',
      expr: `histogram_quantile(0.99, sum by (controller, le) (rate(controller_runtime_reconcile_time_seconds_bucket{${sel}}[5m]))) > 10`,
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.controller }}: reconciles take {{ $value | humanizeDuration }} (p99)',
        description: 'The 99th percentile of reconcile time has been above 10 s for 15 minutes: the API server answers slowly, or throttles the operator.',
      },
    },
    {
      alert: 'AppKindWorkqueueBacklog',
      expr: `max by (name) (workqueue_depth{${sel}}) > 100`,
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Work queue {{ $labels.name }} holds {{ $value }} CRs',
        description: `More than 100 CRs have waited for a reconcile for 15 minutes: changes reach the cluster late. Raise APPKIND_WORKERS of ${name}, or look for slow reconciles.`,
      },
    },
    {
      alert: 'AppKindWorkqueueLatency',
      expr: `histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{${sel}}[5m]))) > 60`,
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Work queue {{ $labels.name }}: CRs wait {{ $value | humanizeDuration }} for a worker (p99)',
        description: `CRs have waited more than a minute between a change and its reconcile for 15 minutes (a failure's backoff not counted). Raise APPKIND_WORKERS of ${name}, or look for slow reconciles.`,
      },
    },
    {
      alert: 'AppKindNoLeader',
      expr: `max(leader_election_master_status{${sel}}) < 1`,
      for: '5m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'No appkind operator replica holds the lease',
        description: `Replicas of ${name} run, none has led for 5 minutes: no CR is reconciled. See the replicas' logs and the Lease ${name} in their namespace.`,
      },
    },
    {
      alert: 'AppKindLeaderChanges',
      expr: `sum(changes(leader_election_master_status{${sel}}[1h])) > 3`,
      for: '0m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'The appkind operator changed leader {{ $value }} times in an hour',
        description: `A replica of ${name} that loses its lease exits; frequent changes mean replicas restart or cannot renew the lease (API server latency, CPU starvation). See kubectl get pods -n <namespace> and their logs.`,
      },
    },
    {
      alert: 'AppKindKindsRefused',
      expr: `min(appkind_config_last_reload_successful{${sel}}) == 0`,
      for: '5m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'An edit of the kinds configuration was refused',
        description: `The ConfigMap ${name}-kinds holds kinds the operator refuses; it still serves the kinds before the edit. kubectl describe configmap -n <namespace> ${name}-kinds shows why (an InvalidKinds Event).`,
      },
    },
    {
      alert: 'AppKindAPIThrottled',
      expr: `sum(rate(appkind_rest_client_throttled_total{${sel}}[5m])) > 0`,
      for: '15m',
      labels: { severity: 'info' },
      annotations: {
        summary: 'The API server throttles the appkind operator',
        description: 'The API server has answered requests of the operator with 429 (or 503 with Retry-After) for 15 minutes; each is retried after a backoff, so reconciles are late.',
      },
    },
  ];
}

/** The panels, by row: the CRs, the reconciles, the queue and leader, the process. */
function panels(sel: string): Panel[] {
  return [
    { title: 'CRs by kind', type: 'stat', targets: [{ expr: `max by (kind) (appkind_resources{${sel}})`, legend: '{{kind}}' }] },
    {
      title: 'CRs not Ready',
      type: 'stat',
      targets: [
        {
          expr: `max by (kind) (appkind_resources{${sel}}) - max by (kind) (appkind_resource_conditions{${sel},type="Ready",status="True"})`,
          legend: '{{kind}}',
        },
      ],
    },
    {
      title: 'CRs by condition (status True)',
      type: 'timeseries',
      targets: [{ expr: `max by (kind, type) (appkind_resource_conditions{${sel},status="True"})`, legend: '{{kind}} {{type}}' }],
    },
    {
      title: 'Reconciles per second by result',
      type: 'timeseries',
      unit: 'ops',
      targets: [{ expr: `sum by (controller, result) (rate(controller_runtime_reconcile_total{${sel}}[5m]))`, legend: '{{controller}} {{result}}' }],
    },
    {
      title: 'Reconcile errors per second',
      type: 'timeseries',
      unit: 'ops',
      targets: [{ expr: `sum by (controller) (rate(controller_runtime_reconcile_errors_total{${sel}}[5m]))`, legend: '{{controller}}' }],
    },
    {
      title: 'Reconcile time',
      type: 'timeseries',
      unit: 's',
      targets: [0.5, 0.99].map((q) => ({
        expr: `histogram_quantile(${q}, sum by (controller, le) (rate(controller_runtime_reconcile_time_seconds_bucket{${sel}}[5m])))`,
        legend: `{{controller}} p${q * 100}`,
      })),
    },
    {
      title: 'Work queue depth and retries',
      type: 'timeseries',
      targets: [
        { expr: `max by (name) (workqueue_depth{${sel}})`, legend: '{{name}} depth' },
        { expr: `sum by (name) (rate(workqueue_retries_total{${sel}}[5m]))`, legend: '{{name}} retries/s' },
      ],
    },
    {
      title: 'Work queue wait (add to worker)',
      type: 'timeseries',
      unit: 's',
      targets: [0.5, 0.99].map((q) => ({
        expr: `histogram_quantile(${q}, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{${sel}}[5m])))`,
        legend: `{{name}} p${q * 100}`,
      })),
    },
    {
      title: 'Leader',
      type: 'timeseries',
      targets: [{ expr: `leader_election_master_status{${sel}}`, legend: '{{pod}}' }],
    },
    {
      title: 'API requests per second by code',
      type: 'timeseries',
      unit: 'reqps',
      targets: [
        { expr: `sum by (method, code) (rate(rest_client_requests_total{${sel}}[5m]))`, legend: '{{method}} {{code}}' },
        { expr: `sum by (method) (rate(appkind_rest_client_throttled_total{${sel}}[5m]))`, legend: '{{method}} throttled' },
      ],
    },
    {
      title: 'Kinds configuration valid',
      type: 'stat',
      targets: [{ expr: `min(appkind_config_last_reload_successful{${sel}})`, legend: 'valid' }],
    },
    {
      title: 'Memory (RSS)',
      type: 'timeseries',
      unit: 'bytes',
      targets: [{ expr: `process_resident_memory_bytes{${sel}}`, legend: '{{pod}}' }],
    },
    {
      title: 'CPU and event loop lag',
      type: 'timeseries',
      targets: [
        { expr: `rate(process_cpu_seconds_total{${sel}}[5m])`, legend: '{{pod}} CPU cores' },
        { expr: `nodejs_eventloop_lag_p99_seconds{${sel}}`, legend: '{{pod}} event loop lag p99 (s)' },
      ],
    },
  ];
}

/** A Grafana dashboard (schema 39) of the panels, two a row, on a Prometheus data source chosen at view time. */
function dashboard(sel: string, name: string): object {
  const datasource = { type: 'prometheus', uid: '${datasource}' };
  return {
    title: `appkind operator (${name})`,
    uid: `appkind-${name}`.slice(0, 40),
    tags: ['appkind', 'operator'],
    timezone: 'browser',
    schemaVersion: 39,
    time: { from: 'now-6h', to: 'now' },
    refresh: '1m',
    templating: {
      list: [{ name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {}, hide: 0 }],
    },
    panels: panels(sel).map((p, i) => ({
      id: i + 1,
      title: p.title,
      type: p.type,
      datasource,
      gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: Math.floor(i / 2) * 8 },
      fieldConfig: { defaults: p.unit ? { unit: p.unit } : {}, overrides: [] },
      targets: p.targets.map((t, j) => ({ refId: String.fromCharCode(65 + j), datasource, expr: t.expr, legendFormat: t.legend })),
    })),
  };
}
