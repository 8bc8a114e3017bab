// The operator's settings, one row each: environment variable, default, range and help. OperatorBundle
// writes its env from here and the operator reads (operator/settings.ts) and documents (operator/flags.ts)
// the same rows. Internal: index.ts does not export it, so it is no part of the jsii API.

/** One setting of the operator process. */
export interface SettingRow {
  /** The environment variable. */
  readonly env: string;
  /** What it sets, for the usage text. */
  readonly help: string;
  /** The command-line flag that sets it too, if any. */
  readonly flag?: string;
}

/** An integer from `min` to `max`. */
export interface IntRow extends SettingRow {
  readonly default: number;
  readonly min: number;
  readonly max: number;
}

/** true or false. */
export interface BoolRow extends SettingRow {
  readonly default: boolean;
}

/** One of `values`. */
export interface ChoiceRow extends SettingRow {
  readonly default: string;
  readonly values: readonly string[];
}

/** Free text; unset when it has no default. */
export interface TextRow extends SettingRow {
  readonly default?: string;
}

const int = (env: string, dflt: number, min: number, max: number, help: string, flag?: string): IntRow => ({ env, default: dflt, min, max, help, flag });
const bool = (env: string, dflt: boolean, help: string, flag?: string): BoolRow => ({ env, default: dflt, help, flag });
const text = (env: string, dflt: string | undefined, help: string, flag?: string): TextRow => ({ env, default: dflt, help, flag });

/** The operator's settings; OperatorSettings (operator/settings.ts) says what each means and why its default is what it is. */
export const OPERATOR_SETTINGS = {
  config: text('APPKIND_CONFIG', undefined, 'YAML/JSON file listing the kinds', 'config'),
  configMap: text('APPKIND_CONFIG_MAP', undefined, 'the ConfigMap the kinds file is mounted from (namespace/name, or a name in the pod namespace)'),
  kindGroups: text('APPKIND_KIND_GROUPS', undefined, 'API groups AppKinds may define kinds in (comma-separated; default none: no CRD is made)'),
  appKindSelector: text(
    'APPKIND_APPKIND_SELECTOR',
    undefined,
    'label selector of the AppKinds to serve, e.g. team=payments (default every AppKind; none: no AppKind, the kinds file only)',
    'appkind-selector',
  ),
  namespaces: text('APPKIND_WATCH_NAMESPACE', undefined, 'namespace to watch (repeat or comma-separate; default all)', 'namespace'),
  workers: int('APPKIND_WORKERS', 8, 1, 64, 'parallel reconciles', 'workers'),
  statusIntervalMs: int('APPKIND_STATUS_INTERVAL_MS', 60_000, 0, 3_600_000, 'shortest time between two progress writes of one status (longer when many CRs roll at once); 0 writes every change'),
  fieldManager: text('APPKIND_FIELD_MANAGER', 'appkind-operator', 'server-side apply field manager', 'field-manager'),
  logLevel: { env: 'APPKIND_LOG_LEVEL', default: 'info', values: ['debug', 'info', 'warn', 'error'], help: 'debug, info, warn or error', flag: 'log-level' } as ChoiceRow,
  // kubebuilder's secure metrics port; the probes stay on their own plain HTTP port.
  metricsPort: int('APPKIND_METRICS_PORT', 8443, -1, 65535, 'port for /metrics (0 any, -1 off)', 'metrics-port'),
  healthPort: int('APPKIND_HEALTH_PORT', 8081, -1, 65535, 'port for /healthz and /readyz, plain HTTP (0 any, -1 off)', 'health-port'),
  metricsSecure: bool('APPKIND_METRICS_SECURE', true, 'false: plain HTTP /metrics without authentication (true: HTTPS, TokenReview + SubjectAccessReview)', 'metrics-secure'),
  metricsCertDir: text('APPKIND_METRICS_CERT_DIR', undefined, 'folder with tls.crt and tls.key for /metrics (default a self-signed certificate)', 'metrics-cert-dir'),
  leaderElect: bool('APPKIND_LEADER_ELECT', false, 'true to elect a leader on a Lease', 'leader-elect'),
  leaseName: text('APPKIND_LEASE_NAME', 'appkind-operator', 'name of the leader election Lease'),
  leaseNamespace: text('APPKIND_LEASE_NAMESPACE', undefined, 'namespace of the Lease (default APPKIND_POD_NAMESPACE, else the in-cluster namespace, else default)'),
  leaseDurationSeconds: int('APPKIND_LEASE_DURATION_SECONDS', 15, 1, 3600, 'how long a standby waits for a silent leader'),
  renewDeadlineSeconds: int('APPKIND_RENEW_DEADLINE_SECONDS', 10, 1, 3600, 'the leader steps down when it could not renew for this long'),
  retryPeriodSeconds: int('APPKIND_RETRY_PERIOD_SECONDS', 2, 1, 3600, 'time between lease attempts'),
  identity: text('APPKIND_POD_NAME', undefined, 'identity in the Lease (default hostname_pid)'),
  podNamespace: text('APPKIND_POD_NAMESPACE', undefined, 'the namespace the operator runs in'),
  shutdownGraceSeconds: int('APPKIND_SHUTDOWN_GRACE_SECONDS', 20, 0, 3600, 'longest wait for in-flight reconciles on SIGTERM'),
  watchStaleSeconds: int('APPKIND_WATCH_STALE_SECONDS', 300, 5, 86400, 'a watch silent for this long is restarted'),
  degradedRetrySeconds: int('APPKIND_DEGRADED_RETRY_SECONDS', 60, 1, 3600, 'longest wait between two retries of a Degraded CR'),
};
