// The release's Helm chart (tools/release/chart.ts) with the helm binary tools/helm/build.sh builds:
// `helm lint` passes; `helm template` with the default values gives install.yaml's objects, and with
// other values (image, replicas, resources, namespaces, kinds) the objects the OperatorBundle construct
// renders for them; `helm install` on the local control plane (a real node, so the operator runs as the
// pod the chart describes, from the release's image archive) gives an operator that reconciles the
// walkthrough's CR, `helm upgrade` with another kind's values serves it, and `helm uninstall` leaves
// nothing of it. Needs Go (global setup builds helm), podman/buildah, root and Linux (the real node). A control plane of its own: the operator watches all namespaces.
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
import { bundleObjects } from '../../tools/release/manifests.js';
import { eventually, nothingLeft } from './cluster.js';
import { requireFirstUse } from './first-use.js';
import { PODMAN_ENV } from './operator-container.js';
import { getLocal } from './real-node-pods.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const log = (line: string): void => void process.stderr.write(`${line}\n`);
// A tag of its own: the container storage is the machine's, shared with other checkouts' builds.
const IMAGE = 'appkind-operator:0.1.0-helm-test';
const RELEASE = 'appkind';
const OPERATOR = { namespace: 'appkind-system', name: 'appkind-operator' };
const TAKARA = { group: 'maho.takara.org', version: 'v1alpha1', kind: 'Takara', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'takara' };

jest.setTimeout(900_000);

type Cr = KubernetesObject & { status?: { nodes?: string[]; nodePort?: number; conditions?: { type: string; status: string }[] } };

let scratch: string;
let out: string;
let chart: string;
let helmPath: string;
let installed: KubernetesObject[];
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

/** Objects as comparable values: sorted by kind, namespace and name; the kinds ConfigMap's file parsed. */
function canonical(objects: KubernetesObject[]): unknown[] {
  const key = (o: KubernetesObject) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
  return [...objects]
    .sort((a, b) => key(a).localeCompare(key(b)))
    .map((o) => {
      const copy = JSON.parse(JSON.stringify(o)) as KubernetesObject & { data?: Record<string, unknown> };
      if (o.kind === 'ConfigMap' && copy.data?.['kinds.yaml']) copy.data['kinds.yaml'] = parse(copy.data['kinds.yaml'] as string);
      return copy;
    });
}

const documents = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as KubernetesObject).filter(Boolean);

/** `helm template` of the chart with values files; its objects. */
async function template(...valuesFiles: string[]): Promise<KubernetesObject[]> {
  return documents(await helm('template', RELEASE, chart, ...valuesFiles.flatMap((f) => ['-f', f])));
}

/** The kinds values for a kinds file, as a user renders them. */
async function kindsValues(kindsFile: string, file: string): Promise<string> {
  const { stdout } = await exec('npm', ['run', '-s', 'kinds', '--', '--helm-values'], { cwd: root, env: { ...process.env, APPKIND_CONFIG: kindsFile }, maxBuffer: 64 * 1024 * 1024 });
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
  installed = documents(readFileSync(join(out, 'install.yaml'), 'utf8'));
});

afterAll(async () => {
  rest?.close();
  await cp?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  await exec('podman', ['rmi', '--ignore', IMAGE, `docker.io/library/${IMAGE}`], { env: { ...process.env, ...PODMAN_ENV } }).catch(() => undefined);
});

describe('the Helm chart of npm run release', () => {
  test('helm lint passes on the chart archive and its folder', async () => {
    for (const path of [chart, join(out, 'chart', 'appkind-operator')]) expect(await helm('lint', path)).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  test('helm template with the default values gives the objects of install.yaml', async () => {
    const objects = await template();
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(['CustomResourceDefinition', 'Namespace', 'ConfigMap', 'ClusterRole', 'Deployment', 'ValidatingAdmissionPolicy']));
    expect(objects).toHaveLength(installed.length);
    expect(canonical(objects)).toEqual(canonical(installed));
  });

  test('helm template with other image, replicas, resources, namespaces and kinds gives what the construct renders for them', async () => {
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
    };
    const values = join(scratch, 'values.yaml');
    writeFileSync(values, stringify({ ...props, kinds: undefined }));
    const objects = await template(values, await kindsValues(kindsFile, join(scratch, 'real-apps.values.yaml')));
    const expected = bundleObjects(props);
    expect(objects.filter((o) => o.kind === 'CustomResourceDefinition')).toHaveLength(4);
    expect(objects.filter((o) => o.kind === 'Role' && o.metadata!.name === 'appkind-operator').map((o) => o.metadata!.namespace)).toEqual(['team-a', 'team-b']);
    expect(objects.some((o) => o.kind === 'Namespace')).toBe(false);
    expect(canonical(objects)).toEqual(canonical(expected));
  });

  test('kinds edited without rendering kindObjects again are refused, naming the command that renders them', async () => {
    const values = join(scratch, 'edited.yaml');
    writeFileSync(values, stringify({ kinds: [{ ...TAKARA, plural: 'takaras' }] }));
    await expect(template(values)).rejects.toThrow(/kinds differ from the kinds kindObjects was rendered for: render both with APPKIND_CONFIG=<your kinds file> npm run -s kinds -- --helm-values/);
  });
});

describe('the chart on a cluster', () => {
  const walkthrough = 'walkthrough';
  const crOf = (apiVersion: string, kind: string, name: string) => ({ apiVersion, kind, metadata: { namespace: walkthrough, name } });
  const ready = (cr: Cr | undefined) => cr?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const deploymentOf = (namespace: string, name: string) => rest.get<V1Deployment & KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name } });
  let upgraded: KubernetesObject[] = [];

  beforeAll(async () => {
    cp = await ControlPlane.start({ realNode: true, log });
    kc = cp.kubeConfig();
    rest = new RestClient(kc);
    await loadEchoStandIn(cp, log);
    expect(await cp.loadImageArchive(join(out, 'appkind-operator-0.1.0.oci.tar'))).toBe(`docker.io/library/${IMAGE}`);
  });

  test('helm install gives a working operator: it runs as the pod the chart describes and reconciles the walkthrough CR until the app answers', async () => {
    expect(await helm('install', RELEASE, chart)).toMatch(/STATUS: deployed/);
    await eventually('the operator Deployment has a ready pod', async () => (await deploymentOf(OPERATOR.namespace, OPERATOR.name))?.status?.readyReplicas === 1, 240_000);

    await rest.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: walkthrough } }, 'test-user');
    const cr = parse(readFileSync(join(root, 'examples', 'example-echoflask.yaml'), 'utf8')) as KubernetesObject;
    await rest.apply({ ...cr, metadata: { ...cr.metadata, namespace: walkthrough } }, 'test-user');
    const live = () => rest.get<Cr>(crOf('swallowlab.com/v1alpha1', 'EchoFlask', 'example-echoflask'));
    await eventually('the CR is Ready with 3 pods in status.nodes', async () => {
      const now = await live();
      return ready(now) && now?.status?.nodes?.length === 3;
    }, 240_000);
    const nodePort = (await live())!.status!.nodePort!;
    await eventually('the app answers on 127.0.0.1:<nodePort>', async () => (await getLocal(nodePort, '/api/echo?Hello=World!').catch(() => ({ status: 0 }))).status === 200, 60_000);
  });

  test('helm upgrade with the kinds values of npm run kinds -- --helm-values serves the added kind, with the same operator pod', async () => {
    const kindsFile = join(scratch, 'kinds.yaml');
    writeFileSync(kindsFile, stringify({ kinds: [...loadAppKinds({}), TAKARA] }));
    const values = await kindsValues(kindsFile, join(scratch, 'kinds.values.yaml'));
    const pod = async () => (await rest.list<KubernetesObject>('v1', 'Pod', OPERATOR.namespace, 'app.kubernetes.io/name=appkind-operator')).items.map((p) => p.metadata!.uid);
    const before = await pod();
    expect(await helm('upgrade', RELEASE, chart, '-f', values)).toMatch(/STATUS: deployed/);
    upgraded = await template(values);
    const configMap = await rest.get<V1ConfigMap & KubernetesObject>({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: OPERATOR.namespace, name: 'appkind-operator-kinds' } });
    expect((parse(configMap!.data!['kinds.yaml']!) as { kinds: { kind: string }[] }).kinds.map((k) => k.kind)).toEqual(['EchoFlask', 'Takara']);

    await rest.apply({ ...crOf('maho.takara.org/v1alpha1', 'Takara', 'example-takara'), spec: { size: 2 } }, 'test-user');
    // The kubelet refreshes a mounted ConfigMap within about a minute; then the operator serves the kind.
    await eventually('the Takara CR is Ready with 2 pods', async () => {
      const cr = await rest.get<Cr>(crOf('maho.takara.org/v1alpha1', 'Takara', 'example-takara'));
      return ready(cr) && cr?.status?.nodes?.length === 2;
    }, 240_000);
    expect(await pod()).toEqual(before);
  });

  test('helm uninstall leaves nothing of it: no object of the chart, and no CR, Deployment, Service or pod of theirs', async () => {
    await helm('uninstall', RELEASE);
    await nothingLeft('nothing of the chart is left', rest, [...installed, ...upgraded], walkthrough);
    // Nor the release's record: helm keeps each revision in a Secret (label owner=helm) of the release's namespace.
    expect((await rest.list<KubernetesObject>('v1', 'Secret', 'default', 'owner=helm')).items.map((o) => o.metadata!.name)).toEqual([]);
    expect(await helm('list', '--short')).toBe('');
  });
});
