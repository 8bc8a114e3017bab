import { describe, expect, test } from '@jest/globals';
import { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { crdObjects, needsStorageMigration, refusedCrdChange, SAMPLE_KIND, schemaRemovals, storedVersionProblems } from 'appkind-operator/kinds';

const crdOf = (kind: AppKind, storedVersions?: string[]): V1CustomResourceDefinition => {
  const crd = crdObjects([kind])[0] as unknown as V1CustomResourceDefinition;
  return storedVersions ? { ...crd, status: { storedVersions, acceptedNames: crd.spec.names, conditions: [] } } : crd;
};
const twoVersions = (storage: 'v1alpha1' | 'v1', alpha: { served?: boolean } = {}): AppKind => ({
  ...SAMPLE_KIND,
  version: storage === 'v1' ? 'v1' : 'v1alpha1',
  versions: [{ name: 'v1alpha1', storage: storage === 'v1alpha1', ...alpha }, { name: 'v1', storage: storage === 'v1' }],
});

describe('a storage migration is needed', () => {
  test('while status.storedVersions holds a version other than the storage version, and only then', () => {
    expect(needsStorageMigration(crdOf(twoVersions('v1'), ['v1alpha1', 'v1']))).toBe(true);
    expect(needsStorageMigration(crdOf(twoVersions('v1'), ['v1alpha1']))).toBe(true);
    expect(needsStorageMigration(crdOf(twoVersions('v1'), ['v1']))).toBe(false);
    expect(needsStorageMigration(crdOf(SAMPLE_KIND, ['v1alpha1']))).toBe(false);
    expect(needsStorageMigration(crdOf(SAMPLE_KIND))).toBe(false);
  });
});

describe('retiring a version', () => {
  const live = crdOf(twoVersions('v1'), ['v1alpha1', 'v1']);

  test('is refused while status.storedVersions holds it, removed or not served, with what to do instead', () => {
    const removed = crdOf({ ...SAMPLE_KIND, version: 'v1', versions: [{ name: 'v1', storage: true }] });
    expect(storedVersionProblems(live, removed)).toEqual([
      'versions: cannot remove v1alpha1 while CRD echoflasks.swallowlab.com has it in status.storedVersions (CRs may be stored at it); keep it listed and served until the storage migration to v1 has finished (status.storedVersions [v1]), then retire v1alpha1',
    ]);
    expect(storedVersionProblems(live, crdOf({ ...twoVersions('v1', { served: false }) }))).toEqual([
      expect.stringMatching(/^versions: cannot stop serving v1alpha1 while CRD echoflasks.swallowlab.com has it in status.storedVersions/),
    ]);
  });

  test('a version still stored and still the storage version: the message says to move storage first', () => {
    const stillStored = crdOf(twoVersions('v1alpha1'), ['v1alpha1']);
    // Not a CRD the kinds validator lets through (it serves the storage version), but one a person may write.
    const unserved = crdOf(twoVersions('v1alpha1'));
    unserved.spec.versions[0] = { ...unserved.spec.versions[0]!, served: false };
    expect(storedVersionProblems(stillStored, unserved))
      .toEqual([expect.stringContaining('cannot stop serving v1alpha1 while CRD echoflasks.swallowlab.com has it in status.storedVersions (CRs may be stored at it); keep it listed and served, make another version the storage version and wait for the storage migration to finish')]);
  });

  test('is allowed once the migration left status.storedVersions [v1], first not served, then removed', () => {
    const migrated = crdOf(twoVersions('v1'), ['v1']);
    expect(refusedCrdChange(migrated, crdOf(twoVersions('v1', { served: false })))).toEqual([]);
    expect(refusedCrdChange(migrated, crdOf({ ...SAMPLE_KIND, version: 'v1', versions: [{ name: 'v1', storage: true }] }))).toEqual([]);
  });

  test('adding a version and making it the storage version is allowed', () => {
    expect(refusedCrdChange(crdOf(SAMPLE_KIND, ['v1alpha1']), crdOf({ ...SAMPLE_KIND, versions: [{ name: 'v1alpha1' }, { name: 'v1', storage: true }] }))).toEqual([]);
  });
});

describe('schema compatibility', () => {
  const withEnv: AppKind = { ...SAMPLE_KIND, overrides: { env: {}, args: true } };
  const schemaOf = (kind: AppKind) => crdOf(kind).spec.versions[0]!.schema!.openAPIV3Schema;

  test('taking an override away removes a field CRs may hold: refused, naming the field and the setting that keeps it', () => {
    expect(schemaRemovals(schemaOf(withEnv), schemaOf({ ...SAMPLE_KIND, overrides: { args: true } }))).toEqual(['spec.env would be removed']);
    expect(refusedCrdChange(crdOf(withEnv, ['v1alpha1']), crdOf({ ...SAMPLE_KIND, overrides: { args: true } }))).toEqual([
      'spec.env would be removed from CRD echoflasks.swallowlab.com while CRs may hold it (the API server would drop it from them); keep overrides.env, or remove spec.env from every CR first and then change the kind',
    ]);
  });

  test('a ClusterIP Service takes spec.nodePort away: refused, naming serviceType', () => {
    expect(refusedCrdChange(crdOf(SAMPLE_KIND, ['v1alpha1']), crdOf({ ...SAMPLE_KIND, serviceType: 'ClusterIP' as AppKind['serviceType'] })))
      .toEqual([expect.stringMatching(/^spec\.nodePort would be removed .*; keep serviceType NodePort/)]);
  });

  test('nested fields and type changes count; status does not (the operator rewrites it)', () => {
    const before = { type: 'object', properties: { spec: { type: 'object', properties: { a: { type: 'array', items: { type: 'object', properties: { x: { type: 'string' } } } }, b: { type: 'integer' } } }, status: { type: 'object', properties: { old: { type: 'string' } } } } };
    const after = { type: 'object', properties: { spec: { type: 'object', properties: { a: { type: 'array', items: { type: 'object', properties: {} } }, b: { type: 'string' } } }, status: { type: 'object' } } };
    expect(schemaRemovals(before, after)).toEqual(['spec.a[].x would be removed', 'spec.b would change type from integer to string']);
  });

  test('adding optional fields (an override given) and changing limits are fine', () => {
    expect(schemaRemovals(schemaOf(SAMPLE_KIND), schemaOf(withEnv))).toEqual([]);
    expect(refusedCrdChange(crdOf(SAMPLE_KIND, ['v1alpha1']), crdOf({ ...withEnv, maxSize: 7, allowedImages: ['takeyan/*'] }))).toEqual([]);
  });

  test('no live CRD: nothing is stored, anything goes', () => {
    expect(refusedCrdChange(undefined, crdOf(SAMPLE_KIND))).toEqual([]);
  });
});
