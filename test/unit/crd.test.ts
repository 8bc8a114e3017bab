import { describe, expect, test } from '@jest/globals';
import { Testing } from 'cdk8s';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppKindCrd, type AppKind } from 'cdk8s-appkind';
import { kindsFromFile, SAMPLE_KIND } from 'appkind-operator/kinds';
import { crdFileName, crdYaml } from '../../operator/kinds/crd-yaml.js';
import { Reason } from '../../operator/controller/status.js';

type Schema = { type?: string; properties?: Record<string, Schema>; items?: Schema; minimum?: number; maximum?: number; minLength?: number; default?: unknown; [k: string]: unknown };
type Version = {
  name: string; schema: { openAPIV3Schema: Schema };
  subresources: { status: object; scale: Record<string, string> };
  additionalPrinterColumns: { name: string; jsonPath: string; type: string; priority?: number }[];
};
type Crd = { kind: string; metadata: { name: string }; spec: { group: string; scope: string; names: Record<string, unknown>; versions: Version[] } };

const root = join(import.meta.dirname, '..', '..');

function crdOf(appKind: AppKind): Crd {
  const chart = Testing.chart();
  new AppKindCrd(chart, 'crd', { appKind });
  return (Testing.synth(chart) as Crd[])[0]!;
}

/** Structural schema: every node states its type, and nothing keeps unknown fields (so they are pruned). */
function structuralProblems(schema: Schema, path: string): string[] {
  const problems: string[] = [];
  if (!schema.type) problems.push(`${path} has no type`);
  if (schema['x-kubernetes-preserve-unknown-fields']) problems.push(`${path} preserves unknown fields`);
  for (const [name, child] of Object.entries(schema.properties ?? {})) problems.push(...structuralProblems(child, `${path}.${name}`));
  if (schema.items) problems.push(...structuralProblems(schema.items, `${path}[]`));
  return problems;
}

describe('AppKindCrd', () => {
  const crd = crdOf(SAMPLE_KIND);
  const version = crd.spec.versions[0]!;
  const schema = version.schema.openAPIV3Schema;
  const spec = schema.properties!.spec!.properties!;
  const status = schema.properties!.status!.properties!;

  test('names the kind as the walkthrough did', () => {
    expect(crd.metadata.name).toBe('echoflasks.swallowlab.com');
    expect(crd.spec).toMatchObject({ group: 'swallowlab.com', scope: 'Namespaced', names: { kind: 'EchoFlask', plural: 'echoflasks', singular: 'echoflask', listKind: 'EchoFlaskList' } });
    expect(version.name).toBe('v1alpha1');
  });

  test('is a structural schema that prunes unknown fields', () => {
    expect(structuralProblems(schema, 'openAPIV3Schema')).toEqual([]);
  });

  test('refuses names whose Service "<name>-svc" would not be a DNS-1035 label, at the root of the schema', () => {
    expect(AppKindCrd.MAX_NAME_LENGTH).toBe(63 - '-svc'.length);
    const rules = (schema['x-kubernetes-validations'] as { rule: string; message: string }[]).map((r) => r.rule);
    expect(rules).toEqual([`self.metadata.name.size() <= 59`, `self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')`]);
    expect(spec.image).toMatchObject({ pattern: '^[^\\s]+$' });
  });

  test('validates size, image, port and nodePort', () => {
    expect(spec.size).toMatchObject({ type: 'integer', minimum: 0, maximum: 100, default: 1 });
    expect(spec.image).toMatchObject({ type: 'string', minLength: 1 });
    expect(spec.port).toMatchObject({ type: 'integer', minimum: 1, maximum: 65535 });
    expect(spec.nodePort).toMatchObject({ type: 'integer', minimum: 30000, maximum: 32767 });
  });

  test('spec.image carries the kind\'s image policy as a CEL rule naming the allowed images', () => {
    expect(spec.image).toMatchObject({ maxLength: 512 });
    expect(spec.image!['x-kubernetes-validations']).toEqual([
      { rule: "self == 'takeyan/flask:0.0.3'", message: 'spec.image is not allowed for this kind; allowed images: takeyan/flask:0.0.3' },
    ]);
    const wider = crdOf({ ...SAMPLE_KIND, allowedImages: ['registry.example.com/*'] }).spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!.image!;
    expect(wider['x-kubernetes-validations']).toEqual([{
      rule: "self == 'takeyan/flask:0.0.3' || self.startsWith('registry.example.com/')",
      message: 'spec.image is not allowed for this kind; allowed images: takeyan/flask:0.0.3, registry.example.com/*',
    }]);
    const any = crdOf({ ...SAMPLE_KIND, allowedImages: ['*'] }).spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!.image!;
    expect(any['x-kubernetes-validations']).toBeUndefined();
  });

  test('the size maximum is per kind', () => {
    const small = crdOf({ ...SAMPLE_KIND, maxSize: 7 });
    expect(small.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!.size!.maximum).toBe(7);
  });

  test('has status and scale subresources wired to size, replicas and selector', () => {
    expect(version.subresources.status).toEqual({});
    expect(version.subresources.scale).toEqual({ specReplicasPath: '.spec.size', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' });
  });

  test('has the printer columns Size, Ready (the condition), Pods, NodePort, Age, and Image with -o wide', () => {
    expect(version.additionalPrinterColumns.map((c) => [c.name, c.jsonPath, c.type, c.priority ?? 0])).toEqual([
      ['Size', '.spec.size', 'integer', 0],
      ['Ready', '.status.conditions[?(@.type=="Ready")].status', 'string', 0],
      ['Pods', '.status.readyReplicas', 'integer', 0],
      ['NodePort', '.status.nodePort', 'integer', 0],
      ['Age', '.metadata.creationTimestamp', 'date', 0],
      ['Image', '.spec.image', 'string', 1],
    ]);
  });

  test('has short names: the initials of a kind of two or more words, none for one word, or those the kind sets', () => {
    expect(crd.spec.names.shortNames).toEqual(['ef']);
    expect(crdOf({ ...SAMPLE_KIND, kind: 'MyDatabaseApp' }).spec.names.shortNames).toEqual(['mda']);
    expect(crdOf({ ...SAMPLE_KIND, kind: 'Takara' }).spec.names).not.toHaveProperty('shortNames');
    expect(crdOf({ ...SAMPLE_KIND, shortNames: ['echo', 'eflask'] }).spec.names.shortNames).toEqual(['echo', 'eflask']);
    expect(crdOf({ ...SAMPLE_KIND, shortNames: [] }).spec.names).not.toHaveProperty('shortNames');
    expect(crd.spec.names.categories).toEqual(['appkind']);
  });

  test('has the status schema the reconciler writes', () => {
    expect(Object.keys(status).sort()).toEqual(['conditions', 'nodePort', 'nodes', 'observedGeneration', 'readyReplicas', 'replicas', 'selector']);
    expect(status.nodes).toMatchObject({ type: 'array', items: { type: 'string' } });
    expect(status.conditions).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
    expect(Object.keys(status.conditions!.items!.properties!).sort()).toEqual(['lastTransitionTime', 'message', 'observedGeneration', 'reason', 'status', 'type']);
  });

  test('conditions have the schema of metav1.Condition: its required fields, bounds, patterns and enum', () => {
    const condition = status.conditions!.items!;
    const fields = condition.properties!;
    expect(condition.required).toEqual(['lastTransitionTime', 'message', 'reason', 'status', 'type']);
    expect(fields.lastTransitionTime).toMatchObject({ type: 'string', format: 'date-time' });
    expect(fields.message).toMatchObject({ type: 'string', maxLength: 32768 });
    expect(fields.observedGeneration).toMatchObject({ type: 'integer', format: 'int64', minimum: 0 });
    expect(fields.reason).toMatchObject({ type: 'string', minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' });
    expect(fields.status).toMatchObject({ type: 'string', enum: ['True', 'False', 'Unknown'] });
    expect(fields.type).toMatchObject({ type: 'string', maxLength: 316 });
    const type = new RegExp(fields.type!.pattern as string);
    for (const ok of ['Ready', 'Progressing', 'Degraded', 'example.com/Ready']) expect(type.test(ok)).toBe(true);
    for (const bad of ['', 'Not Ready', '-Ready', 'Example.com/Ready']) expect(type.test(bad)).toBe(false);
    // Every reason the operator writes itself fits the pattern (others come from Kubernetes, which uses the same).
    const reason = new RegExp(fields.reason!.pattern as string);
    for (const r of [...Object.values(Reason), 'ApplyFailed', 'ImageNotAllowed', 'InvalidSpec', 'NameConflict', 'PruneFailed', 'ReadFailed', 'StatusUpdateFailed', 'ReplicaFailure', 'FailedCreate']) {
      expect(reason.test(r)).toBe(true);
    }
    expect(reason.test('Apply failed')).toBe(false);
  });

  test('the YAML checked in under crd/ is what the construct generates (run `npm run crd` when this fails)', () => {
    const kinds = kindsFromFile(join(root, 'examples', 'appkinds.yaml'));
    expect(kinds.map((k) => k.kind)).toEqual(['EchoFlask', 'Takara']);
    for (const kind of kinds) {
      const checkedIn = readFileSync(join(root, 'crd', crdFileName(kind)), 'utf8');
      expect(checkedIn).toBe(crdYaml(kind));
    }
  });
  test('renders every listed version with one schema, served and storage as listed; version alone when none are listed', () => {
    const kind: AppKind = { ...SAMPLE_KIND, version: 'v1beta1', versions: [{ name: 'v1alpha1', served: false }, { name: 'v1beta1' }, { name: 'v1', storage: true }] };
    const multi = crdOf(kind);
    expect(multi.spec.versions.map((v) => [v.name, (v as unknown as { served: boolean }).served, (v as unknown as { storage: boolean }).storage]))
      .toEqual([['v1alpha1', false, false], ['v1beta1', true, false], ['v1', true, true]]);
    for (const v of multi.spec.versions) expect(v.schema).toEqual(version.schema);
    expect((multi.spec as unknown as { conversion: unknown }).conversion).toEqual({ strategy: 'None' });
    expect(AppKindCrd.storageVersionOf(kind)).toBe('v1');
    expect(crd.spec.versions.map((v) => [v.name, (v as unknown as { storage: boolean }).storage])).toEqual([['v1alpha1', true]]);
    expect(AppKindCrd.storageVersionOf(SAMPLE_KIND)).toBe('v1alpha1');
    expect(() => crdOf({ ...SAMPLE_KIND, versions: [{ name: 'v1' }, { name: 'v1alpha1' }] })).toThrow(/AppKind EchoFlask: versions has no storage versions/);
  });
});
