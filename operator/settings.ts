import { AppKind } from 'cdk8s-appkind';
import { ConfigError, loadAppKinds, watchNamespaces } from './kinds/config.js';
import type { LogLevel } from './runtime/log.js';

/** Everything the operator process is configured with; read from the environment (flags override). */
export interface OperatorSettings {
  /** App kinds this process serves. */
  readonly kinds: AppKind[];
  /** Namespaces to watch; empty means all namespaces. Env WATCH_NAMESPACE (comma-separated). */
  readonly namespaces: string[];
  /**
   * Parallel reconciles. Env WORKERS. @default 8 (a reconcile mostly waits on the API server; at
   * 1000 CRs two workers left keys queued behind each other's round trips; see the figures in docs/benchmark.md)
   */
  readonly workers: number;
  /**
   * Shortest time between two status writes of one CR while only pod counts change, and how long
   * the first status of a new CR or of an edit (a new generation) waits for its rollout to complete
   * (then one write says Ready); Degraded, refusals, a new NodePort and Ready flips of the same
   * generation are written at once.
   * Env STATUS_INTERVAL_MS; 0 writes every change. @default 60000 (rollouts at N=300-1000 on
   * 2 cores take longer than 30 s: with 30 s every CR wrote progress every 30 s, which was most
   * of the operator's load on the API server; see the figures in docs/benchmark.md)
   */
  readonly statusIntervalMs: number;
  /** Server-side apply field manager. Env FIELD_MANAGER. @default "appkind-operator" */
  readonly fieldManager: string;
  /** Env LOG_LEVEL. @default "info" */
  readonly logLevel: LogLevel;
  /** Port for /metrics. Env METRICS_PORT; 0 picks a free port, -1 disables. @default 8080 */
  readonly metricsPort: number;
  /** Port for /healthz and /readyz. Env HEALTH_PORT; 0 picks a free port, -1 disables. @default 8081 */
  readonly healthPort: number;
  /** Leader election on a Lease. Env LEADER_ELECT. @default false (true in the install bundle) */
  readonly leaderElect: boolean;
  /** Lease name. Env LEASE_NAME. @default "appkind-operator" */
  readonly leaseName: string;
  /** Lease namespace. Env LEASE_NAMESPACE, else POD_NAMESPACE, else the in-cluster namespace, else "default". */
  readonly leaseNamespace?: string;
  /** Env LEASE_DURATION_SECONDS. @default 15 */
  readonly leaseDurationSeconds: number;
  /** Env RENEW_DEADLINE_SECONDS. @default 10 */
  readonly renewDeadlineSeconds: number;
  /** Env RETRY_PERIOD_SECONDS. @default 2 */
  readonly retryPeriodSeconds: number;
  /** Identity used in the Lease. Env POD_NAME, else hostname_pid. */
  readonly identity?: string;
  /** Longest wait for in-flight reconciles on SIGTERM. Env SHUTDOWN_GRACE_SECONDS. @default 20 */
  readonly shutdownGraceSeconds: number;
  /** A watch silent for this long is restarted (relist). Env WATCH_STALE_SECONDS. @default 300 */
  readonly watchStaleSeconds: number;
  /**
   * Longest wait between two retries of a failing (Degraded) CR: retries back off from 5 ms,
   * doubling, up to this. It bounds how long a CR stays Degraded after a cause that no watched
   * object's event reports is gone: a NodePort held by a Service outside the watched namespaces, or
   * left allocated by an API server cut off mid-write (its repair loop frees such a port at its third
   * run, 6-9 minutes later). Env DEGRADED_RETRY_SECONDS. @default 60 (client-go's and
   * controller-runtime's default cap, 1000 s, left such a CR Degraded up to 16 minutes after the port
   * was free; each Degraded CR costs at most one reconcile a minute, and all retries together are
   * held to 10 a second)
   */
  readonly degradedRetrySeconds: number;
}

export const DEFAULT_WORKERS = 8;
export const DEFAULT_STATUS_INTERVAL_MS = 60_000;
export const DEFAULT_DEGRADED_RETRY_SECONDS = 60;

function intSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name}="${raw}" is not an integer from ${min} to ${max}; fix or unset ${name}`);
  }
  return n;
}

function boolSetting(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name}="${raw}" is not a boolean; use true or false`);
}

/** Reads the settings from the environment; throws ConfigError naming the variable on bad input. */
export function loadSettings(env: NodeJS.ProcessEnv = process.env): OperatorSettings {
  const logLevel = (env.LOG_LEVEL || 'info').toLowerCase();
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL="${env.LOG_LEVEL}" is not one of debug, info, warn, error`);
  }
  const settings: OperatorSettings = {
    kinds: loadAppKinds(env),
    namespaces: watchNamespaces(env),
    workers: intSetting(env, 'WORKERS', DEFAULT_WORKERS, 1, 64),
    statusIntervalMs: intSetting(env, 'STATUS_INTERVAL_MS', DEFAULT_STATUS_INTERVAL_MS, 0, 3_600_000),
    fieldManager: env.FIELD_MANAGER || 'appkind-operator',
    logLevel: logLevel as LogLevel,
    metricsPort: intSetting(env, 'METRICS_PORT', 8080, -1, 65535),
    healthPort: intSetting(env, 'HEALTH_PORT', 8081, -1, 65535),
    leaderElect: boolSetting(env, 'LEADER_ELECT', false),
    leaseName: env.LEASE_NAME || 'appkind-operator',
    leaseNamespace: env.LEASE_NAMESPACE || env.POD_NAMESPACE || undefined,
    leaseDurationSeconds: intSetting(env, 'LEASE_DURATION_SECONDS', 15, 1, 3600),
    renewDeadlineSeconds: intSetting(env, 'RENEW_DEADLINE_SECONDS', 10, 1, 3600),
    retryPeriodSeconds: intSetting(env, 'RETRY_PERIOD_SECONDS', 2, 1, 3600),
    identity: env.POD_NAME || undefined,
    shutdownGraceSeconds: intSetting(env, 'SHUTDOWN_GRACE_SECONDS', 20, 0, 3600),
    watchStaleSeconds: intSetting(env, 'WATCH_STALE_SECONDS', 300, 5, 86400),
    degradedRetrySeconds: intSetting(env, 'DEGRADED_RETRY_SECONDS', DEFAULT_DEGRADED_RETRY_SECONDS, 1, 3600),
  };
  if (settings.renewDeadlineSeconds >= settings.leaseDurationSeconds) {
    throw new ConfigError(
      `RENEW_DEADLINE_SECONDS (${settings.renewDeadlineSeconds}) must be less than LEASE_DURATION_SECONDS (${settings.leaseDurationSeconds})`,
    );
  }
  return settings;
}
