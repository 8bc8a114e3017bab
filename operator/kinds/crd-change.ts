// Whether a kind's CRD may be changed from what the cluster has to what the kind now renders: CRs
// already stored must stay readable, and no field they may hold may leave the schema (the API server
// prunes unknown fields, so the field would be dropped from every CR on its next read or write).
import { V1CustomResourceDefinition, V1JSONSchemaProps } from '@kubernetes/client-node';

/** The setting of a kind that puts each optional spec field into the CRD's schema: the fix when it would go. */
const GIVEN_BY: Record<string, string> = {
  'spec.args': 'overrides.args',
  'spec.env': 'overrides.env',
  'spec.envFrom': 'overrides.envFrom',
  'spec.resources': 'overrides.resources',
  'spec.podDisruptionBudget': 'overrides.podDisruptionBudget',
  'spec.serviceAccountName': 'overrides.serviceAccountName',
  'spec.nodePort': 'serviceType NodePort',
};

/** The storage version of a CRD, and the versions CRs may still be stored at (`status.storedVersions`). */
export function storageOf(crd: V1CustomResourceDefinition): { storage: string | undefined; stored: string[] } {
  return { storage: crd.spec.versions.find((v) => v.storage)?.name, stored: crd.status?.storedVersions ?? [] };
}

/**
 * Whether CRs may still be stored at a version other than the storage version: then a storage
 * migration moves them (storage-migration.ts), after which `status.storedVersions` holds the storage
 * version alone. Decided from the CRD alone, so a restarted operator resumes where the cluster is.
 */
export function needsStorageMigration(crd: V1CustomResourceDefinition): boolean {
  const { storage, stored } = storageOf(crd);
  return storage !== undefined && stored.some((v) => v !== storage);
}

/**
 * Versions `desired` stops listing or serving while the live CRD's `status.storedVersions` still holds
 * them: CRs may be stored at them, so the change is refused until a migration has moved those CRs.
 */
export function storedVersionProblems(live: V1CustomResourceDefinition, desired: V1CustomResourceDefinition): string[] {
  const name = live.metadata?.name ?? desired.metadata?.name ?? 'the CRD';
  const { storage: next } = storageOf(desired);
  const problems: string[] = [];
  for (const version of storageOf(live).stored) {
    const wanted = desired.spec.versions.find((v) => v.name === version);
    if (wanted?.served) continue;
    const what = wanted ? 'stop serving' : 'remove';
    const step =
      next && next !== version
        ? `keep it listed and served until the storage migration to ${next} has finished (status.storedVersions [${next}])`
        : 'keep it listed and served, make another version the storage version and wait for the storage migration to finish';
    problems.push(
      `versions: cannot ${what} ${version} while CRD ${name} has it in status.storedVersions (CRs may be stored at it); ${step}, then retire ${version}`,
    );
  }
  return problems;
}

/**
 * Fields of `before` (the schema CRs are stored under) that `after` no longer has, or whose type it
 * changes, under `spec` and everything but `status` (the operator rewrites status itself): existing
 * CRs may hold them. Adding fields, optional ones, is fine.
 */
export function schemaRemovals(before: V1JSONSchemaProps | undefined, after: V1JSONSchemaProps | undefined, path = ''): string[] {
  if (!before) return [];
  const at = (name: string) => (path ? `${path}.${name}` : name);
  if (!after) return [`${path || 'the schema'} would be removed`];
  if (before.type && after.type && before.type !== after.type) return [`${path} would change type from ${before.type} to ${after.type}`];
  const removed: string[] = [];
  for (const [name, was] of Object.entries(before.properties ?? {})) {
    if (!path && name === 'status') continue;
    const now = after.properties?.[name];
    if (!now) removed.push(`${at(name)} would be removed`);
    else removed.push(...schemaRemovals(was, now, at(name)));
  }
  if (before.items && !Array.isArray(before.items))
    removed.push(...schemaRemovals(before.items, after.items as V1JSONSchemaProps | undefined, `${path}[]`));
  return removed;
}

/** The schema of a CRD's storage version (every version of an app kind's CRD has the same). */
function storedSchema(crd: V1CustomResourceDefinition): V1JSONSchemaProps | undefined {
  const version = crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0];
  return version?.schema?.openAPIV3Schema;
}

/** One schema removal as a reason: the field, why it matters, and the setting that keeps it. */
function removalReason(removal: string, crdName: string): string {
  const field = removal.split(' ')[0]!;
  const keep = GIVEN_BY[field];
  return `${removal} from CRD ${crdName} while CRs may hold it (the API server would drop it from them); ${keep ? `keep ${keep}` : `keep ${field} in the schema`}, or remove ${field} from every CR first and then change the kind`;
}

/**
 * Why applying `desired` over `live` is refused (empty when it may be applied): a version CRs may be
 * stored at would stop being listed or served, or a field CRs may hold would leave the schema. No
 * live CRD: nothing is stored yet, anything goes.
 */
export function refusedCrdChange(live: V1CustomResourceDefinition | undefined, desired: V1CustomResourceDefinition): string[] {
  if (!live) return [];
  const name = live.metadata?.name ?? 'the CRD';
  return [
    ...storedVersionProblems(live, desired),
    ...schemaRemovals(storedSchema(live), storedSchema(desired)).map((r) => removalReason(r, name)),
  ];
}
