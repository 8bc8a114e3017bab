// AppKind objects as a source of served kinds, beside the kinds file: once the AppKind API's CRD
// exists (the operator starts and serves the kinds file without it), caches of AppKinds and CRDs and
// a queue that reconciles one AppKind at a time.
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { AppKindApiCrd } from 'cdk8s-appkind';
import { withoutManagedFields } from '../runtime/cache.js';
import { apiFailure } from '../runtime/api-failure.js';
import { EventRecorder } from '../runtime/events.js';
import { Informer } from '../runtime/informer.js';
import type { Logger } from '../runtime/log.js';
import { WorkQueue } from '../runtime/queue.js';
import { resourcePath, RestClient } from '../runtime/rest.js';
import type { KindSources } from '../controller/kind-sources.js';
import type { RolloutSummary } from '../controller/waves.js';
import { AppKindReconciler } from './reconcile.js';
import type { CrdPlanner } from './crd-plan.js';
import { StorageMigration } from '../controller/storage-migration.js';
import { StorageMigrations } from './migrations.js';
import type { AppKindResource } from './types.js';

const CRDS = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions' };

export interface AppKindSourceOptions {
  readonly rest: RestClient;
  readonly log: Logger;
  readonly sources: KindSources;
  readonly resourceCount: (kind: string) => number | undefined;
  readonly listFailure?: (kind: string) => { code: number; message: string } | undefined;
  /** The rollout of a served kind's settings to its apps (Manager.rolloutSummary), for status.rollout. */
  readonly rollout?: (kind: string) => RolloutSummary | undefined;
  readonly fieldManager: string;
  /** app.kubernetes.io/managed-by of the CRDs made for AppKinds. */
  readonly managedBy: string;
  /** A watch silent this long is relisted. */
  readonly staleMs: number;
  /** How often to look again for the AppKind API's CRD while it is not installed. @default 15000 */
  readonly probeIntervalMs?: number;
  /**
   * How often every AppKind is reconciled from the caches (status.resources follows its kind's CR
   * count); it sends a request only when something changed. @default 10000
   */
  readonly resyncMs?: number;
  readonly planner?: CrdPlanner;
  /** The API groups the install allows AppKinds (APPKIND_KIND_GROUPS), named when the API server refuses a CRD. */
  readonly kindGroups?: readonly string[];
  /**
   * The label selector of the AppKinds served (APPKIND_APPKIND_SELECTOR), sent with the list and watch:
   * others are never cached, so never written. One that stops matching leaves the cache as if deleted:
   * its kind is no longer served and its CRD, CRs and finalizer stay, for the operator that selects it.
   */
  readonly labelSelector?: string;
}

/**
 * What the AppKind source reads of a CRD: its metadata, names, versions without their schemas, and
 * status. Every CRD of the cluster is cached, and schemas are most of a CRD's size.
 */
export function crdSummary(crd: V1CustomResourceDefinition): V1CustomResourceDefinition {
  const metadata = { ...crd.metadata };
  delete metadata.managedFields;
  return {
    apiVersion: crd.apiVersion,
    kind: crd.kind,
    metadata,
    spec: { ...crd.spec, versions: crd.spec.versions.map(({ schema: _schema, ...v }) => v) },
    status: crd.status,
  };
}

/** AppKinds served as kinds: start() when the process starts, startWorkers() when it may write. */
export class AppKindSource {
  private appKinds?: Informer<AppKindResource>;
  private crds?: Informer<V1CustomResourceDefinition>;
  private readonly queue: WorkQueue;
  private readonly reconciler: AppKindReconciler;
  private readonly migrations: StorageMigrations;
  private readonly events: EventRecorder;
  private readonly log: Logger;
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;
  /** Both caches hold their first list. */
  private synced = false;
  /** startWorkers() was called: the process may write. */
  private mayWrite = false;
  /** Set once the queue started: every AppKind is reconciled again this often. */
  private resyncTimer?: NodeJS.Timeout;

  constructor(private readonly opts: AppKindSourceOptions) {
    const { rest, log, fieldManager } = opts;
    this.log = log;
    this.events = new EventRecorder(rest, fieldManager, log);
    // A migration's news queue its AppKind, whose reconcile writes status.migration.
    this.migrations = new StorageMigrations({
      migrate: (crd, options) => new StorageMigration(rest, options).migrate(crd),
      changed: (name) => this.queue.add(name),
    });
    this.reconciler = new AppKindReconciler({
      rest,
      events: this.events,
      sources: opts.sources,
      appKind: (name) => this.appKinds?.get(undefined, name),
      crd: (name) => this.crds?.get(undefined, name),
      resourceCount: opts.resourceCount,
      listFailure: opts.listFailure,
      rollout: opts.rollout,
      fieldManager,
      managedBy: opts.managedBy,
      planner: opts.planner,
      kindGroups: opts.kindGroups,
      migrations: this.migrations,
    });
    this.queue = new WorkQueue((name) => this.reconciler.reconcile(name, log.child({ appkind: name })), { workers: 1, maxDelayMs: 60_000 });
  }

  /** Looks for the AppKind API's CRD, and once it is there fills the caches and queues every AppKind. */
  start(): void {
    void this.probe();
  }

  /** Starts reconciling (at once, or on becoming leader). */
  startWorkers(): void {
    this.mayWrite = true;
    this.startQueue();
  }

  /**
   * Reconciles only once the caches are synced and writes are allowed: a reconcile that read an empty
   * CRD cache after a restart would apply every AppKind's CRD again.
   */
  private startQueue(): void {
    if (!this.synced || !this.mayWrite || this.stopped || this.resyncTimer) return;
    this.queue.start();
    this.resyncTimer = setInterval(() => this.resync(), this.opts.resyncMs ?? 10_000);
    this.resyncTimer.unref();
    this.timers.push(this.resyncTimer);
  }

  /**
   * The rollout of `kind` stopped at a failing wave (Manager.onRolloutStopped): a Warning Event on the
   * AppKind serving it, naming the failed apps, and its status says so at once.
   */
  rolloutStopped(kind: string, reason: string): void {
    const name = [...this.opts.sources.fromAppKinds].find(([n, k]) => k.kind === kind && this.opts.sources.appKind(n))?.[0];
    const ak = name && this.appKinds?.get(undefined, name);
    if (!ak) return;
    void this.events.record(
      ak,
      'Warning',
      'KindRolloutStopped',
      `the ${kind} rollout stopped: ${reason}`,
      this.log.child({ appkind: name }),
    );
    this.queue.add(name);
  }

  /** Reconciles every AppKind again (the kinds file changed: a KindConflict may be gone or new). */
  resync(): void {
    for (const ak of this.appKinds?.list() ?? []) this.queue.add(ak.metadata!.name!);
  }

  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.appKinds?.stop();
    this.crds?.stop();
    await this.migrations.stopAll();
    await this.queue.shutdown(graceMs);
  }

  private async probe(): Promise<void> {
    const { rest, log } = this.opts;
    let said: number | undefined;
    while (!this.stopped) {
      try {
        await rest.request('GET', resourcePath({ ...CRDS, name: AppKindApiCrd.CRD_NAME }));
        break;
      } catch (e) {
        const f = apiFailure(e);
        // Said once per cause: an operator without the API (or without the rights to it) serves the kinds file alone.
        if (said !== f.code) {
          log.info('AppKind API not available; serving the kinds file only until it is', {
            crd: AppKindApiCrd.CRD_NAME,
            code: f.code,
            reason: f.code === 404 ? 'not installed' : f.message,
          });
          said = f.code;
        }
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.opts.probeIntervalMs ?? 15_000);
        t.unref();
        this.timers.push(t);
      });
    }
    if (this.stopped) return;
    const common = { staleMs: this.opts.staleMs, log, rest, transform: withoutManagedFields };
    const add = (name: string | undefined) => name && this.queue.add(name);
    this.appKinds = new Informer<AppKindResource>(
      {
        apiVersion: AppKindApiCrd.API_VERSION,
        kind: AppKindApiCrd.KIND,
        plural: AppKindApiCrd.PLURAL,
        labelSelector: this.opts.labelSelector,
      },
      (_type, ak) => add(ak.metadata?.name),
      common,
    );
    // Every CRD: a foreign one that takes an AppKind's name is a CRDConflict until it goes.
    this.crds = new Informer<V1CustomResourceDefinition>(CRDS, (_type, crd) => this.crdChanged(crd), { ...common, transform: crdSummary });
    await Promise.all([this.crds.start(), this.appKinds.start()]);
    log.info('appkind caches synced', { appkinds: this.appKinds.list().length });
    this.synced = true;
    this.resync();
    this.startQueue();
  }

  /** Queues the AppKinds a CRD concerns: the one it is labelled for, and any asking for its name. */
  private crdChanged(crd: V1CustomResourceDefinition): void {
    const owner = crd.metadata?.labels?.[AppKindApiCrd.APPKIND_LABEL];
    if (owner) this.queue.add(owner);
    for (const ak of this.appKinds?.list() ?? []) {
      const spec = ak.spec ?? {};
      const plural = typeof spec.plural === 'string' && spec.plural ? spec.plural : `${String(spec.kind).toLowerCase()}s`;
      if (`${plural}.${String(spec.group)}` === crd.metadata?.name) this.queue.add(ak.metadata!.name!);
    }
  }
}
