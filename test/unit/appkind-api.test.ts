// The AppKind API's CRD and the AppKind object construct: what the API server is told to check, what
// `kubectl get appkinds` shows, and what a chart's AppKind object holds.
import { describe, expect, test } from '@jest/globals';
import { App, Chart, Testing } from 'cdk8s';
import { AppKindApiCrd, AppKindDeletionPolicy, AppKindObject, OperatorBundle } from 'cdk8s-appkind';
import { KIND_PROPERTIES } from '../../operator/kinds/schema.js';
import { kindsFromFile, loadAppKinds, SAMPLE_KIND } from 'appkind-operator/kinds';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  additionalProperties?: unknown;
  $ref?: string;
  [k: string]: unknown;
};
type Crd = {
  metadata: { name: string; namespace?: string };
  spec: {
    group: string;
    scope: string;
    names: Record<string, unknown>;
    versions: { name: string; subresources: object; schema: { openAPIV3Schema: Schema }; additionalPrinterColumns: { name: string; jsonPath: string; type: string }[] }[];
  };
};

function apiCrd(): Crd {
  const chart = Testing.chart();
  new AppKindApiCrd(chart, 'api');
  return (Testing.synth(chart) as Crd[])[0]!;
}

/** Every node of a structural schema states its type (or preserves what it holds, for the operator to judge), and no JSON-Schema-only keyword is left. */
function structuralProblems(schema: Schema, path: string): string[] {
  const problems: string[] = [];
  if (!schema.type && !schema['x-kubernetes-preserve-unknown-fields']) problems.push(`${path} has no type`);
  for (const keyword of ['$ref', 'oneOf', 'definitions']) if (keyword in schema) problems.push(`${path} has ${keyword}`);
  if (schema.properties && schema.additionalProperties !== undefined) problems.push(`${path} has properties and additionalProperties`);
  for (const [name, child] of Object.entries(schema.properties ?? {})) problems.push(...structuralProblems(child, `${path}.${name}`));
  if (schema.items) problems.push(...structuralProblems(schema.items, `${path}[]`));
  return problems;
}

describe('AppKindApiCrd', () => {
  const crd = apiCrd();
  const version = crd.spec.versions[0]!;
  const root = version.schema.openAPIV3Schema;
  const spec = root.properties!.spec!;
  const status = root.properties!.status!;

  test('is the cluster-scoped CRD appkinds.appkind.io, v1alpha1, short name ak, with a status subresource', () => {
    expect(crd.metadata.name).toBe('appkinds.appkind.io');
    expect(crd.metadata.namespace).toBeUndefined();
    expect(crd.spec).toMatchObject({ group: 'appkind.io', scope: 'Cluster', names: { kind: 'AppKind', plural: 'appkinds', singular: 'appkind', shortNames: ['ak'] } });
    expect(version).toMatchObject({ name: 'v1alpha1', subresources: { status: {} } });
  });

  test('its spec is the kinds file\'s kind: every setting, the required ones required, plus deletionPolicy Retain|Delete defaulting to Retain', () => {
    expect(Object.keys(spec.properties!).sort()).toEqual([...Object.keys(KIND_PROPERTIES), 'deletionPolicy'].sort());
    expect(spec.required).toEqual(['group', 'version', 'kind', 'image', 'port']);
    expect(root.required).toEqual(['spec']);
    expect(spec.properties!.deletionPolicy).toMatchObject({ type: 'string', enum: ['Retain', 'Delete'], default: 'Retain' });
    expect(spec.properties!.port).toMatchObject({ type: 'integer', minimum: 1, maximum: 65535 });
    expect(spec.properties!.kind!.pattern).toBe('^[A-Z][A-Za-z0-9]{0,62}$');
    expect(spec.properties!.serviceType).toMatchObject({ type: 'string', enum: ['NodePort', 'ClusterIP'] });
  });

  test('checks names the API server can check: group a DNS subdomain with a dot, plural and appName DNS labels', () => {
    const matches = (field: string, value: string) => new RegExp(spec.properties![field]!.pattern!).test(value);
    expect(matches('group', 'swallowlab.com')).toBe(true);
    expect(matches('group', 'swallowlab')).toBe(false);
    expect(matches('plural', 'echoflasks')).toBe(true);
    expect(matches('plural', 'Echo_Flasks')).toBe(false);
    expect(matches('appName', 'echo.flask')).toBe(false);
    expect(matches('image', 'takeyan/flask:0.0.3')).toBe(true);
    expect(matches('image', 'takeyan/flask 0.0.3')).toBe(false);
  });

  test('keeps group, kind and plural immutable and the name short enough to label the CRD', () => {
    expect(spec['x-kubernetes-validations']).toEqual([expect.objectContaining({ rule: expect.stringContaining('self.group == oldSelf.group') })]);
    expect(JSON.stringify(root['x-kubernetes-validations'])).toContain('self.metadata.name.size() <= 63');
  });

  test('is a structural schema: definitions inlined, typed everywhere, nested settings kept (probes, volumes)', () => {
    expect(structuralProblems(root, 'AppKind')).toEqual([]);
    expect(spec.properties!.readinessProbe!.properties!.httpGet!.properties!.path).toMatchObject({ type: 'string' });
    expect(spec.properties!.volumes!.items!.required).toEqual(['name']);
    // true or an object: kept as given, the operator's validation judges it.
    expect(spec.properties!.overrides!.properties!.env).toMatchObject({ 'x-kubernetes-preserve-unknown-fields': true });
  });

  test('status has the contract\'s fields, conditions a map list keyed by type', () => {
    expect(Object.keys(status.properties!).sort()).toEqual(
      ['conditions', 'crd', 'migration', 'observedGeneration', 'resources', 'rollout', 'servedVersions', 'storageVersion', 'storedVersions'].sort(),
    );
    // The fields of the operator's rollout summary (waves.ts), its template hash left out.
    expect(Object.keys(status.properties!.rollout!.properties!).sort()).toEqual(['updated', 'inFlight', 'waiting', 'failed', 'failedApps', 'stopped'].sort());
    expect(status.properties!.rollout!.properties!.failedApps).toMatchObject({ type: 'array', items: { type: 'string' } });
    expect(status.properties!.conditions).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
    expect(status.properties!.conditions!.items!.required).toEqual(['lastTransitionTime', 'message', 'reason', 'status', 'type']);
  });

  test('printer columns: Ready, CRD, Served, Storage, CRs, Updated, Waiting, Age; Reason and Rollout with -o wide', () => {
    const columns = version.additionalPrinterColumns.filter((c) => !('priority' in c));
    expect(columns.map((c) => [c.name, c.jsonPath])).toEqual([
      ['Ready', '.status.conditions[?(@.type=="Ready")].status'],
      ['CRD', '.status.crd'],
      ['Served', '.status.servedVersions'],
      ['Storage', '.status.storageVersion'],
      ['CRs', '.status.resources'],
      ['Updated', '.status.rollout.updated'],
      ['Waiting', '.status.rollout.waiting'],
      ['Age', '.metadata.creationTimestamp'],
    ]);
    const wide = version.additionalPrinterColumns.filter((c) => 'priority' in c);
    expect(wide.map((c) => [c.name, c.jsonPath])).toEqual([
      ['Reason', '.status.conditions[?(@.type=="Ready")].reason'],
      ['Rollout', '.status.rollout.stopped'],
    ]);
  });

  test('has no namespace even in a chart that has one', () => {
    const chart = new Chart(new App(), 'ns', { namespace: 'somewhere' });
    new AppKindApiCrd(chart, 'api');
    expect((chart.toJson()[0] as Crd).metadata.namespace).toBeUndefined();
  });
});

describe('AppKindObject', () => {
  const synth = (props: Partial<ConstructorParameters<typeof AppKindObject>[2]> = {}) => {
    const chart = new Chart(new App(), 'kinds', { namespace: 'ignored' });
    new AppKindObject(chart, 'echoflask', { appKind: SAMPLE_KIND, ...props });
    return chart.toJson()[0] as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec: Record<string, unknown> };
  };

  test('writes an appkind.io/v1alpha1 AppKind named after its CRD, spec the kind and deletionPolicy Retain', () => {
    const obj = synth();
    expect(obj).toMatchObject({ apiVersion: 'appkind.io/v1alpha1', kind: 'AppKind', metadata: { name: 'echoflasks.swallowlab.com' } });
    expect(obj.metadata.namespace).toBeUndefined();
    expect(obj.spec).toEqual({ ...SAMPLE_KIND, deletionPolicy: 'Retain' });
  });

  test('takes a name and deletionPolicy Delete', () => {
    const obj = synth({ name: 'echo', deletionPolicy: AppKindDeletionPolicy.DELETE });
    expect(obj.metadata.name).toBe('echo');
    expect(obj.spec.deletionPolicy).toBe('Delete');
  });

  test('refuses a name that cannot label the CRD, naming it and the fix', () => {
    expect(() => synth({ name: `${'a'.repeat(64)}` })).toThrow(/longer than 63 characters; give a shorter name/);
  });
});

describe('OperatorBundle and the AppKind API', () => {
  type Obj = { kind: string; metadata: { name: string }; rules?: { apiGroups?: string[]; resources?: string[]; verbs: string[] }[]; roleRef?: { name: string } };
  const objects = (props: object = {}) => {
    const chart = new Chart(new App(), 'b', { disableResourceNameHashes: true });
    new OperatorBundle(chart, 'bundle', { kinds: [SAMPLE_KIND], ...props });
    return chart.toJson() as Obj[];
  };

  test('installs the AppKind API CRD and a ClusterRole for it, bound to the operator, also when it watches some namespaces', () => {
    for (const objs of [objects(), objects({ watchNamespaces: ['shop'] })]) {
      expect(objs.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name)).toContain('appkinds.appkind.io');
      const role = objs.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'appkind-operator-appkinds')!;
      const verbs = (resource: string) => role.rules!.filter((r) => r.resources!.includes(resource)).flatMap((r) => r.verbs);
      expect(verbs('appkinds')).toEqual(expect.arrayContaining(['get', 'list', 'watch']));
      expect(verbs('appkinds/status')).toEqual(['patch']);
      expect(verbs('appkinds/finalizers')).toEqual(['update']);
      // The CRDs an AppKind declares: the -crds role, writes only with kindGroups (bundle.test).
      expect(verbs('customresourcedefinitions')).toEqual([]);
      const crds = objs.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'appkind-operator-crds')!;
      expect(crds.rules!.flatMap((r) => r.verbs).sort()).toEqual(['get', 'list', 'watch']);
      expect(role.rules!.flatMap((r) => r.verbs)).not.toContain('*');
      expect(objs.find((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'appkind-operator-appkinds')!.roleRef!.name).toBe('appkind-operator-appkinds');
    }
  });

  test('appKindApi: false leaves the API and its rights out', () => {
    const objs = objects({ appKindApi: false });
    expect(objs.some((o) => o.metadata.name === 'appkinds.appkind.io' || o.metadata.name === 'appkind-operator-appkinds')).toBe(false);
  });
});

describe('a file of AppKind objects as APPKIND_CONFIG', () => {
  const dir = mkdtempSync(join(tmpdir(), 'appkind-file-'));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const doc = (name: string, spec: string) => `apiVersion: appkind.io/v1alpha1\nkind: AppKind\nmetadata:\n  name: ${name}\nspec:\n${spec}`;

  test('examples/appkind-echoflask.yaml is read as the kinds file reads a kind (deletionPolicy left out, defaults filled in)', () => {
    const kinds = loadAppKinds({ APPKIND_CONFIG: join(import.meta.dirname, '..', '..', 'examples', 'appkind-echoflask.yaml') });
    expect(kinds).toEqual([
      { group: 'swallowlab.com', version: 'v1alpha1', kind: 'Flask', plural: 'flasks', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'flask', maxSize: 100 },
    ]);
  });

  test('several documents are several kinds; a bad spec is named by its AppKind and field, with the fix', () => {
    const two = file('two.yaml', `${doc('a', '  group: a.example.com\n  version: v1\n  kind: Alpha\n  image: a:1\n  port: 80\n')}---\n${doc('b', '  group: b.example.com\n  version: v1\n  kind: Beta\n  image: b:1\n  port: 81\n')}`);
    expect(kindsFromFile(two).map((k) => k.kind)).toEqual(['Alpha', 'Beta']);
    const bad = file('bad.yaml', doc('bad', '  group: a.example.com\n  version: v1\n  kind: Alpha\n  image: a:1\n  port: 0\n'));
    expect(() => kindsFromFile(bad)).toThrow(`${bad}: AppKind bad: spec.port is 0, not an integer from 1 to 65535; set spec.port to a number in that range`);
  });

  test('refuses a file mixing AppKinds and other documents, and a deletionPolicy other than Retain or Delete', () => {
    const mixed = file('mixed.yaml', `${doc('a', '  group: a.example.com\n  version: v1\n  kind: Alpha\n  image: a:1\n  port: 80\n')}---\nkinds: []\n`);
    expect(() => kindsFromFile(mixed)).toThrow(/document 2 is not an AppKind/);
    const policy = file('policy.yaml', doc('p', '  group: a.example.com\n  version: v1\n  kind: Alpha\n  image: a:1\n  port: 80\n  deletionPolicy: Keep\n'));
    expect(() => kindsFromFile(policy)).toThrow(/spec.deletionPolicy is "Keep"; write Retain or Delete/);
  });
});
