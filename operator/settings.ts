// The operator's settings, read from the environment by the rows of the settings table
// (cdk8s-appkind's operator-settings.ts), each checked and named in the error when it is wrong.
import { AppKind } from 'cdk8s-appkind';
import { labelSelectorProblem, NO_APPKINDS, servesNoAppKinds } from 'cdk8s-appkind/build/label-selector.js';
import { BoolRow, ChoiceRow, IntRow, OPERATOR_SETTINGS, TextRow } from 'cdk8s-appkind/build/operator-settings.js';
import { kindGroups, loadAppKinds, watchNamespaces } from './kinds/sources.js';
import { ConfigError } from './kinds/validate.js';
import type { LogLevel } from './runtime/log.js';
import { withPrefixedSettings } from './settings-env.js';

/** Everything the operator process is configured with; read from the environment (flags override). */
export interface OperatorSettings {
  /** App kinds this process serves. */
  readonly kinds: AppKind[];
  /** Namespaces to watch; empty means all namespaces. Env APPKIND_WATCH_NAMESPACE (comma-separated). */
  readonly namespaces: string[];
  /** API groups AppKinds may define kinds in (the install's kindGroups); empty means none. Env APPKIND_KIND_GROUPS (comma-separated). */
  readonly kindGroups: string[];
  /**
   * Whether AppKind objects are served at all. Env APPKIND_APPKIND_SELECTOR=none turns them off: the
   * operator serves the kinds file alone and neither lists nor writes AppKinds. @default true
   */
  readonly serveAppKinds: boolean;
  /**
   * The label selector of the AppKinds served: only those are listed, watched and written (status,
   * finalizer, Events), so operators with disjoint selectors share a cluster. Env
   * APPKIND_APPKIND_SELECTOR. @default undefined: every AppKind
   */
  readonly appKindSelector?: string;
  /**
   * Parallel reconciles. Env APPKIND_WORKERS. @default 8 (a reconcile mostly waits on the API server; at
   * 1000 CRs two workers left keys queued behind each other's round trips; see the figures in docs/benchmark.md)
   */
  readonly workers: number;
  /**
   * Shortest time between two status writes of one CR while only pod counts change, and how long
   * the first status of a new CR or of an edit (a new generation) waits for its rollout to complete
   * (then one write says Ready); Degraded, refusals, a new NodePort and Ready flips of the same
   * generation are written at once.
   * Env APPKIND_STATUS_INTERVAL_MS; 0 writes every change. @default 60000 (rollouts at N=300-1000 on
   * 2 cores take longer than 30 s: with 30 s every CR wrote progress every 30 s, which was most
   * of the operator's load on the API server; see the figures in docs/benchmark.md)
   */
  readonly statusIntervalMs: number;
  /** Server-side apply field manager. Env APPKIND_FIELD_MANAGER. @default "appkind-operator" */
  readonly fieldManager: string;
  /** Env APPKIND_LOG_LEVEL. @default "info" */
  readonly logLevel: LogLevel;
  /** Port for /metrics. Env APPKIND_METRICS_PORT; 0 picks a free port, -1 disables. @default 8443 */
  readonly metricsPort: number;
  /** Port for /healthz and /readyz (plain HTTP). Env APPKIND_HEALTH_PORT; 0 picks a free port, -1 disables. @default 8081 */
  readonly healthPort: number;
  /**
   * /metrics over HTTPS, each scrape's bearer token checked with a TokenReview and its user with a
   * SubjectAccessReview (get on the non-resource URL /metrics), as kubebuilder v4 scaffolds it. Env
   * APPKIND_METRICS_SECURE; false serves plain HTTP with no authentication, for local runs on loopback
   * (the bench) only. @default true
   */
  readonly metricsSecure: boolean;
  /**
   * Folder holding the metrics server's `tls.crt` and `tls.key` (a mounted kubernetes.io/tls Secret),
   * read again when they change. Env APPKIND_METRICS_CERT_DIR. @default none: a self-signed
   * certificate is made at start
   */
  readonly metricsCertDir?: string;
  /** Leader election on a Lease. Env APPKIND_LEADER_ELECT. @default false (true in the install bundle) */
  readonly leaderElect: boolean;
  /** Lease name. Env APPKIND_LEASE_NAME. @default "appkind-operator" */
  readonly leaseName: string;
  /** Lease namespace. Env APPKIND_LEASE_NAMESPACE, else APPKIND_POD_NAMESPACE, else the in-cluster namespace, else "default". */
  readonly leaseNamespace?: string;
  /** Env APPKIND_LEASE_DURATION_SECONDS. @default 15 */
  readonly leaseDurationSeconds: number;
  /** Env APPKIND_RENEW_DEADLINE_SECONDS. @default 10 */
  readonly renewDeadlineSeconds: number;
  /** Env APPKIND_RETRY_PERIOD_SECONDS. @default 2 */
  readonly retryPeriodSeconds: number;
  /** Identity used in the Lease. Env APPKIND_POD_NAME, else hostname_pid. */
  readonly identity?: string;
  /** Longest wait for in-flight reconciles on SIGTERM. Env APPKIND_SHUTDOWN_GRACE_SECONDS. @default 20 */
  readonly shutdownGraceSeconds: number;
  /** A watch silent for this long is restarted (relist). Env APPKIND_WATCH_STALE_SECONDS. @default 300 */
  readonly watchStaleSeconds: number;
  /**
   * Longest wait between two retries of a failing (Degraded) CR: retries back off from 5 ms,
   * doubling, up to this. It bounds how long a CR stays Degraded after a cause that no watched
   * object's event reports is gone: a NodePort held by a Service outside the watched namespaces, or
   * left allocated by an API server cut off mid-write (its repair loop frees such a port at its third
   * run, 6-9 minutes later). Env APPKIND_DEGRADED_RETRY_SECONDS. @default 60 (client-go's and
   * controller-runtime's default cap, 1000 s, left such a CR Degraded up to 16 minutes after the port
   * was free; each Degraded CR costs at most one reconcile a minute, and all retries together are
   * held to 10 a second)
   */
  readonly degradedRetrySeconds: number;
  /** The kinds file (APPKIND_CONFIG), read again whenever it changes; undefined when the kinds come from elsewhere. */
  readonly configFile?: string;
  /**
   * The ConfigMap the kinds file is mounted from (env APPKIND_CONFIG_MAP, `namespace/name`, or a name
   * in the operator's namespace): a refused edit is also reported as a Warning Event on it.
   */
  readonly configMap?: { readonly namespace: string; readonly name: string };
  /** One warning for each deprecated unprefixed variable that is set (settings-env.ts). */
  readonly deprecations: string[];
}

const S = OPERATOR_SETTINGS;
export const DEFAULT_WORKERS = S.workers.default;
export const DEFAULT_STATUS_INTERVAL_MS = S.statusIntervalMs.default;
export const DEFAULT_DEGRADED_RETRY_SECONDS = S.degradedRetrySeconds.default;
export const DEFAULT_METRICS_PORT = S.metricsPort.default;
export const DEFAULT_HEALTH_PORT = S.healthPort.default;

function intSetting(env: NodeJS.ProcessEnv, { env: name, default: fallback, min, max }: IntRow): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name}="${raw}" is not an integer from ${min} to ${max}; fix or unset ${name}`);
  }
  return n;
}

function boolSetting(env: NodeJS.ProcessEnv, { env: name, default: fallback }: BoolRow): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name}="${raw}" is not a boolean; use true or false`);
}

function choiceSetting(env: NodeJS.ProcessEnv, { env: name, default: fallback, values }: ChoiceRow): string {
  const raw = env[name];
  const value = (raw || fallback).toLowerCase();
  if (!values.includes(value)) throw new ConfigError(`${name}="${raw}" is not one of ${values.join(', ')}`);
  return value;
}

function textSetting(env: NodeJS.ProcessEnv, { env: name, default: fallback }: TextRow): string | undefined {
  return env[name] || fallback;
}

/**
 * APPKIND_APPKIND_SELECTOR as written, checked: `none`, a label selector, or undefined (every AppKind).
 * `npx cdk8s synth` and `npm run release` write it into the bundle (appKindSelector).
 */
export function appKindSelector(env: NodeJS.ProcessEnv): string | undefined {
  const { env: name } = S.appKindSelector;
  const raw = textSetting(withPrefixedSettings(env).env, S.appKindSelector)?.trim();
  const problem = raw && !servesNoAppKinds(raw) ? labelSelectorProblem(raw) : undefined;
  if (problem) {
    throw new ConfigError(
      `${name}="${raw}" is not a label selector: ${problem}; write one such as team=payments or 'team in (a,b)', ${NO_APPKINDS} to serve no AppKind, or unset ${name} to serve every AppKind (OperatorBundle appKindSelector, Helm value appKindSelector)`,
    );
  }
  return raw || undefined;
}

function appKindSelection(env: NodeJS.ProcessEnv): Pick<OperatorSettings, 'serveAppKinds' | 'appKindSelector'> {
  const selector = appKindSelector(env);
  return servesNoAppKinds(selector) ? { serveAppKinds: false } : { serveAppKinds: true, appKindSelector: selector };
}

function configMapOf(raw: string | undefined, podNamespace: string | undefined): OperatorSettings['configMap'] {
  if (!raw) return undefined;
  const [namespace, name] = raw.includes('/') ? raw.split('/', 2) : [podNamespace, raw];
  if (!namespace || !name) {
    throw new ConfigError(`APPKIND_CONFIG_MAP="${raw}" names no namespace; write namespace/name, or set APPKIND_POD_NAMESPACE`);
  }
  return { namespace, name };
}

/** Reads the settings from the environment; throws ConfigError naming the variable on bad input. */
export function loadSettings(given: NodeJS.ProcessEnv = process.env): OperatorSettings {
  const { env, deprecations } = withPrefixedSettings(given);
  const settings: OperatorSettings = {
    kinds: loadAppKinds(env),
    namespaces: watchNamespaces(env),
    kindGroups: kindGroups(env),
    ...appKindSelection(env),
    workers: intSetting(env, S.workers),
    statusIntervalMs: intSetting(env, S.statusIntervalMs),
    fieldManager: textSetting(env, S.fieldManager)!,
    logLevel: choiceSetting(env, S.logLevel) as LogLevel,
    metricsPort: intSetting(env, S.metricsPort),
    healthPort: intSetting(env, S.healthPort),
    metricsSecure: boolSetting(env, S.metricsSecure),
    metricsCertDir: textSetting(env, S.metricsCertDir),
    leaderElect: boolSetting(env, S.leaderElect),
    leaseName: textSetting(env, S.leaseName)!,
    leaseNamespace: textSetting(env, S.leaseNamespace) ?? textSetting(env, S.podNamespace),
    leaseDurationSeconds: intSetting(env, S.leaseDurationSeconds),
    renewDeadlineSeconds: intSetting(env, S.renewDeadlineSeconds),
    retryPeriodSeconds: intSetting(env, S.retryPeriodSeconds),
    identity: textSetting(env, S.identity),
    shutdownGraceSeconds: intSetting(env, S.shutdownGraceSeconds),
    watchStaleSeconds: intSetting(env, S.watchStaleSeconds),
    degradedRetrySeconds: intSetting(env, S.degradedRetrySeconds),
    configFile: textSetting(env, S.config),
    configMap: configMapOf(textSetting(env, S.configMap), textSetting(env, S.podNamespace)),
    deprecations,
  };
  if (settings.metricsSecure && settings.metricsPort > 0 && settings.metricsPort === settings.healthPort) {
    throw new ConfigError(
      `APPKIND_METRICS_PORT and APPKIND_HEALTH_PORT are both ${settings.metricsPort}: /metrics is HTTPS and the probes plain HTTP, so give them different ports (or set APPKIND_METRICS_SECURE=false for plain HTTP /metrics on a local run)`,
    );
  }
  if (settings.metricsCertDir && !settings.metricsSecure) {
    throw new ConfigError('APPKIND_METRICS_CERT_DIR is set but APPKIND_METRICS_SECURE=false serves plain HTTP; unset one of them');
  }
  if (settings.renewDeadlineSeconds >= settings.leaseDurationSeconds) {
    throw new ConfigError(
      `APPKIND_RENEW_DEADLINE_SECONDS (${settings.renewDeadlineSeconds}) must be less than APPKIND_LEASE_DURATION_SECONDS (${settings.leaseDurationSeconds})`,
    );
  }
  return settings;
}

export { PREFIXED_SETTINGS, prefixed, SETTINGS_PREFIX, withPrefixedSettings } from './settings-env.js';
