// Storage migration of one CRD, as kube-storage-version-migrator does it: once the API server stores
// the kind at its new storage version, every CR is written back unchanged (a GET, then a PUT of what
// was read), which makes the server encode it at the storage version; then status.storedVersions is
// set to the storage version alone, so older versions may be retired.
//
// Why a PUT: the API server skips the etcd write of an update whose encoded bytes equal the stored
// ones. A CR stored at the old version encodes differently (its apiVersion), so the PUT rewrites it and
// its resourceVersion moves; a CR already at the storage version is left alone at no cost. Its spec is
// unchanged, so its generation stays, and nothing the operator renders from it changes.
//
// Resumable by design: whether to migrate is read from the CRD's status.storedVersions (crd-change.ts),
// never from memory, so an operator restarted midway writes every CR again (the migrated ones are
// no-ops) and then records the result.
import { V1CustomResourceDefinition, V1ObjectMeta } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { needsStorageMigration, storageOf } from '../kinds/crd-change.js';
import { ApiError } from '../runtime/api-failure.js';
import { Logger } from '../runtime/log.js';
import { MERGE_PATCH, RestClient, resourcePath } from '../runtime/rest.js';
import { abortError, sleep } from '../runtime/sleep.js';

/** How far a migration got: CRs of `version` written back, of `total` found when it started (AppKind status.migration). */
export interface MigrationProgress {
  readonly version: string;
  readonly migrated: number;
  readonly total: number;
}

/** What migrate() did: nothing to do, or every CR written back and status.storedVersions set to the storage version. */
export type MigrationResult = { readonly state: 'NotNeeded' } | { readonly state: 'Done'; readonly progress: MigrationProgress };

export interface StorageMigrationOptions {
  /** Reports progress now and then while CRs are written back (at least at the start and the end). */
  readonly onProgress?: (progress: MigrationProgress) => void;
  readonly log?: Logger;
  /** CRs written back at once. @default 4 */
  readonly concurrency?: number;
  /** How long to wait for the API server to store at the new version before giving up (migrate() throws; call it again). @default 30000 */
  readonly settleTimeoutMs?: number;
  /** CRs per list page. @default 500 */
  readonly pageSize?: number;
  /** Stops the migration (the operator stops or loses its lead): no CR is written after it fires, and migrate() rejects. */
  readonly signal?: AbortSignal;
}

/** A CRD's path on the API server. */
const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(name)}`;

/** A CR as listed and written back; nothing of it is read but its name, namespace and resourceVersion. */
interface StoredResource {
  apiVersion?: string;
  kind?: string;
  metadata: V1ObjectMeta;
  [field: string]: unknown;
}

/**
 * The storage version hash discovery shows for a resource stored at `group/version/kind`: the API
 * server's own function (apiserver/pkg/endpoints/discovery/storageversionhash.go), the signal
 * kube-storage-version-migrator waits for before it migrates.
 */
export function storageVersionHash(group: string, version: string, kind: string): string {
  return createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');
}

/** Moves the stored CRs of one CRD to its storage version. */
export class StorageMigration {
  constructor(
    private readonly rest: RestClient,
    private readonly opts: StorageMigrationOptions = {},
  ) {}

  /**
   * Migrates the CRD named `crdName` when its status.storedVersions holds another version than the
   * storage version; otherwise does nothing. Throws (call again later) when the API server does not
   * store at the new version yet, a CR cannot be written, or the CRD changed meanwhile.
   */
  async migrate(crdName: string): Promise<MigrationResult> {
    const crd = await this.rest.request<V1CustomResourceDefinition>('GET', crdPath(crdName));
    if (!needsStorageMigration(crd)) return { state: 'NotNeeded' };
    const version = storageOf(crd).storage!;
    const { group, names } = crd.spec;
    const apiVersion = `${group}/${version}`;
    await this.storedAtNewVersion(crd, version);

    const items: StoredResource[] = [];
    let next: string | undefined;
    do {
      const page = await this.rest.request<{ items: StoredResource[]; metadata?: { continue?: string } }>(
        'GET',
        resourcePath({ apiVersion, plural: names.plural }),
        {
          query: { limit: this.opts.pageSize ?? 500, continue: next },
        },
      );
      items.push(...page.items);
      next = page.metadata?.continue || undefined;
    } while (next);

    const total = items.length;
    let migrated = 0;
    const report = () => this.opts.onProgress?.({ version, migrated, total });
    const every = Math.max(1, Math.ceil(total / 20));
    report();
    this.opts.log?.info('storage migration started', { crd: crdName, version, from: storageOf(crd).stored, total });
    let index = 0;
    const { signal } = this.opts;
    const worker = async () => {
      while (index < items.length) {
        if (signal?.aborted) throw abortError(signal);
        const cr = items[index++]!;
        await this.writeBack({ ...cr, apiVersion, kind: names.kind }, names.plural);
        migrated++;
        if (migrated % every === 0 && migrated < total) report();
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.concurrency ?? 4, Math.max(1, total)) }, worker));
    if (signal?.aborted) throw abortError(signal);

    // Reported before status.storedVersions changes: a status read at that change finds every CR counted.
    report();
    await this.recordStoredVersion(crdName, version);
    this.opts.log?.info('storage migration finished', { crd: crdName, version, migrated, total });
    return { state: 'Done', progress: { version, migrated, total } };
  }

  /**
   * Waits until discovery shows the hash of the new storage version: the API server then encodes
   * writes at it. Writing back before would store the CRs at the old version again.
   */
  private async storedAtNewVersion(crd: V1CustomResourceDefinition, version: string): Promise<void> {
    const { group, names } = crd.spec;
    const want = storageVersionHash(group, version, names.kind);
    const deadline = Date.now() + (this.opts.settleTimeoutMs ?? 30_000);
    for (;;) {
      const list = await this.rest
        .request<{ resources?: { name: string; storageVersionHash?: string }[] }>('GET', `/apis/${group}/${version}`)
        .catch(() => undefined);
      const resource = list?.resources?.find((r) => r.name === names.plural);
      const hash = resource?.storageVersionHash;
      // An API server without storage version hashes in discovery gives no signal to wait for.
      if (resource && (hash === want || hash === undefined)) return;
      if (Date.now() > deadline) {
        throw new Error(
          `CRD ${crd.metadata?.name}: the API server does not store ${names.plural} at ${version} yet (discovery's storageVersionHash is ${hash ?? 'absent'}); the migration is tried again`,
        );
      }
      await sleep(200);
    }
  }

  /** One CR written back as read; read again and written again when it changed meanwhile. */
  private async writeBack(cr: StoredResource, plural: string): Promise<void> {
    const path = resourcePath({ apiVersion: cr.apiVersion!, plural, namespace: cr.metadata.namespace, name: cr.metadata.name });
    let current: StoredResource | undefined = cr;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.rest.request('PUT', path, { body: current });
        return;
      } catch (e) {
        // Deleted meanwhile: nothing of it is stored any more.
        if (e instanceof ApiError && e.code === 404) return;
        // Someone wrote it meanwhile, which stored it at the storage version already; write what is there now, to be sure.
        if (!(e instanceof ApiError && e.code === 409) || attempt >= 5) {
          // Named, so that a CR the API server refuses (a webhook, a rule that does not ratchet) can be found and fixed.
          throw new Error(
            `${cr.kind} ${cr.metadata.namespace}/${cr.metadata.name} not written back at ${cr.apiVersion}: ${(e as Error).message}`,
            {
              cause: e,
            },
          );
        }
      }
      current = await this.rest.request<StoredResource>('GET', path).catch((e: unknown) => {
        if (e instanceof ApiError && e.code === 404) return undefined;
        throw e;
      });
      if (!current) return;
      current = { ...current, apiVersion: cr.apiVersion, kind: cr.kind };
    }
  }

  /**
   * Sets status.storedVersions to `version` alone, only if the CRD still stores at `version` (read
   * again, and the write conditioned on that read's resourceVersion): a storage version changed
   * during the migration leaves storedVersions as it is, and the next call migrates to the new one.
   */
  private async recordStoredVersion(crdName: string, version: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const crd = await this.rest.request<V1CustomResourceDefinition>('GET', crdPath(crdName));
      if (storageOf(crd).storage !== version) {
        throw new Error(
          `CRD ${crdName}: its storage version changed from ${version} to ${storageOf(crd).storage} during the migration; the migration starts again`,
        );
      }
      await this.storedAtNewVersion(crd, version);
      try {
        await this.rest.request('PATCH', `${crdPath(crdName)}/status`, {
          body: { metadata: { resourceVersion: crd.metadata?.resourceVersion }, status: { storedVersions: [version] } },
          contentType: MERGE_PATCH,
        });
        return;
      } catch (e) {
        // The API server updates the CRD's own status too (conditions, accepted names): read it again.
        if (!(e instanceof ApiError && e.code === 409) || attempt >= 5) throw e;
      }
    }
  }
}
