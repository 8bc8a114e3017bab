// One AppKind to one served kind: its spec checked as the kinds file's kinds are, its CRD's name
// checked against the CRDs and kinds of others, a change of its CRD checked against the CRs stored
// under it, the CRD applied and awaited, the kind served, stored CRs moved to a new storage version,
// the kind's rollout to its apps reported (rollout-report.ts), and status written only when it changed
// (status-writer.ts: a steady state writes nothing). Deleting it acts on its deletionPolicy under the
// finalizer.
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { AppKind, AppKindApiCrd, AppKindCrd } from 'cdk8s-appkind';
import { needsStorageMigration, refusedCrdChange, storageOf } from '../kinds/crd-change.js';
import { ConfigError, validateAppKind } from '../kinds/validate.js';
import { KIND_PROPERTIES } from '../kinds/schema.js';
import { apiFailure } from '../runtime/api-failure.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Logger } from '../runtime/log.js';
import type { HandlerResult } from '../runtime/queue.js';
import { MERGE_PATCH, resourcePath, RestClient } from '../runtime/rest.js';
import type { KindSources } from '../controller/kind-sources.js';
import type { RolloutSummary } from '../controller/waves.js';
import { applied, CrdPlanner, planCrd } from './crd-plan.js';
import type { StorageMigrations } from './migrations.js';
import { RolloutReport } from './rollout-report.js';
import { AppKindStatusWriter, canonical } from './status-writer.js';
import type { AppKindCondition, AppKindMigration, AppKindResource, AppKindStatus } from './types.js';

/** Why an AppKind is Ready or not (status.conditions[Ready].reason). */
export const AppKindReason = {
  SERVING: 'Serving',
  INVALID_SPEC: 'InvalidSpec',
  CRD_CONFLICT: 'CRDConflict',
  KIND_CONFLICT: 'KindConflict',
  CRD_APPLY_FAILED: 'CRDApplyFailed',
  CRD_NOT_ESTABLISHED: 'CRDNotEstablished',
  CRD_NAMES_NOT_ACCEPTED: 'CRDNamesNotAccepted',
  RESOURCES_FORBIDDEN: 'ResourcesForbidden',
  /** The new CRD stops listing or serving a version status.storedVersions still holds. */
  VERSION_STILL_STORED: 'VersionStillStored',
  /** The new CRD takes out of the schema a field that stored CRs may hold. */
  FIELD_REMOVED: 'FieldRemoved',
  /** Moving stored CRs to the storage version failed; it is tried again (the kind is still served). */
  STORAGE_MIGRATION_FAILED: 'StorageMigrationFailed',
} as const;

/** Every spec setting named as the user wrote it, `spec.port`, in the messages of the kinds file's checks. */
const SPEC_NAMES: Partial<Record<keyof AppKind, string>> = Object.fromEntries(Object.keys(KIND_PROPERTIES).map((k) => [k, `spec.${k}`]));

/** How soon a CRD the API server has not established yet is looked at again. */
const NOT_ESTABLISHED_RETRY_MS = 1000;

/** What reconciling AppKinds reads and writes through. */
export interface AppKindReconcilerDeps {
  readonly rest: Pick<RestClient, 'apply' | 'delete' | 'request' | 'patchStatus'>;
  readonly events: EventRecorder;
  readonly sources: KindSources;
  /** AppKinds by name, from the cache. */
  readonly appKind: (name: string) => AppKindResource | undefined;
  /** CRDs by name, from the cache. */
  readonly crd: (name: string) => V1CustomResourceDefinition | undefined;
  /** CRs of a served kind in the cache (undefined before they are listed). */
  readonly resourceCount: (kind: string) => number | undefined;
  /** Why the CRs of a served kind cannot be listed, while they cannot. */
  readonly listFailure?: (kind: string) => { code: number; message: string } | undefined;
  readonly fieldManager: string;
  /** The operator's name: app.kubernetes.io/managed-by of the CRDs it makes. */
  readonly managedBy: string;
  /** Decides the CRD to apply. */
  readonly planner?: CrdPlanner;
  /** The API groups the install allows AppKinds (APPKIND_KIND_GROUPS), named when the API server refuses a CRD. */
  readonly kindGroups?: readonly string[];
  /** Runs storage migrations of the CRDs beside the reconciles; without it, none runs. */
  readonly migrations?: Pick<StorageMigrations, 'ensure' | 'state' | 'stop'>;
  /** The rollout of a served kind's settings to its apps (Manager.rolloutSummary); without it, status shows none. */
  readonly rollout?: (kind: string) => RolloutSummary | undefined;
  readonly now?: () => Date;
}

const API = { apiVersion: AppKindApiCrd.API_VERSION, plural: AppKindApiCrd.PLURAL };
const CRDS = { apiVersion: 'apiextensions.k8s.io/v1', plural: 'customresourcedefinitions' };
const established = (crd: V1CustomResourceDefinition | undefined) =>
  crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
const namesRefused = (crd: V1CustomResourceDefinition | undefined) =>
  crd?.status?.conditions?.find((c) => c.type === 'NamesAccepted' && c.status === 'False');

/** The name of the CRD an AppKind asks for, from its spec as written (valid or not), for deletion. */
function crdNameOfSpec(ak: AppKindResource): string | undefined {
  const spec = ak.spec ?? {};
  if (typeof spec.group !== 'string' || typeof spec.kind !== 'string') return ak.status?.crd;
  const plural = typeof spec.plural === 'string' && spec.plural ? spec.plural : `${spec.kind.toLowerCase()}s`;
  return `${plural}.${spec.group}`;
}

export class AppKindReconciler {
  private readonly planner: CrdPlanner;
  private readonly now: () => Date;
  private readonly status: AppKindStatusWriter;
  private readonly rollouts: RolloutReport;

  constructor(private readonly deps: AppKindReconcilerDeps) {
    this.planner = deps.planner ?? planCrd;
    this.now = deps.now ?? (() => new Date());
    // Waiting a moment for the API server to establish a CRD is no news worth an Event.
    this.status = new AppKindStatusWriter({ rest: deps.rest, events: deps.events, quietReasons: [AppKindReason.CRD_NOT_ESTABLISHED] });
    this.rollouts = new RolloutReport({
      rollout: deps.rollout,
      resourceCount: deps.resourceCount,
      now: this.now,
      timestamp: () => this.timestamp(),
    });
  }

  async reconcile(name: string, log: Logger): Promise<HandlerResult> {
    const { sources } = this.deps;
    const ak = this.deps.appKind(name);
    if (!ak) {
      // Gone without our finalizer (removed by hand): stop serving it, leave its CRD.
      this.rollouts.forget(name);
      this.status.forget(name);
      const changes = sources.removeAppKind(name);
      if (changes) log.info('appkind gone; kind no longer served', { ...changes });
      return;
    }
    if (ak.metadata?.deletionTimestamp) return this.finalize(ak, log);
    if (!ak.metadata?.finalizers?.includes(AppKindApiCrd.FINALIZER)) {
      // The update event of this patch reconciles it again.
      await this.patchFinalizers(ak, [...(ak.metadata?.finalizers ?? []), AppKindApiCrd.FINALIZER]);
      return;
    }

    let kind: AppKind;
    try {
      const spec: Record<string, unknown> = { ...ak.spec };
      delete spec.deletionPolicy;
      kind = validateAppKind(spec, `AppKind ${name}`, SPEC_NAMES);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      return this.refuse(ak, AppKindReason.INVALID_SPEC, `${e.message}${this.stillServing(name)}`, log);
    }

    const crdName = AppKindCrd.nameOf(kind);
    const sameKind = (k: AppKind) => k.kind === kind.kind || AppKindCrd.nameOf(k) === crdName;
    const fromFile = sources.file.find(sameKind);
    if (fromFile) {
      return this.refuse(
        ak,
        AppKindReason.KIND_CONFLICT,
        `AppKind ${name}: the kind ${fromFile.kind} (CRD ${AppKindCrd.nameOf(fromFile)}) is served from the kinds file already; remove it from the kinds file, or give spec.kind and spec.plural other names${this.stillServing(name)}`,
        log,
      );
    }
    const other = [...sources.fromAppKinds].find(([n, k]) => n !== name && sameKind(k));
    if (other) {
      return this.refuse(
        ak,
        AppKindReason.KIND_CONFLICT,
        `AppKind ${name}: the kind ${other[1].kind} (CRD ${AppKindCrd.nameOf(other[1])}) is served for AppKind ${other[0]} already; delete one of the two, or give spec.kind and spec.plural other names${this.stillServing(name)}`,
        log,
      );
    }
    const live = this.deps.crd(crdName);
    const owner = live?.metadata?.labels?.[AppKindApiCrd.APPKIND_LABEL];
    if (live && owner === undefined) {
      return this.refuse(
        ak,
        AppKindReason.CRD_CONFLICT,
        `AppKind ${name}: the CRD ${crdName} exists and was not made for an AppKind (it has no label ${AppKindApiCrd.APPKIND_LABEL}), so the operator leaves it alone; give spec.group or spec.plural other names, or delete that CRD if nothing uses it${this.stillServing(name)}`,
        log,
      );
    }
    if (live && owner !== name && this.deps.appKind(owner!)) {
      return this.refuse(
        ak,
        AppKindReason.CRD_CONFLICT,
        `AppKind ${name}: the CRD ${crdName} belongs to AppKind ${owner}; give spec.group or spec.plural other names, or delete AppKind ${owner}${this.stillServing(name)}`,
        log,
      );
    }

    const plan = this.planner({ appKind: ak, kind, live, managedBy: this.deps.managedBy });
    let current = live;
    if (!applied(plan, live)) {
      // The cache holds CRDs without their schemas: the check reads the live one, only when it would change.
      const full = live && (await this.readCrd(crdName));
      const problems = full ? refusedCrdChange(full, plan.crd) : [];
      if (problems.length > 0) {
        // CRs still moving to the storage version keep moving: once they have, this spec is accepted without another edit.
        const moving = needsStorageMigration(full!) ? this.deps.migrations?.ensure(name, crdName, log) : undefined;
        const reason = problems[0]!.startsWith('versions:') ? AppKindReason.VERSION_STILL_STORED : AppKindReason.FIELD_REMOVED;
        return this.refuse(ak, reason, `AppKind ${name}: ${problems.join('; ')}${this.stillServing(name)}`, log, moving?.progress);
      }
      try {
        current = await this.deps.rest.apply(plan.crd, this.deps.fieldManager);
      } catch (e) {
        const f = apiFailure(e);
        if (f.retryAfterMs !== undefined) throw e;
        await this.refuse(
          ak,
          AppKindReason.CRD_APPLY_FAILED,
          `AppKind ${name}: the API server refused its CRD ${crdName}: ${f.message}${f.code === 403 ? this.groupHint(kind.group, f.message) : ''}${this.stillServing(name)}`,
          log,
        );
        throw e;
      }
      log.info(live ? 'crd updated' : 'crd created', { crd: crdName });
      void this.deps.events.record(ak, 'Normal', live ? 'CRDUpdated' : 'CRDCreated', `${live ? 'updated' : 'created'} CRD ${crdName}`, log);
    }
    const refused = namesRefused(current);
    if (refused) {
      return this.refuse(
        ak,
        AppKindReason.CRD_NAMES_NOT_ACCEPTED,
        `AppKind ${name}: the API server does not accept the names of CRD ${crdName}: ${refused.message ?? refused.reason}; change spec.kind, spec.plural or spec.shortNames`,
        log,
      );
    }
    if (!established(current)) {
      await this.status.write(
        ak,
        {
          ...this.observed(ak, current),
          conditions: this.conditions(
            ak,
            'False',
            AppKindReason.CRD_NOT_ESTABLISHED,
            `waiting for the API server to establish CRD ${crdName}`,
          ),
        },
        log,
      );
      return { requeueAfterMs: NOT_ESTABLISHED_RETRY_MS };
    }

    // A change of the served settings starts a rollout of them: looked at again soon to report it.
    let changed = false;
    if (canonical(sources.appKind(name)) !== canonical(kind)) {
      const changes = sources.setAppKind(name, kind);
      changed = changes.changed.includes(kind.kind);
      log.info('serving appkind', { kind: `${kind.kind}.${kind.group}/${kind.version}`, ...changes });
    }
    const failure = this.deps.listFailure?.(kind.kind);
    if (failure?.code === 403) {
      // The CRD is served, but the operator may not read its CRs (a cluster's RBAC grants it its own kinds only).
      const message = `AppKind ${name}: CRD ${crdName} is served, but the operator may not list its resources (${failure.message.split('\n')[0]}); grant the operator's ServiceAccount get, list and watch on ${kind.plural} and patch on ${kind.plural}/status in the API group ${kind.group}`;
      await this.status.write(
        ak,
        { ...this.observed(ak, current), conditions: this.conditions(ak, 'False', AppKindReason.RESOURCES_FORBIDDEN, message) },
        log,
      );
      return;
    }
    const storage = this.storage(ak, kind, current!, log);
    if (changed) this.rollouts.changed(name);
    const rollout = this.rollouts.of(ak, kind);
    const message = `serving ${kind.kind}.${kind.group}/${kind.version} from CRD ${crdName}${storage.note}`;
    await this.status.write(
      ak,
      {
        ...this.observed(ak, current),
        conditions: [
          ...(storage.failed
            ? this.conditions(ak, 'False', AppKindReason.STORAGE_MIGRATION_FAILED, message)
            : this.conditions(ak, 'True', AppKindReason.SERVING, message)),
          ...(rollout.condition ? [rollout.condition] : []),
        ],
        resources: this.deps.resourceCount(kind.kind) ?? ak.status?.resources ?? 0,
        migration: storage.migration,
        rollout: rollout.status,
      },
      log,
    );
    const retries = [storage.retryInMs, rollout.refreshInMs].filter((ms) => ms !== undefined);
    if (retries.length) return { requeueAfterMs: Math.min(...retries) };
  }

  /**
   * Where the CRs of a served CRD are stored: a migration started when status.storedVersions holds a
   * version other than the storage version, and what the user waits for before retiring the others.
   */
  private storage(
    ak: AppKindResource,
    kind: AppKind,
    crd: V1CustomResourceDefinition,
    log: Logger,
  ): { note: string; failed: boolean; migration?: AppKindMigration; retryInMs?: number } {
    const crdName = crd.metadata!.name!;
    const { storage, stored } = storageOf(crd);
    const needed = needsStorageMigration(crd);
    const state = needed ? this.deps.migrations?.ensure(ak.metadata!.name!, crdName, log) : this.deps.migrations?.state(crdName);
    // After a restart no run is known: the last progress written stays.
    const migration = state?.progress ?? ak.status?.migration;
    const others = (crd.spec.versions ?? []).map((v) => v.name).filter((v) => v !== storage);
    if (needed && state?.failure) {
      // No countdown in the message: a message that changed at each reconcile would be a status write and an Event each time.
      return {
        note: `, but moving its stored CRs to ${storage} failed (it is tried again, after a wait that doubles up to 5 minutes): ${state.failure}; until it succeeds status.storedVersions keeps ${stored.join(', ')} and no version may be retired`,
        failed: true,
        migration,
        retryInMs: state.retryInMs,
      };
    }
    if (needed) {
      const from = stored.filter((v) => v !== storage).join(', ');
      return { note: `; moving the CRs stored at ${from} to ${storage} (status.migration shows how far)`, failed: false, migration };
    }
    // Retiring is news only after CRs moved to this storage version (not when a version was merely added beside it).
    if (others.length === 0 || migration?.version !== storage) return { note: '', failed: false, migration };
    const first = kind.version !== storage ? `set spec.version to ${storage} (the children's owner references move to it), then ` : '';
    return {
      note:
        `; every CR is stored at ${storage} (status.storedVersions [${storage}]): ${first}${others.join(', ')} may be retired (served: false, then removed from spec.versions) ` +
        `once kube-controller-manager's garbage collector has moved its watches off them; it reads discovery every 30 s, so wait a minute after the served versions last changed`,
      failed: false,
      migration,
    };
  }

  /** The CRD as the API server has it, schemas included; undefined when it is gone. */
  private async readCrd(name: string): Promise<V1CustomResourceDefinition | undefined> {
    try {
      return await this.deps.rest.request<V1CustomResourceDefinition>('GET', resourcePath({ ...CRDS, name }));
    } catch (e) {
      if (apiFailure(e).code === 404) return undefined;
      throw e;
    }
  }

  /** What status says of the CRD as it is, and which generation it is about. */
  private observed(ak: AppKindResource, crd: V1CustomResourceDefinition | undefined): AppKindStatus {
    const versions = crd?.spec?.versions ?? [];
    return {
      observedGeneration: ak.metadata?.generation,
      crd: crd?.metadata?.name,
      servedVersions: versions.filter((v) => v.served).map((v) => v.name),
      storageVersion: versions.find((v) => v.storage)?.name,
      storedVersions: crd?.status?.storedVersions,
    };
  }

  /**
   * For a CRD write refused as forbidden: what to change when `group` is not one the install allows.
   * RBAC's refusal (no kindGroups at all) names no setting; the -crds policy's names it already.
   */
  private groupHint(group: string, refusal: string): string {
    const allowed = this.deps.kindGroups;
    if (!allowed || allowed.includes(group) || refusal.includes('kindGroups')) return '';
    const now = allowed.length ? `kindGroups is ${allowed.join(', ')}` : 'kindGroups is empty, so the operator may make no CRD';
    return `; the install does not allow AppKinds the API group ${group} (${now}): add ${group} to kindGroups (OperatorBundle kindGroups, Helm value kindGroups, APPKIND_KIND_GROUPS for npx cdk8s synth and npm run release) and apply the install again, or give spec.group one of the allowed groups`;
  }

  /** " (still serving X)" when an earlier spec of this AppKind is served, for a refusal's message. */
  private stillServing(name: string): string {
    const served = this.deps.sources.appKind(name);
    return served ? ` (still serving ${served.kind}.${served.group}/${served.version} as before)` : '';
  }

  /** Ready=False with the reason; what is served does not change (a migration under way goes on and reports). */
  private async refuse(ak: AppKindResource, reason: string, message: string, log: Logger, migration?: AppKindMigration): Promise<void> {
    log.warn('appkind refused', { reason, message });
    await this.status.write(
      ak,
      {
        ...ak.status,
        observedGeneration: ak.metadata?.generation,
        // The kind served before goes on rolling out: its RolloutStopped condition stays beside Ready.
        conditions: [...this.conditions(ak, 'False', reason, message), ...(ak.status?.conditions ?? []).filter((c) => c.type !== 'Ready')],
        ...(migration ? { migration } : {}),
      },
      log,
    );
  }

  /** The Ready condition, its lastTransitionTime kept while its status does not change. */
  private conditions(ak: AppKindResource, status: 'True' | 'False', reason: string, message: string): AppKindCondition[] {
    const before = ak.status?.conditions?.find((c) => c.type === 'Ready');
    const lastTransitionTime = before && before.status === status ? before.lastTransitionTime : this.timestamp();
    return [
      { type: 'Ready', status, reason, message: message.slice(0, 32768), lastTransitionTime, observedGeneration: ak.metadata?.generation },
    ];
  }

  /** Now, in whole seconds as metav1.Time has it. */
  private timestamp(): string {
    return this.now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
  }

  /** Deleting: stop serving, act on deletionPolicy, then let the AppKind go. */
  private async finalize(ak: AppKindResource, log: Logger): Promise<void> {
    const name = ak.metadata!.name!;
    if (!ak.metadata?.finalizers?.includes(AppKindApiCrd.FINALIZER)) return;
    const changes = this.deps.sources.removeAppKind(name);
    this.status.forget(name);
    this.rollouts.forget(name);
    if (changes) log.info('appkind deleted; kind no longer served', { ...changes });
    const crdName = crdNameOfSpec(ak);
    if (crdName) await this.deps.migrations?.stop(crdName);
    const live = crdName ? this.deps.crd(crdName) : undefined;
    const ours = live?.metadata?.labels?.[AppKindApiCrd.APPKIND_LABEL] === name;
    if (ak.spec?.deletionPolicy === 'Delete' && live && ours) {
      await this.deps.rest.delete(live);
      log.info('crd deleted', { crd: crdName });
      void this.deps.events.record(
        ak,
        'Normal',
        'CRDDeleted',
        `deleted CRD ${crdName}: the API server deletes its resources, the garbage collector their apps`,
        log,
      );
    } else {
      const what = live && ours ? `CRD ${crdName}, its resources and their apps stay` : 'no CRD of its own to keep or delete';
      void this.deps.events.record(ak, 'Normal', 'Retained', `stopped serving the kind; ${what}`, log);
    }
    await this.patchFinalizers(
      ak,
      (ak.metadata?.finalizers ?? []).filter((f) => f !== AppKindApiCrd.FINALIZER),
    );
  }

  /** Sets metadata.finalizers, only on the version read (a concurrent change makes it fail and retry). */
  private async patchFinalizers(ak: AppKindResource, finalizers: string[]): Promise<void> {
    await this.deps.rest.request('PATCH', resourcePath({ ...API, name: ak.metadata!.name! }), {
      body: { metadata: { finalizers, resourceVersion: ak.metadata!.resourceVersion } },
      contentType: MERGE_PATCH,
    });
  }
}
