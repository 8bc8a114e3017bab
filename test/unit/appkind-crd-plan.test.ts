// Which CRD an AppKind gets: the construct's CRD of the kind, labelled for the AppKind, and a hash
// that says whether the live CRD already is what would be applied (so an unchanged CRD costs no request).
import { describe, expect, test } from '@jest/globals';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { applied, planCrd, SPEC_HASH_ANNOTATION } from '../../operator/appkinds/crd-plan.js';
import type { AppKindResource } from '../../operator/appkinds/types.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';

const appKind: AppKindResource = { apiVersion: 'appkind.io/v1alpha1', kind: 'AppKind', metadata: { name: 'echoflasks.swallowlab.com' }, spec: { ...SAMPLE_KIND } };

describe('planCrd', () => {
  const plan = planCrd({ appKind, kind: SAMPLE_KIND, managedBy: 'appkind-operator' });

  test('is the kind\'s CRD with the contract\'s labels: the AppKind\'s name and the operator\'s', () => {
    expect(plan.crd.metadata?.name).toBe('echoflasks.swallowlab.com');
    expect(plan.crd.spec.names.kind).toBe('EchoFlask');
    expect(plan.crd.metadata?.labels).toEqual({ 'appkind.io/appkind': 'echoflasks.swallowlab.com', 'app.kubernetes.io/managed-by': 'appkind-operator' });
  });

  test('the hash is the same for the same kind and differs for another setting or another AppKind', () => {
    const hash = (p: { crd: V1CustomResourceDefinition }) => p.crd.metadata?.annotations?.[SPEC_HASH_ANNOTATION];
    expect(hash(plan)).toMatch(/^[0-9a-f]{16}$/);
    expect(hash(planCrd({ appKind, kind: SAMPLE_KIND, managedBy: 'appkind-operator' }))).toBe(hash(plan));
    expect(hash(planCrd({ appKind, kind: { ...SAMPLE_KIND, maxSize: 7 }, managedBy: 'appkind-operator' }))).not.toBe(hash(plan));
    expect(hash(planCrd({ appKind: { ...appKind, metadata: { name: 'other' } }, kind: SAMPLE_KIND, managedBy: 'appkind-operator' }))).not.toBe(hash(plan));
  });

  test('applied(): only a live CRD carrying the same hash counts as applied', () => {
    expect(applied(plan, undefined)).toBe(false);
    expect(applied(plan, { ...plan.crd, metadata: { ...plan.crd.metadata, annotations: {} } })).toBe(false);
    expect(applied(plan, { ...plan.crd, status: { acceptedNames: { kind: 'EchoFlask', plural: 'echoflasks' }, storedVersions: ['v1alpha1'] } })).toBe(true);
  });
});
