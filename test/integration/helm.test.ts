// The Helm chart charts/appkind-operator with the helm binary tools/helm/build.sh builds:
// `helm lint --strict` passes; `helm template` with the default values gives install.yaml's objects
// (the labels and annotation Helm's conventions add aside), and with other values (image, replicas,
// resources, namespaces, kinds) the objects the OperatorBundle construct renders for them; the schema
// refuses bad values, naming the key. On the local control plane with a real node (the operator runs
// as the pod the chart describes, from the release's image archive): a release of the chart that
// npm run release generated before (the operator in appkind-system whatever the release's namespace)
// is upgraded in place and keeps its CRs and apps; a second release is refused; `helm uninstall` keeps the CRDs,
// CRs and apps; `helm install -n appkind --create-namespace` takes them over and serves them again.
// Needs Go (global setup builds helm), podman/buildah, root and Linux (the real node). A control
// plane of its own: the operator watches all namespaces.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import type { KubeConfig, KubernetesObject, V1ConfigMap, V1Deployment } from '@kubernetes/client-node';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ImagePullPolicy, type OperatorBundleProps } from 'cdk8s-appkind';
import { loadAppKinds } from 'appkind-operator/kinds';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { loadEchoStandIn } from '../../tools/echo-image.js';
import { CHART_DIR, kindValues } from '../../tools/release/chart.js';
import { bundleObjects, bundleProps, installYaml } from '../../tools/release/manifests.js';
import { eventually } from './cluster.js';
import { requireFirstUse } from './first-use.js';
import { PODMAN_ENV } from './operator-container.js';
import { getLocal } from './real-node-pods.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const log = (line: string): void => void process.stderr.write(`${line}\n`);
// A tag of its own: the container storage is the machine's, shared with other checkouts' builds.
const IMAGE = 'appkind-operator:0.1.0-helm-test';
const RELEASE = 'appkind';
/** The chart as `npm run release` wrote it before it was written as a chart: the version users upgrade from. */
const PREVIOUS_CHART = join(root, 'test', 'fixtures', 'helm', 'appkind-operator-0.1.0-previous.tgz');
const TAKARA = { group: 'maho.takara.org', version: 'v1alpha1', kind: 'Takara', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'takara' };
/** The labels of Helm's conventions, which the chart adds to every object and install.yaml has not. */
const STANDARD_LABELS = ['helm.sh/chart', 'app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/version', 'app.kubernetes.io/managed-by'];
const KEEP = 'helm.sh/resource-policy';

jest.setTimeout(1_500_000);

type Labelled = KubernetesObject & { spec?: { template?: { metadata?: { labels?: Record<string, string> } } } };
type Cr = KubernetesObject & { spec?: { size?: number }; status?: { observedGeneration?: number; nodes?: string[]; nodePort?: number; conditions?: { type: string; status: string }[] } };

let scratch: string;
let out: string;
let chart: string;
let helmPath: string;
let cp: ControlPlane | undefined;
let kc: KubeConfig;
let rest: RestClient;

/** The helm binary tools/helm/build.sh built for the tests' global setup (it says where without building). */
function helmBinary(): string {
  const path = execFileSync('bash', [join(root, 'tools', 'helm', 'build.sh'), '--print-path'], { encoding: 'utf8' }).trim();
  if (!existsSync(path)) {
    // Global setup builds it on first use (first-use.ts); this says why it could not.
    requireFirstUse('helm');
    throw new Error(`helm is not built (no ${path}): run \`npm run helm:build\` to see why`);
  }
  return path;
}

/** helm as a user runs it (its own config and cache folders); resolves with its output, rejects with it. */
async function helm(...args: string[]): Promise<string> {
  const env = { ...process.env, HELM_CONFIG_HOME: join(scratch, 'helm', 'config'), HELM_CACHE_HOME: join(scratch, 'helm', 'cache'), HELM_DATA_HOME: join(scratch, 'helm', 'data') };
  const kube = cp ? ['--kubeconfig', cp.kubeconfigPath] : [];
  try {
    const { stdout, stderr } = await exec(helmPath, [...args, ...kube], { env, maxBuffer: 64 * 1024 * 1024 });
    return `${stdout}${stderr}`;
  } catch (e) {
    const { stdout, stderr, message } = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`helm ${args.join(' ')} failed: ${message}\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

const keyOf = (o: KubernetesObject) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;

/**
 * The chart's objects less what Helm's conventions add: the standard labels install.yaml's object
 * lacks (on the object and its pod template) and the CRDs' keep annotation.
 */
function withoutHelmMarks(objects: KubernetesObject[], expected: KubernetesObject[]): KubernetesObject[] {
  const byKey = new Map(expected.map((o) => [keyOf(o), o as Labelled]));
  const strip = (labels: Record<string, string> | undefined, theirs: Record<string, string> | undefined) => {
    if (!labels) return undefined;
    const kept = Object.fromEntries(Object.entries(labels).filter(([k]) => !STANDARD_LABELS.includes(k) || theirs?.[k] !== undefined));
    return Object.keys(kept).length > 0 ? kept : undefined;
  };
  return objects.map((o) => {
    const copy = structuredClone(o) as Labelled;
    const theirs = byKey.get(keyOf(o));
    copy.metadata!.labels = strip(copy.metadata!.labels, theirs?.metadata?.labels);
    if (copy.metadata!.labels === undefined) delete copy.metadata!.labels;
    const template = copy.spec?.template?.metadata;
    if (template?.labels) template.labels = strip(template.labels, theirs?.spec?.template?.metadata?.labels);
    if (copy.metadata!.annotations) {
      delete copy.metadata!.annotations[KEEP];
      if (Object.keys(copy.metadata!.annotations).length === 0) delete copy.metadata!.annotations;
    }
    return copy;
  });
}

/** Objects as comparable values: sorted by kind, namespace and name; the kinds ConfigMap's file parsed. */
function canonical(objects: KubernetesObject[]): unknown[] {
  return [...objects]
    .sort((a, b) => keyOf(a).localeCompare(keyOf(b)))
    .map((o) => {
      const copy = JSON.parse(JSON.stringify(o)) as KubernetesObject & { data?: Record<string, unknown> };
      if (o.kind === 'ConfigMap' && copy.data?.['kinds.yaml']) copy.data['kinds.yaml'] = parse(copy.data['kinds.yaml'] as string);
      return copy;
    });
}

const documents = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as KubernetesObject).filter(Boolean);

/** `helm template` of a chart with helm's arguments; its objects. */
async function template(path: string, ...args: string[]): Promise<KubernetesObject[]> {
  return documents(await helm('template', RELEASE, path, ...args));
}

/** The kinds values for a kinds file (and other settings, such as APPKIND_KIND_GROUPS), as a user renders them. */
async function kindsValues(kindsFile: string | undefined, file: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const config = kindsFile ? { APPKIND_CONFIG: kindsFile } : {};
  const { stdout } = await exec('npm', ['run', '-s', 'kinds', '--', '--helm-values'], { cwd: root, env: { ...process.env, ...config, ...env }, maxBuffer: 64 * 1024 * 1024 });
  writeFileSync(file, stdout);
  return file;
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'appkind-helm-'));
  out = join(scratch, 'release');
  helmPath = helmBinary();
  // The one command, as a user runs it (the library's bindings aside: they take minutes and are checked by the consumer tests).
  await exec('npm', ['run', '-s', 'release', '--', '--no-packages', '--image', IMAGE, '--out', out], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  chart = join(out, 'appkind-operator-0.1.0.tgz');
});

afterAll(async () => {
  rest?.close();
  await cp?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  await exec('podman', ['rmi', '--ignore', IMAGE, `docker.io/library/${IMAGE}`], { env: { ...process.env, ...PODMAN_ENV } }).catch(() => undefined);
});

describe('the chart charts/appkind-operator', () => {
  const installed = () => documents(installYaml({}));

  test('helm lint --strict passes on the chart folder and on the release\'s archive', async () => {
    for (const path of [CHART_DIR, chart]) expect(await helm('lint', '--strict', path)).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  test('helm template with the default values gives the objects of install.yaml, less the Namespace --create-namespace makes', async () => {
    const expected = installed();
    const objects = await template(CHART_DIR, '--namespace', 'appkind-system');
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(['CustomResourceDefinition', 'ConfigMap', 'ClusterRole', 'Deployment', 'ValidatingAdmissionPolicy']));
    expect(objects.some((o) => o.kind === 'Namespace')).toBe(false);
    const withoutNamespace = expected.filter((o) => o.kind !== 'Namespace');
    expect(objects).toHaveLength(withoutNamespace.length);
    expect(canonical(withoutHelmMarks(objects, expected))).toEqual(canonical(withoutNamespace));
    // createNamespace renders it as install.yaml does (as the generated chart did).
    const all = await template(CHART_DIR, '--namespace', 'appkind-system', '--set', 'createNamespace=true');
    expect(canonical(withoutHelmMarks(all, expected))).toEqual(canonical(expected));
  });

  test('every object carries the standard labels, and the CRDs helm.sh/resource-policy: keep unless crds.keep is false', async () => {
    const objects = await template(CHART_DIR, '--namespace', 'appkind');
    for (const o of objects) {
      expect(Object.keys(o.metadata!.labels ?? {})).toEqual(expect.arrayContaining(STANDARD_LABELS));
      expect(o.metadata!.labels).toMatchObject({ 'app.kubernetes.io/instance': RELEASE, 'app.kubernetes.io/managed-by': 'Helm', 'helm.sh/chart': 'appkind-operator-0.1.0', 'app.kubernetes.io/version': '0.1.0' });
    }
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
    // The AppKind API's and the sample kind's.
    expect(crds.map((o) => o.metadata!.name)).toEqual(['appkinds.appkind.io', 'echoflasks.swallowlab.com']);
    expect(crds.map((o) => o.metadata!.annotations?.[KEEP])).toEqual(['keep', 'keep']);
    const dropped = await template(CHART_DIR, '--namespace', 'appkind', '--set', 'crds.keep=false');
    expect(dropped.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata!.annotations?.[KEEP])).toEqual([undefined, undefined]);
  });

  test('the release\'s namespace is the operator\'s: every namespaced object and the admission policies\' service account name it', async () => {
    const objects = await template(CHART_DIR, '--namespace', 'appkind');
    const namespaced = objects.filter((o) => o.metadata!.namespace !== undefined);
    expect(namespaced.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'NetworkPolicy', 'Role', 'RoleBinding', 'Service', 'ServiceAccount']);
    expect(new Set(namespaced.map((o) => o.metadata!.namespace))).toEqual(new Set(['appkind']));
    expect(JSON.stringify(objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy'))).toContain("'system:serviceaccount:appkind:appkind-operator'");
    expect(JSON.stringify(objects)).not.toContain('appkind-system');
  });

  test('helm template with other image, replicas, resources, namespaces, AppKind selector and kinds gives what the construct renders for them', async () => {
    const kindsFile = join(root, 'examples', 'real-apps.yaml');
    const props: OperatorBundleProps = {
      kinds: loadAppKinds({ APPKIND_CONFIG: kindsFile }),
      image: 'registry.example.com/appkind-operator:9.9.9',
      imagePullPolicy: ImagePullPolicy.ALWAYS,
      replicas: 2,
      resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
      namespace: 'ops',
      createNamespace: false,
      watchNamespaces: ['team-a', 'team-b'],
      appKindSelector: 'team in (payments,billing)',
    };
    const values = join(scratch, 'values.yaml');
    writeFileSync(values, stringify({ ...props, kinds: undefined, namespace: undefined }));
    const objects = await template(CHART_DIR, '--namespace', 'ops', '-f', values, '-f', await kindsValues(kindsFile, join(scratch, 'real-apps.values.yaml')));
    const expected = bundleObjects(props);
    // The four kinds' and the AppKind API's.
    expect(objects.filter((o) => o.kind === 'CustomResourceDefinition')).toHaveLength(5);
    expect(objects.filter((o) => o.kind === 'Role' && o.metadata!.name === 'appkind-operator').map((o) => o.metadata!.namespace)).toEqual(['team-a', 'team-b']);
    expect(canonical(withoutHelmMarks(objects, expected))).toEqual(canonical(expected));
  });

  test('appKindSelector none gives what the construct renders for it: no ClusterRole or binding for AppKinds, their CRD kept', async () => {
    const objects = await template(CHART_DIR, '--namespace', 'appkind-system', '--set', 'appKindSelector=none');
    const expected = bundleObjects({ ...bundleProps({}), appKindSelector: 'none', createNamespace: false });
    const names = (kind: string) => objects.filter((o) => o.kind === kind).map((o) => o.metadata!.name);
    expect(names('ClusterRole')).not.toContain('appkind-operator-appkinds');
    expect(names('ClusterRoleBinding')).not.toContain('appkind-operator-appkinds');
    expect(names('CustomResourceDefinition')).toContain('appkinds.appkind.io');
    expect(canonical(withoutHelmMarks(objects, expected))).toEqual(canonical(expected));
  });

  test('monitoring.enabled adds what install.yaml --monitoring adds, in the release\'s namespace; selectorLabels label the ServiceMonitor and PrometheusRule; dashboard=false leaves the dashboard out', async () => {
    const expected = documents(installYaml({}, undefined, true));
    const objects = await template(CHART_DIR, '--namespace', 'appkind-system', '--set', 'createNamespace=true', '--set', 'monitoring.enabled=true');
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(['ServiceMonitor', 'PrometheusRule']));
    expect(canonical(withoutHelmMarks(objects, expected))).toEqual(canonical(expected));
    // The alerts keep Prometheus' own templates, untouched by Helm's.
    expect(JSON.stringify(objects.find((o) => o.kind === 'PrometheusRule'))).toContain('{{ $labels.kind }}');

    const elsewhere = await template(CHART_DIR, '--namespace', 'mon', '--set', 'monitoring.enabled=true', '--set', 'monitoring.selectorLabels.release=kube-prometheus-stack', '--set', 'monitoring.dashboard=false');
    const added = elsewhere.filter((o) => ['ServiceMonitor', 'PrometheusRule'].includes(o.kind!) || o.metadata!.name === 'appkind-operator-dashboard');
    expect(added.map((o) => `${o.kind}/${o.metadata!.namespace}`).sort()).toEqual(['PrometheusRule/mon', 'ServiceMonitor/mon']);
    for (const o of added) expect(o.metadata!.labels).toMatchObject({ release: 'kube-prometheus-stack', 'app.kubernetes.io/instance': RELEASE });
    expect(JSON.stringify(added)).not.toContain('appkind-chart-stand-in-namespace');
    expect(JSON.stringify(added.find((o) => o.kind === 'PrometheusRule'))).toContain('namespace=\\"mon\\"');
    // Off by default.
    expect((await template(CHART_DIR, '--namespace', 'mon')).some((o) => o.kind === 'ServiceMonitor')).toBe(false);
  });

  test('the schema refuses a value of the wrong type and a mistyped key, naming it', async () => {
    await expect(template(CHART_DIR, '--set', 'replicas=two')).rejects.toThrow(/values don't meet the specifications of the schema[\s\S]*replicas[\s\S]*(integer|number)/);
    await expect(template(CHART_DIR, '--set', 'replica=2')).rejects.toThrow(/additional propert(y|ies) 'replica' not allowed/);
    await expect(template(CHART_DIR, '--set', 'imagePullPolicy=Sometimes')).rejects.toThrow(/imagePullPolicy/);
    await expect(template(CHART_DIR, '--set', 'resources.limits.memory=lots')).rejects.toThrow(/resources\/limits\/memory/);
  });

  test('kinds edited without rendering kindObjects again are refused, naming the command that renders them', async () => {
    const values = join(scratch, 'edited.yaml');
    writeFileSync(values, stringify({ kinds: [{ ...TAKARA, plural: 'takaras' }] }));
    await expect(template(CHART_DIR, '-f', values)).rejects.toThrow(/kinds differ from the kinds their CRDs, rules and policies \(kindObjects\) were rendered for: render both with APPKIND_CONFIG=<your kinds file> npm run -s kinds -- --helm-values/);
  });

  test('kindGroups rendered with npm run kinds give what the construct renders for them; given alone they are refused, naming that command', async () => {
    const kindGroups = ['apps.example.com', 'team.example.org'];
    const groups = await kindsValues(undefined, join(scratch, 'groups.values.yaml'), { APPKIND_KIND_GROUPS: kindGroups.join(',') });
    const objects = await template(CHART_DIR, '--namespace', 'appkind-system', '-f', groups);
    const expected = bundleObjects({ kinds: loadAppKinds({}), kindGroups, createNamespace: false });
    expect(objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata!.name)).toEqual(
      expect.arrayContaining(['appkind-operator-crds', 'appkind-operator-appkind-crds', 'appkind-operator-appkind-children']),
    );
    expect(objects.filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata!.name)).toEqual(expect.arrayContaining(['appkind-operator-crds', 'apps.example.com-edit']));
    expect(canonical(withoutHelmMarks(objects, expected))).toEqual(canonical(expected));
    await expect(template(CHART_DIR, '--set', 'kindGroups={apps.example.com}')).rejects.toThrow(
      /kindGroups differ from the kind groups the operator's rules and admission policies \(kindObjects\) were rendered for: render both with APPKIND_KIND_GROUPS=/,
    );
  });
});

describe('the chart on a cluster', () => {
  const walkthrough = 'walkthrough';
  const echoflask = { apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', metadata: { namespace: walkthrough, name: 'example-echoflask' } };
  const takara = { apiVersion: 'maho.takara.org/v1alpha1', kind: 'Takara', metadata: { namespace: walkthrough, name: 'example-takara' } };
  const crds = ['echoflasks.swallowlab.com', 'takaras.maho.takara.org'];
  const ready = (cr: Cr | undefined) => cr?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const deploymentOf = (namespace: string, name: string) => rest.get<V1Deployment & KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name } });
  const operatorReady = (namespace: string) =>
    eventually(`the operator Deployment in ${namespace} has a ready pod of the current template`, async () => {
      const d = await deploymentOf(namespace, 'appkind-operator');
      return d?.status?.readyReplicas === 1 && d.status.updatedReplicas === 1 && d.status.replicas === 1 && d.status.observedGeneration === d.metadata?.generation;
    }, 300_000);
  /** The CR is Ready with `size` pods, as the operator reports them. */
  const converged = (cr: KubernetesObject, size: number) =>
    eventually(`${cr.kind} ${cr.metadata!.name} is Ready with ${size} pods`, async () => {
      const now = await rest.get<Cr>(cr);
      return ready(now) && now?.status?.nodes?.length === size && now.status.observedGeneration === now.metadata?.generation;
    }, 300_000);
  const resize = async (cr: KubernetesObject, size: number) => {
    await rest.apply({ ...cr, spec: { size } }, 'test-user');
    await converged(cr, size);
  };
  const uidOf = async (o: KubernetesObject) => (await rest.get(o))?.metadata?.uid;
  const appsOf = () => [deploymentOf(walkthrough, 'example-echoflask-deployment'), deploymentOf(walkthrough, 'example-takara-deployment')];
  let kindsFile: string;
  let kept: (string | undefined)[];

  beforeAll(async () => {
    cp = await ControlPlane.start({ realNode: true, log });
    kc = cp.kubeConfig();
    rest = new RestClient(kc);
    await loadEchoStandIn(cp, log);
    expect(await cp.loadImageArchive(join(out, 'appkind-operator-0.1.0.oci.tar'))).toBe(`docker.io/library/${IMAGE}`);
    const kinds = join(scratch, 'kinds.yaml');
    writeFileSync(kinds, stringify({ kinds: [...loadAppKinds({}), TAKARA] }));
    kindsFile = await kindsValues(kinds, join(scratch, 'kinds.values.yaml'));
  });

  test('a release of the generated chart (the operator in appkind-system) reconciles the walkthrough CR until the app answers', async () => {
    // As its docs said: no -n (Helm's record in default), the chart's own Namespace appkind-system.
    // Only this version's operator image is built here, and it watches more than the previous rules
    // grant (PodDisruptionBudgets, NetworkPolicies): the previous chart gets this version's rules.
    const previous = join(scratch, 'previous.values.yaml');
    writeFileSync(previous, stringify({ image: IMAGE, kindObjects: { rules: kindValues(loadAppKinds({})).kindObjects.rules } }));
    expect(await helm('install', RELEASE, PREVIOUS_CHART, '-f', previous)).toMatch(/STATUS: deployed/);
    await operatorReady('appkind-system');
    await rest.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: walkthrough } }, 'test-user');
    const cr = parse(readFileSync(join(root, 'examples', 'example-echoflask.yaml'), 'utf8')) as KubernetesObject;
    await rest.apply({ ...cr, metadata: { ...cr.metadata, namespace: walkthrough } }, 'test-user');
    await converged(echoflask, 3);
    const nodePort = (await rest.get<Cr>(echoflask))!.status!.nodePort!;
    await eventually('the app answers on 127.0.0.1:<nodePort>', async () => (await getLocal(nodePort, '/api/echo?Hello=World!').catch(() => ({ status: 0 }))).status === 200, 60_000);
  });

  test('helm upgrade to this chart is refused where it would move the operator, naming the values that keep it in place', async () => {
    // A value given, as an upgrade usually has: without any, helm upgrade reuses the previous release's values.
    await expect(helm('upgrade', RELEASE, chart, '--set', `image=${IMAGE}`)).rejects.toThrow(/release appkind runs the operator in namespace appkind-system; this upgrade would move it to default. To keep it where it is, add --set namespace=appkind-system \(and --set createNamespace=true/);
  });

  test('helm upgrade with those values keeps the CR and its app, and the upgraded operator serves the CR and an added kind', async () => {
    const before = [await uidOf(echoflask), await uidOf({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: walkthrough, name: 'example-echoflask-deployment' } })];
    expect(await helm('upgrade', RELEASE, chart, '--set', 'namespace=appkind-system', '--set', 'createNamespace=true', '-f', kindsFile)).toMatch(/STATUS: deployed/);
    await operatorReady('appkind-system');
    expect([await uidOf(echoflask), await uidOf({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: walkthrough, name: 'example-echoflask-deployment' } })]).toEqual(before);
    const configMap = await rest.get<V1ConfigMap & KubernetesObject>({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'appkind-system', name: 'appkind-operator-kinds' } });
    expect((parse(configMap!.data!['kinds.yaml']!) as { kinds: { kind: string }[] }).kinds.map((k) => k.kind)).toEqual(['EchoFlask', 'Takara']);
    await resize(echoflask, 2);
    await resize(takara, 2);
    const crd = await rest.get<KubernetesObject>({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: crds[0] } });
    expect(crd?.metadata?.annotations?.[KEEP]).toBe('keep');
  });

  test('a second release, in another namespace, is refused: the chart is installed once a cluster', async () => {
    await expect(helm('install', 'other', chart, '-n', 'other', '--create-namespace')).rejects.toThrow(
      /the appkind operator is already installed in this cluster by release appkind in namespace default \(ClusterRoleBinding appkind-operator-metrics-auth\)/,
    );
    await expect(helm('install', 'bad', chart, '-n', 'other', '--set', 'replicas=two')).rejects.toThrow(/replicas/);
  });

  test('helm uninstall keeps the CRDs, the CRs and their apps; the operator and its RBAC go', async () => {
    const apps = await Promise.all(appsOf());
    expect(apps.map((d) => d?.spec?.replicas)).toEqual([2, 2]);
    kept = [await uidOf(echoflask), await uidOf(takara), ...apps.map((d) => d!.metadata!.uid)];
    await helm('uninstall', RELEASE);
    await eventually('the operator and its ClusterRole are gone', async () =>
      (await deploymentOf('appkind-system', 'appkind-operator')) === undefined && (await rest.get({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'appkind-operator' } })) === undefined, 120_000);
    for (const name of crds) expect(await rest.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } })).toBeDefined();
    // The garbage collector had time to act on anything it would delete: the Namespace appkind-system is gone.
    await eventually('the namespace appkind-system is gone', async () => (await rest.get({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'appkind-system' } })) === undefined, 240_000);
    const now = await Promise.all(appsOf());
    expect([await uidOf(echoflask), await uidOf(takara), ...now.map((d) => d?.metadata?.uid)]).toEqual(kept);
  });

  test('helm install -n appkind --create-namespace takes the kept CRDs over and serves their CRs again; its uninstall keeps them too', async () => {
    // The kept CRDs name the uninstalled release; Helm adopts them only when told.
    await expect(helm('install', RELEASE, chart, '-n', 'appkind', '--create-namespace', '-f', kindsFile)).rejects.toThrow(/CustomResourceDefinition "(appkinds.appkind.io|echoflasks.swallowlab.com|takaras.maho.takara.org)" .*exists and cannot be imported into the current release/);
    expect(await helm('install', RELEASE, chart, '-n', 'appkind', '--create-namespace', '--take-ownership', '-f', kindsFile)).toMatch(/STATUS: deployed/);
    await operatorReady('appkind');
    await resize(echoflask, 1);
    await resize(takara, 1);
    expect((await helm('list', '-n', 'appkind', '--short')).trim()).toBe(RELEASE);
    await helm('uninstall', RELEASE, '-n', 'appkind');
    await eventually('the operator in appkind is gone', async () => (await deploymentOf('appkind', 'appkind-operator')) === undefined, 120_000);
    for (const name of crds) expect(await rest.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } })).toBeDefined();
    expect([await uidOf(echoflask), await uidOf(takara), ...(await Promise.all(appsOf())).map((d) => d?.metadata?.uid)]).toEqual(kept);
  });
});
