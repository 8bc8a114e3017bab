// The release as a user installs it: `npm run release` writes release/, `kubectl apply -f
// release/install.yaml` installs the operator on a cluster (here the local control plane with a real
// node, so the operator runs as the pod install.yaml describes, from the image archive the release
// wrote), it reconciles the walkthrough's CR; a kind added to its ConfigMap is served after `npm run
// kinds`, without a restart; a bad edit is reported on the ConfigMap and the kinds served stay; and
// `kubectl delete -f` removes all of it. Needs kubectl on PATH, podman/buildah, root and Linux (the
// real node). A control plane of its own: the operator watches all namespaces.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import type { KubeConfig, KubernetesObject, V1ConfigMap, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { loadEchoStandIn } from '../../tools/echo-image.js';
import { eventually, nothingLeft } from './cluster.js';
import { PODMAN_ENV } from './operator-container.js';
import { getLocal } from './real-node-pods.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const log = (line: string): void => void process.stderr.write(`${line}\n`);
// A tag of its own: the container storage is the machine's, shared with other checkouts' builds.
const IMAGE = 'appkind-operator:0.1.0-release-test';
const OPERATOR = { namespace: 'appkind-system', name: 'appkind-operator' };
const KINDS_MAP = { namespace: OPERATOR.namespace, name: 'appkind-operator-kinds' };
const TAKARA = { group: 'maho.takara.org', version: 'v1alpha1', kind: 'Takara', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'takara' };

jest.setTimeout(900_000);

type Obj = KubernetesObject & { spec?: Record<string, unknown> };
type Cr = Obj & { status?: { nodes?: string[]; nodePort?: number; conditions?: { type: string; status: string }[] } };

let scratch: string;
let out: string;
let cp: ControlPlane;
let kc: KubeConfig;
let rest: RestClient;
let installed: KubernetesObject[];

/** kubectl as a user runs it, against the control plane; resolves with its output, rejects with it. */
async function kubectl(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await exec('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args], { maxBuffer: 16 * 1024 * 1024 });
    return `${stdout}${stderr}`;
  } catch (e) {
    const { stdout, stderr, message } = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')} failed: ${message}\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

/** An npm script of the repository, as a user runs it with the control plane's kubeconfig. */
async function npmRun(script: string, ...args: string[]): Promise<string> {
  const { stdout } = await exec('npm', ['run', '-s', script, '--', ...args], {
    cwd: root,
    env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

const crOf = (apiVersion: string, kind: string, namespace: string, name: string) => ({ apiVersion, kind, metadata: { namespace, name } });
const deploymentOf = (namespace: string, name: string) => rest.get<V1Deployment & KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name } });
const kindsMap = () => rest.get<V1ConfigMap & KubernetesObject>({ apiVersion: 'v1', kind: 'ConfigMap', metadata: KINDS_MAP });
const ready = (cr: Cr | undefined) => cr?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function operatorPod(): Promise<V1Pod> {
  const pods = await rest.list<V1Pod & KubernetesObject>('v1', 'Pod', OPERATOR.namespace, 'app.kubernetes.io/name=appkind-operator');
  const live = pods.items.filter((p) => !p.metadata?.deletionTimestamp);
  if (live.length !== 1) throw new Error(`expected one operator pod, found ${live.map((p) => p.metadata?.name).join(', ') || 'none'}`);
  return live[0]!;
}

/** Writes the kinds ConfigMap's kinds.yaml as `kubectl edit` would. */
async function editKinds(edit: (kinds: Record<string, unknown>[]) => Record<string, unknown>[]): Promise<void> {
  const current = parse((await kindsMap())!.data!['kinds.yaml']!) as { kinds: Record<string, unknown>[] };
  const file = join(scratch, 'kinds-configmap.yaml');
  writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: KINDS_MAP, data: { 'kinds.yaml': stringify({ kinds: edit(current.kinds) }) } }));
  await kubectl('apply', '-f', file);
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'appkind-release-'));
  out = join(scratch, 'release');
  // The one command, as a user runs it (the library's bindings aside: they take minutes and are checked by the consumer tests).
  await exec('npm', ['run', '-s', 'release', '--', '--no-packages', '--image', IMAGE, '--out', out], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  installed = parseAllDocuments(readFileSync(join(out, 'install.yaml'), 'utf8')).map((d) => d.toJS() as KubernetesObject);
  cp = await ControlPlane.start({ realNode: true, log });
  kc = cp.kubeConfig();
  rest = new RestClient(kc);
  await loadEchoStandIn(cp, log);
});

afterAll(async () => {
  rest?.close();
  await cp?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  // The tags the release made in the machine's container storage (its layers stay cached).
  await exec('podman', ['rmi', '--ignore', IMAGE, `docker.io/library/${IMAGE}`], { env: { ...process.env, ...PODMAN_ENV } }).catch(() => undefined);
});

describe('npm run release', () => {
  test('writes install.yaml naming the image, the image archive, the Helm chart, the npm tarball, checksums and a summary', () => {
    const files = readFileSync(join(out, 'SHA256SUMS'), 'utf8').trim().split('\n').map((l) => l.split('  ')[1]).sort();
    expect(files).toEqual(['SUMMARY.txt', 'appkind-operator-0.1.0.oci.tar', 'appkind-operator-0.1.0.tgz', 'cdk8s-appkind-0.1.0.tgz', 'install.yaml', 'kinds.yaml'].sort());
    expect(installed.map((o) => o.kind)).toEqual(expect.arrayContaining(['CustomResourceDefinition', 'Namespace', 'ServiceAccount', 'ConfigMap', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment']));
    const deployment = installed.find((o) => o.kind === 'Deployment') as V1Deployment;
    expect(deployment.spec!.template.spec!.containers[0]!.image).toBe(IMAGE);
    // Its kinds, in the ConfigMap the operator mounts.
    const configMap = installed.find((o) => o.kind === 'ConfigMap') as V1ConfigMap;
    expect((parse(configMap.data!['kinds.yaml']!) as { kinds: { kind: string }[] }).kinds.map((k) => k.kind)).toEqual(['EchoFlask']);
  });

  test('the image archive loads under the name install.yaml gives (as a kubelet resolves it)', async () => {
    expect(await cp.loadImageArchive(join(out, 'appkind-operator-0.1.0.oci.tar'))).toBe(`docker.io/library/${IMAGE}`);
  });
});

describe('the release on a cluster', () => {
  let walkthrough: string;

  test('kubectl apply -f install.yaml installs a working operator: it runs as the pod described, and reconciles the walkthrough CR until the app answers', async () => {
    const applied = await kubectl('apply', '-f', join(out, 'install.yaml'));
    expect(applied.trim().split('\n')).toHaveLength(installed.length);
    await eventually('the operator Deployment has a ready pod', async () => (await deploymentOf(OPERATOR.namespace, OPERATOR.name))?.status?.readyReplicas === 1, 240_000);

    walkthrough = 'walkthrough';
    await kubectl('create', 'namespace', walkthrough);
    await kubectl('apply', '-n', walkthrough, '-f', join(root, 'examples', 'example-echoflask.yaml'));
    const cr = () => rest.get<Cr>(crOf('swallowlab.com/v1alpha1', 'EchoFlask', walkthrough, 'example-echoflask'));
    await eventually('the CR is Ready with 3 pods in status.nodes', async () => {
      const now = await cr();
      return ready(now) && now?.status?.nodes?.length === 3;
    }, 240_000);
    const nodePort = (await cr())!.status!.nodePort!;
    await eventually('the app answers on 127.0.0.1:<nodePort>', async () => (await getLocal(nodePort, '/api/echo?Hello=World!').catch(() => ({ status: 0 }))).status === 200, 60_000);
    expect((await kubectl('get', 'echoflask', '-n', walkthrough)).split('\n')[0]).toMatch(/^NAME\s+SIZE\s+READY\s+PODS\s+NODEPORT\s+AGE/);
  });

  test('a kind added to the ConfigMap is served after `npm run kinds` installs its CRD and RBAC, without a restart of the operator', async () => {
    const before = await operatorPod();
    await editKinds((kinds) => [...kinds, TAKARA]);
    const output = await npmRun('kinds');
    expect(output).toBe('');
    expect(await rest.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'takaras.maho.takara.org' } })).toBeDefined();

    await rest.apply({ ...crOf('maho.takara.org/v1alpha1', 'Takara', walkthrough, 'example-takara'), spec: { size: 2 } }, 'test-user');
    // The kubelet refreshes a mounted ConfigMap within about a minute; then the operator serves the kind.
    await eventually('the Takara CR is Ready with 2 pods', async () => {
      const cr = await rest.get<Cr>(crOf('maho.takara.org/v1alpha1', 'Takara', walkthrough, 'example-takara'));
      return ready(cr) && cr?.status?.nodes?.length === 2;
    }, 240_000);
    expect((await deploymentOf(walkthrough, 'example-takara-deployment'))?.spec?.replicas).toBe(2);
    const after = await operatorPod();
    expect(after.metadata!.uid).toBe(before.metadata!.uid);
    expect(after.status!.containerStatuses![0]!.restartCount).toBe(0);
  });

  test('a bad edit is reported as a Warning Event on the ConfigMap, and the kinds served before it stay served', async () => {
    await editKinds((kinds) => kinds.map((k) => (k.kind === 'Takara' ? { ...k, port: 99999 } : k)));
    // `npm run kinds` refuses it too, naming the setting.
    await expect(npmRun('kinds')).rejects.toThrow(/ConfigMap appkind-system\/appkind-operator-kinds kinds\[1\]: port is 99999/);
    await eventually('an InvalidKinds Event on the ConfigMap', async () => {
      const events = await rest.list<KubernetesObject & { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }>('v1', 'Event', KINDS_MAP.namespace);
      return events.items.some((e) => e.reason === 'InvalidKinds' && e.involvedObject?.name === KINDS_MAP.name && /port is 99999/.test(e.message ?? ''));
    }, 240_000);
    // Both kinds are still served: edits of either kind's CR are reconciled.
    await kubectl('patch', 'echoflask', 'example-echoflask', '-n', walkthrough, '--type', 'merge', '-p', '{"spec":{"size":2}}');
    await kubectl('patch', 'takara', 'example-takara', '-n', walkthrough, '--type', 'merge', '-p', '{"spec":{"size":1}}');
    await eventually('both Deployments follow their CRs', async () =>
      (await deploymentOf(walkthrough, 'example-echoflask-deployment'))?.spec?.replicas === 2 && (await deploymentOf(walkthrough, 'example-takara-deployment'))?.spec?.replicas === 1);
    await editKinds((kinds) => kinds.map((k) => (k.kind === 'Takara' ? { ...k, port: 5000 } : k)));
  });

  test('kubectl delete -f (the kinds added later, then install.yaml) removes all of it: nothing of it, and no CR, Deployment, Service or pod of theirs, is left', async () => {
    const added = parseAllDocuments(await npmRun('kinds', '--print')).map((d) => d.toJS() as KubernetesObject);
    // The README's two lines, as written (the kinds' part overlaps install.yaml: the sample kind's CRD and roles).
    await exec('bash', ['-c', 'npm run -s kinds -- --print | kubectl delete --ignore-not-found -f -'], { cwd: root, env: { ...process.env, KUBECONFIG: cp.kubeconfigPath } });
    await kubectl('delete', '--ignore-not-found', '-f', join(out, 'install.yaml'));
    await nothingLeft('nothing of the release is left', rest, [...installed, ...added], walkthrough);
  });
});
