// The app-kind operator of one process: its client, the kinds it serves (reloaded live), the
// reconciler's memory, and the controller's lifecycle (caches, leader election, workers, stop).
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { Controller } from '../runtime/controller.js';
import { EventRecorder } from '../runtime/events.js';
import { Expectations } from '../runtime/expectations.js';
import { KubeAccess } from '../runtime/kubeconfig.js';
import { LeaderElector, LeaderElectorOptions } from '../runtime/leader.js';
import { Logger } from '../runtime/log.js';
import { OperatorMetrics, queueHooks } from '../runtime/metrics.js';
import { refKey, refOf } from '../runtime/ref.js';
import { RestClient } from '../runtime/rest.js';
import { OperatorSettings } from '../settings.js';
import { AppEvents, AppObservers, AppWatches } from './app-events.js';
import { ReconcilerMemory } from './memory.js';
import { appKindController, crsOf } from './operator.js';
import { RenderCache } from './render-cache.js';
import { StatusPacer } from './status-pacer.js';
import type { RolloutSummary } from './waves.js';

/** Kinds by name that setKinds() started serving, stopped serving, or serves with new settings. */
export interface KindChanges {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
}

/** Starts, leads, reloads and stops the app-kind controller of one process. */
export class Manager {
  /** The one keep-alive client of the process: caches, reconciles, events and leader election share it. */
  readonly rest: RestClient;
  private readonly controller: Controller<AppWatches>;
  /** The kinds served now, by Kind; setKinds() changes them (the reconciler and the mappings read this same map). */
  private readonly kinds: Map<string, AppKind>;
  private elector?: LeaderElector;
  private readonly memory: ReconcilerMemory;
  private rolloutStopped?: (kind: string, reason: string) => void;
  /** Called when the workers start (at once, or on becoming leader): other controllers of the process start theirs. */
  private readonly onWorkersStarted: (() => void)[] = [];

  constructor(
    kc: KubeAccess,
    private readonly settings: OperatorSettings,
    private readonly log: Logger,
    private readonly metrics: OperatorMetrics,
    /** `userAgent`: the User-Agent of every request (default none). */
    client: { userAgent?: string } = {},
  ) {
    const kinds = (this.kinds = new Map(settings.kinds.map((k) => [k.kind, k])));
    const onThrottled = (method: string, code: number) => metrics.throttled(method, code);
    const rest = (this.rest = new RestClient(kc, (verb, code) => metrics.apiRequest(verb, code), {
      onThrottled,
      userAgent: client.userAgent,
    }));
    // The kind rollouts count a kind's CRs in its cache and wake the apps whose turn came through the queue.
    const memory = (this.memory = new ReconcilerMemory({
      total: (kind) => (this.controller.caches.crs.get(kind)?.informers ?? []).reduce((n, i) => n + i.size, 0),
      // Later, not inside the reconcile or the kind change that frees a turn: an idle worker may take a key at once.
      wake: (keys) => setImmediate(() => keys.forEach((key) => this.controller.queue.add(key))),
      stopped: (kind, reason) => {
        log.warn('kind rollout stopped', { kind, reason });
        this.rolloutStopped?.(kind, reason);
      },
    }));
    const expectations = new Expectations();
    const { fieldManager } = settings;
    this.controller = appKindController(
      { rest, log, namespaces: settings.namespaces, staleMs: settings.watchStaleSeconds * 1000, onThrottled },
      {
        kinds: settings.kinds,
        fieldManager,
        on: new AppEvents(kinds, memory.view, log),
        observe: new AppObservers(memory, expectations),
        memory,
        reconciler: {
          kinds,
          expectations,
          rest,
          events: new EventRecorder(rest, fieldManager, log),
          fieldManager,
          log,
          renders: new RenderCache(),
          pacer: new StatusPacer(settings.statusIntervalMs),
        },
        // Failing CRs back off up to DEGRADED_RETRY_SECONDS: a cause that ends without an event the
        // operator sees (a NodePort freed outside the watched namespaces) is noticed at the next retry.
        queue: { workers: settings.workers, maxDelayMs: settings.degradedRetrySeconds * 1000 },
        // One queue for all kinds; a key's first segment is its kind, the metrics' controller label.
        hooks: queueHooks(metrics, 'appkind', (key) => key.split('/')[0]!),
      },
    );
    metrics.countResources(() =>
      [...this.controller.caches.crs].map(([kind, cache]) => ({ kind, resources: cache.informers.flatMap((i) => i.list()) })),
    );
    metrics.countRollouts(() => [...this.kinds.values()].map((kind) => ({ kind: kind.kind, summary: this.rolloutSummary(kind.kind)! })));
  }

  /**
   * Serves `kinds` from now on (the kinds configuration was edited, and is valid): a new kind's CRs
   * are watched and reconciled once listed; a removed kind's CRs are no longer watched (they and
   * their children stay as they are); every CR of a kind whose settings changed is reconciled with
   * them. A kind whose group, version or plural changed is a removed kind plus a new one.
   */
  setKinds(kinds: AppKind[]): KindChanges {
    const next = new Map(kinds.map((k) => [k.kind, k]));
    const changes: KindChanges = { added: [], removed: [], changed: [] };
    const sameResource = (a: AppKind, b: AppKind) => AppKindCrd.apiVersionOf(a) === AppKindCrd.apiVersionOf(b) && a.plural === b.plural;
    for (const [name, old] of this.kinds) {
      const now = next.get(name);
      if (now && sameResource(old, now)) {
        if (JSON.stringify(old) !== JSON.stringify(now)) changes.changed.push(name);
        continue;
      }
      changes.removed.push(name);
      this.kinds.delete(name);
      this.memory.waves.kindRemoved(name);
      this.controller.removePrimary('crs', name);
    }
    for (const name of changes.changed) {
      // A new rollout of the kind: its apps roll in waves (waves.ts), each reconcile asking for a turn
      // with the new settings (served before the rollout starts, so no reconcile sees one without the other).
      const before = this.kinds.get(name)!;
      this.kinds.set(name, next.get(name)!);
      this.memory.waves.kindChanged(before, next.get(name)!);
      for (const informer of this.controller.caches.crs.get(name)?.informers ?? []) {
        for (const cr of informer.list()) this.controller.queue.add(refKey(refOf(name, cr)));
      }
    }
    for (const [name, kind] of next) {
      if (this.kinds.has(name)) continue;
      changes.added.push(name);
      this.kinds.set(name, kind);
      // Resolves once the kind's CRs are listed; until its CRD exists the list is retried (and /readyz says not ready).
      void this.controller.addPrimary('crs', crsOf(kind)).then(() => this.log.info('caches synced', { kinds: [name] }));
    }
    return changes;
  }

  /**
   * The rollout of the kind `kind` (a Kind name) to its current settings: apps at the new pod template,
   * in flight, waiting, failed, and why it stopped; undefined for a kind not served. What the kind's
   * status shows of it.
   */
  rolloutSummary(kind: string): RolloutSummary | undefined {
    const served = this.kinds.get(kind);
    return served && this.memory.waves.summary(served);
  }

  /** `fn` is told when a kind's rollout stops at a failing wave (run.ts records it on the kinds ConfigMap). */
  onRolloutStopped(fn: (kind: string, reason: string) => void): void {
    this.rolloutStopped = fn;
  }

  /**
   * Campaigns for the Lease from start() on: workers start on becoming leader, and only a leader within
   * its renew deadline writes (checked at each write).
   */
  electLeader(opts: Omit<LeaderElectorOptions, 'log'>): void {
    const elector = (this.elector = new LeaderElector(this.rest, { ...opts, log: this.log }));
    this.rest.fenceWrites(() => elector.mayWrite());
  }

  /**
   * Starts every watch and, once all caches hold their first list, the workers: at once without leader
   * election, else on becoming leader. `onLostLeadership` is called when the Lease is lost.
   */
  async start(onLostLeadership: () => void): Promise<void> {
    await this.startCaches();
    const { elector, metrics, settings, log } = this;
    if (!elector) {
      this.startWorkers();
      return;
    }
    metrics.leader(settings.leaseName, false);
    void elector.run({
      onStartedLeading: () => {
        metrics.leader(settings.leaseName, true);
        log.info('became leader', { lease: settings.leaseName });
        this.startWorkers();
      },
      onStoppedLeading: onLostLeadership,
      onNewLeader: (identity) => log.info('leader is', { identity }),
    });
  }

  /** Runs `fn` when the workers start (after start(): at once without leader election, else on becoming leader). */
  whenWorkersStart(fn: () => void): void {
    this.onWorkersStarted.push(fn);
  }

  /** The number of CRs of a served kind in the cache, or undefined when the kind is not served or not listed yet. */
  resourceCount(kind: string): number | undefined {
    const informers = this.controller.caches.crs.get(kind)?.informers;
    if (!informers || !informers.every((i) => i.hasSynced)) return undefined;
    return informers.reduce((n, i) => n + i.list().length, 0);
  }

  /** Why the CRs of a served kind cannot be listed (the API server's code and message), while they cannot. */
  listFailure(kind: string): { code: number; message: string } | undefined {
    return this.controller.caches.crs.get(kind)?.informers.find((i) => !i.hasSynced && i.lastFailure)?.lastFailure;
  }

  /** The work queue (its depth is logged at shutdown). */
  get queue() {
    return this.controller.queue;
  }

  /** Reconciles running right now (what a shutdown waits for). */
  get inFlight(): number {
    return this.controller.inFlight;
  }

  /** All caches synced: /readyz passes. */
  ready(): boolean {
    return this.controller.ready();
  }

  /**
   * Stops taking work, waits for in-flight reconciles up to graceMs, stops the watches, then hands
   * the Lease over. The client stays open (`rest.close()` ends its connections).
   */
  async stop(graceMs: number): Promise<void> {
    const finished = await this.controller.stop(graceMs);
    if (!finished) this.log.warn('in-flight reconciles did not finish within the grace period');
    await this.elector?.release();
  }

  /** Starts every watch; resolves when all caches hold their first list. */
  private async startCaches(): Promise<void> {
    await this.controller.startCaches();
    this.log.info('caches synced', {
      kinds: [...this.kinds.keys()],
      namespaces: this.settings.namespaces.length ? this.settings.namespaces : 'all',
    });
  }

  /** Starts reconciling (on becoming leader, or at once without leader election). */
  private startWorkers(): void {
    this.log.info('workers started', { workers: this.settings.workers, statusIntervalMs: this.settings.statusIntervalMs });
    this.controller.startWorkers();
    for (const fn of this.onWorkersStarted) fn();
  }
}
