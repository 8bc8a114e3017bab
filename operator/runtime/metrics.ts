// Prometheus metrics named as controller-runtime names them, so dashboards and alerts written for
// Go operators work for this one unchanged.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { QueueHooks } from './queue.js';

/** How one reconcile ended, as controller-runtime's `result` label. */
export type ReconcileResult = 'success' | 'error' | 'requeue';

const RESULTS: readonly ReconcileResult[] = ['success', 'error', 'requeue'];

/** A served kind's CRs as its cache holds them, read at each scrape. */
export interface KindResources {
  readonly kind: string;
  readonly resources: Iterable<{ readonly status?: { readonly conditions?: readonly { type: string; status: string }[] } }>;
}

/** A kind's rollout as the metrics count it (the reconciler's RolloutSummary). */
export interface KindRolloutCounts {
  readonly kind: string;
  readonly summary: {
    readonly updated: number;
    readonly inFlight: number;
    readonly waiting: number;
    readonly failed: number;
    readonly stopped?: string;
  };
}

/** One series of appkind_resource_conditions: how many CRs of `kind` have condition `type` at `status`. */
export interface ConditionCount {
  readonly kind: string;
  readonly type: string;
  readonly status: string;
  readonly count: number;
}

const CONDITION_STATUSES = ['True', 'False', 'Unknown'];

/**
 * CRs by kind and by condition type and status. Every kind has all three statuses of `Ready` and of
 * each type some CR carries, zeros included, so "CRs not Ready" is a subtraction that always matches.
 */
export function conditionCounts(kinds: Iterable<KindResources>): { totals: Map<string, number>; conditions: ConditionCount[] } {
  const totals = new Map<string, number>();
  const conditions: ConditionCount[] = [];
  for (const { kind, resources } of kinds) {
    const counts = new Map<string, Map<string, number>>([['Ready', new Map()]]);
    let total = 0;
    for (const cr of resources) {
      total++;
      for (const c of cr.status?.conditions ?? []) {
        const byStatus = counts.get(c.type) ?? counts.set(c.type, new Map()).get(c.type)!;
        byStatus.set(c.status, (byStatus.get(c.status) ?? 0) + 1);
      }
    }
    totals.set(kind, total);
    for (const [type, byStatus] of counts) {
      const statuses = new Set([...CONDITION_STATUSES, ...byStatus.keys()]);
      for (const status of statuses) conditions.push({ kind, type, status, count: byStatus.get(status) ?? 0 });
    }
  }
  return { totals, conditions };
}

/** controller-runtime's reconcile_time_seconds buckets (pkg/internal/controller/metrics). */
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5,
  4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

/** The operator's metrics on a private registry (never the prom-client global one). */
export class OperatorMetrics {
  /** Registry holding every metric below plus the default process metrics; serve it on /metrics. */
  readonly registry = new Registry();

  private readonly reconcileTotal = new Counter({
    name: 'controller_runtime_reconcile_total',
    help: 'Total number of reconciliations per controller',
    labelNames: ['controller', 'result'] as const,
    registers: [this.registry],
  });
  private readonly reconcileErrors = new Counter({
    name: 'controller_runtime_reconcile_errors_total',
    help: 'Total number of reconciliation errors per controller',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  });
  private readonly reconcileTime = new Histogram({
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Length of time per reconciliation per controller',
    labelNames: ['controller'] as const,
    buckets: RECONCILE_BUCKETS,
    registers: [this.registry],
  });
  private readonly depth = new Gauge({
    name: 'workqueue_depth',
    help: 'Current depth of workqueue',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  private readonly queueDuration = new Histogram({
    name: 'workqueue_queue_duration_seconds',
    help: 'How long in seconds an item stays in workqueue before being requested',
    labelNames: ['name'] as const,
    // client-go's workqueue buckets: 10 ns to 1000 s, by tens.
    buckets: [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000],
    registers: [this.registry],
  });
  private readonly retries = new Counter({
    name: 'workqueue_retries_total',
    help: 'Total number of retries handled by workqueue',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  private readonly requests = new Counter({
    name: 'rest_client_requests_total',
    help: 'Number of HTTP requests to the API server, partitioned by status code and method',
    labelNames: ['code', 'method'] as const,
    registers: [this.registry],
  });
  private readonly throttledTotal = new Counter({
    name: 'appkind_rest_client_throttled_total',
    help: 'API requests the server throttled (429, or 503 with Retry-After), by method (WATCH for a watch); each is sent again after a backoff of at least its Retry-After',
    labelNames: ['code', 'method'] as const,
    registers: [this.registry],
  });
  private readonly leaderStatus = new Gauge({
    name: 'leader_election_master_status',
    help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  private readonly configReload = new Gauge({
    name: 'appkind_config_last_reload_successful',
    help: 'Whether the last read of the kinds configuration (APPKIND_CONFIG) was valid: 1 served, 0 refused (the kinds before it are still served)',
    registers: [this.registry],
  });

  /** What the resource gauges count at each scrape (countResources); none until it is given. */
  private resourcesSource: () => Iterable<KindResources> = () => [];
  private readonly resources = new Gauge({
    name: 'appkind_resources',
    help: "Custom resources of each served kind in the operator's cache",
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly resourceConditions = new Gauge({
    name: 'appkind_resource_conditions',
    help: 'Custom resources of each served kind by status condition type and status (True, False, Unknown); a CR with no status yet counts in appkind_resources only',
    labelNames: ['kind', 'type', 'status'] as const,
    registers: [this.registry],
  });

  /** What the rollout gauges show at each scrape (countRollouts); none until it is given. */
  private rolloutsSource: () => Iterable<KindRolloutCounts> = () => [];
  private readonly rolloutApps = new Gauge({
    name: 'appkind_kind_rollout_apps',
    help: "Apps of each served kind by where they stand in the rollout of the kind's current settings: updated (at the new pod template), in_flight, waiting, failed",
    labelNames: ['kind', 'state'] as const,
    registers: [this.registry],
  });
  private readonly rolloutStopped = new Gauge({
    name: 'appkind_kind_rollout_stopped',
    help: "1 when the rollout of a kind's current settings stopped at a failing wave (the kind's next change starts a new one), else 0",
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  /** @param opts.defaultMetrics process metrics (CPU, memory, event loop lag) @default true */
  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Counts the served kinds' CRs at each scrape, from `source` (the caches): per-kind gauges, never a
   * series per CR, so their number stays that of the kinds whatever the number of CRs.
   */
  countResources(source: () => Iterable<KindResources>): void {
    this.resourcesSource = source;
  }

  /** Shows each kind's rollout at each scrape, from `source` (the reconciler's memory): per-kind gauges. */
  countRollouts(source: () => Iterable<KindRolloutCounts>): void {
    this.rolloutsSource = source;
  }

  /** Makes a controller's series exist at zero, so a rate() works before its first reconcile. */
  controller(kind: string): void {
    for (const result of RESULTS) this.reconcileTotal.inc({ controller: kind, result }, 0);
    this.reconcileErrors.inc({ controller: kind }, 0);
    this.retries.inc({ name: kind }, 0);
    this.depth.set({ name: kind }, 0);
  }

  /** One reconcile of `kind` ended with `result` after `seconds`. */
  reconcile(kind: string, result: ReconcileResult, seconds: number): void {
    this.reconcileTotal.inc({ controller: kind, result });
    if (result === 'error') this.reconcileErrors.inc({ controller: kind });
    this.reconcileTime.observe({ controller: kind }, seconds);
  }

  /** The queue `name` now holds `n` keys waiting for a worker. */
  queueDepth(name: string, n: number): void {
    this.depth.set({ name }, n);
  }

  /** A worker of the queue `name` took a key that had waited `seconds`. */
  queueWait(name: string, seconds: number): void {
    this.queueDuration.observe({ name }, seconds);
  }

  /** The queue `name` scheduled a retry after a failure. */
  retry(name: string): void {
    this.retries.inc({ name });
  }

  /** One API request answered with HTTP `code` (a number, or e.g. "<error>" when no answer came). */
  apiRequest(method: string, code: number | string): void {
    this.requests.inc({ code: String(code), method: method.toUpperCase() });
  }

  /** The API server throttled one request (HTTP `code`: 429, or 503 with Retry-After). */
  throttled(method: string, code: number | string): void {
    this.throttledTotal.inc({ code: String(code), method: method.toUpperCase() });
  }

  /** Whether this process holds the Lease `name`. */
  leader(name: string, isLeader: boolean): void {
    this.leaderStatus.set({ name }, isLeader ? 1 : 0);
  }

  /** Whether the last read of the kinds configuration was valid (and is served). */
  configReloaded(valid: boolean): void {
    this.configReload.set(valid ? 1 : 0);
  }

  /** The exposition text (Prometheus text format) and its content type. */
  async expose(): Promise<{ contentType: string; body: string }> {
    this.collectResources();
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private collectResources(): void {
    const { totals, conditions } = conditionCounts(this.resourcesSource());
    // Reset first: a kind no longer served, or a condition no CR carries now, leaves no stale series.
    this.resources.reset();
    this.resourceConditions.reset();
    for (const [kind, n] of totals) this.resources.set({ kind }, n);
    for (const { kind, type, status, count } of conditions) this.resourceConditions.set({ kind, type, status }, count);
    this.rolloutApps.reset();
    this.rolloutStopped.reset();
    for (const { kind, summary } of this.rolloutsSource()) {
      const states = { updated: summary.updated, in_flight: summary.inFlight, waiting: summary.waiting, failed: summary.failed };
      for (const [state, n] of Object.entries(states)) this.rolloutApps.set({ kind, state }, n);
      this.rolloutStopped.set({ kind }, summary.stopped ? 1 : 0);
    }
  }
}

/**
 * Queue hooks that feed the metrics of the queue `name`. For a queue per kind leave `controllerOf`
 * out (the name is the kind); for one queue shared by all kinds pass how a key names its kind.
 */
export function queueHooks(metrics: OperatorMetrics, name: string, controllerOf: (key: string) => string = () => name): QueueHooks {
  metrics.controller(name);
  return {
    onDepth: (n) => metrics.queueDepth(name, n),
    onRetry: () => metrics.retry(name),
    onWait: (_key, seconds) => metrics.queueWait(name, seconds),
    onResult: (key, result, seconds) => metrics.reconcile(controllerOf(key), result, seconds),
  };
}
