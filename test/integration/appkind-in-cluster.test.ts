// AppKinds under the leash, as a cluster admin installs the operator: the bundle `npx cdk8s synth`
// writes (APPKIND_KIND_GROUPS as the user sets it), applied with kubectl, and the operator running as
// the bundle's ServiceAccount with its Deployment's environment. `kubectl apply -f
// examples/appkind-echoflask.yaml` is refused, naming the setting to change, while the install does
// not allow the example's group (none allowed: RBAC refuses; another group: the -crds policy), and
// nothing is made; once it does, the same AppKind is served with no other command, a CR of its kind
// (examples/example-flask.yaml) gets its Deployment and Service, an admin cannot delete its CRD, and
// deleting the AppKind (Retain) keeps CRD, CR and app; the install's own kind in that group still
// reconciles with no AppKind left. A control plane of its own: the bundle's
// cluster-scoped objects carry the default names, and its operator watches every namespace.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import type { KubernetesObject, V1CustomResourceDefinition } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { AppKindApiCrd } from 'cdk8s-appkind';
import type { AppKindResource } from '../../operator/appkinds/types.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { waitFor } from '../../tools/controlplane/readiness.js';
import { operatorPod, podEnv, readBundle, synthBundle } from './bundle-file.js';
import { configMapFiles } from './operator-container.js';
import { OperatorProcess } from './operator-process.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(root, 'examples', 'appkind-echoflask.yaml');
const EXAMPLE_CR = join(root, 'examples', 'example-flask.yaml');
const example = parse(readFileSync(EXAMPLE, 'utf8')) as AppKindResource & { spec: { group: string; kind: string; plural: string } };
const exampleCr = parse(readFileSync(EXAMPLE_CR, 'utf8')) as KubernetesObject;
const name = example.metadata!.name!;
const crdName = `${example.spec.plural}.${example.spec.group}`;
const OTHER_GROUP = 'apps.example.com';

jest.setTimeout(300_000);

let cp: ControlPlane;
let rest: RestClient;
let scratch: string;
let operator: OperatorProcess | undefined;
/** The bundle objects by install: no kindGroups, another group, the example's group. */
const bundles: Record<'none' | 'other' | 'allowed', KubernetesObject[]> = { none: [], other: [], allowed: [] };

const eventually = (what: string, check: () => Promise<boolean>, timeoutMs = 90_000) => waitFor(what, check, { timeoutMs, intervalMs: 250 });

/** kubectl as an admin runs it; resolves with stdout, rejects with its stderr in the message. */
async function kubectl(...args: string[]): Promise<string> {
  try {
    return (await exec('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args])).stdout;
  } catch (e) {
    const { stderr, message } = e as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')} failed: ${stderr || message}`);
  }
}

const getAppKind = () => rest.get<AppKindResource>({ apiVersion: AppKindApiCrd.API_VERSION, kind: AppKindApiCrd.KIND, metadata: { name } });
const getCrd = () => rest.get<V1CustomResourceDefinition>({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: crdName } });
const ready = (ak: AppKindResource | undefined) => ak?.status?.conditions?.find((c) => c.type === 'Ready');
const child = (kind: 'Deployment' | 'Service', suffix: string) =>
  rest.get({ apiVersion: kind === 'Deployment' ? 'apps/v1' : 'v1', kind, metadata: { namespace: 'default', name: `${exampleCr.metadata!.name}-${suffix}` } });

/** CRDs labelled for an AppKind: what the operator made. */
async function labelledCrds(): Promise<string[]> {
  const crds = await rest.list<V1CustomResourceDefinition & KubernetesObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition', undefined, AppKindApiCrd.APPKIND_LABEL);
  return crds.items.map((c) => c.metadata!.name!);
}

/** Waits until the AppKind's Ready condition, for its generation, matches; returns it. */
async function readyOf(status: 'True' | 'False', reason: string, message = ''): Promise<{ status: string; reason: string; message: string }> {
  let last: AppKindResource | undefined;
  await eventually(`AppKind ${name} Ready=${status} ${reason} (last: ${JSON.stringify(last?.status)})`, async () => {
    last = await getAppKind();
    const c = ready(last);
    return last?.status?.observedGeneration === last?.metadata?.generation && c?.status === status && c.reason === reason && c.message.includes(message);
  });
  return ready(last)!;
}

/** Installs `bundle` as an admin (no kubelet runs the operator's Deployment) and runs the operator as its ServiceAccount, as that Deployment's pod would. */
async function install(bundle: KubernetesObject[]): Promise<void> {
  await operator?.stop('SIGTERM');
  await applyManifests(cp.kubeConfig(), bundle.filter((o) => o.kind !== 'Deployment'));
  const pod = operatorPod(bundle);
  const env = podEnv(pod, 'appkind-operator-0');
  const kubeconfig = await cp.serviceAccountKubeconfig(pod.namespace, pod.spec.serviceAccountName!);
  operator = await OperatorProcess.spawn({
    kubeconfig,
    env: {
      ...env,
      // The kinds ConfigMap as the kubelet mounts it; free ports instead of the pod's.
      APPKIND_CONFIG: join(configMapFiles(pod, env.APPKIND_CONFIG_MAP!, scratch), basename(env.APPKIND_CONFIG!)),
      APPKIND_METRICS_PORT: '0', APPKIND_HEALTH_PORT: '0', APPKIND_LOG_LEVEL: 'debug',
    },
  });
  await operator.waitForLog((l) => l.msg === 'appkind caches synced', 60_000);
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'appkind-appkind-in-cluster-'));
  const synth = async (key: keyof typeof bundles, groups?: string) => {
    const out = join(scratch, key);
    mkdirSync(out);
    bundles[key] = readBundle(await synthBundle(out, groups ? { APPKIND_KIND_GROUPS: groups } : {}));
  };
  [cp] = await Promise.all([ControlPlane.start(), synth('none'), synth('other', OTHER_GROUP), synth('allowed', example.spec.group)]);
  rest = new RestClient(cp.kubeConfig());
});

afterAll(async () => {
  await operator?.stop('SIGKILL');
  rest?.close();
  await cp?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('examples/appkind-echoflask.yaml applied with kubectl, the operator as the bundle\'s ServiceAccount', () => {
  test('installed without kindGroups: Ready=False, the reason names kindGroups and APPKIND_KIND_GROUPS, and no CRD is made', async () => {
    await install(bundles.none);
    expect(await kubectl('apply', '-f', EXAMPLE)).toContain(`appkind.appkind.io/${name} created`);
    const refused = await readyOf('False', 'CRDApplyFailed');
    // RBAC refuses it (the -crds ClusterRole is read only); the operator adds what to change.
    expect(refused.message).toContain('cannot patch resource "customresourcedefinitions"');
    expect(refused.message).toContain(`add ${example.spec.group} to kindGroups (OperatorBundle kindGroups, Helm value kindGroups, APPKIND_KIND_GROUPS`);
    expect(await getCrd()).toBeUndefined();
    expect(await labelledCrds()).toEqual([]);
    expect(await kubectl('describe', 'appkinds', name)).toMatch(/Warning\s+CRDApplyFailed/);
  });

  test(`installed with kindGroups ${OTHER_GROUP}: the -crds admission policy refuses the CRD, the reason names kindGroups and APPKIND_KIND_GROUPS, and no CRD is made`, async () => {
    await install(bundles.other);
    const refused = await readyOf('False', 'CRDApplyFailed', `kindGroups: ${OTHER_GROUP}`);
    expect(refused.message).toContain("ValidatingAdmissionPolicy 'appkind-operator-crds'");
    expect(refused.message).toContain("add the AppKind's group to kindGroups (OperatorBundle kindGroups, Helm value kindGroups, APPKIND_KIND_GROUPS");
    expect(await getCrd()).toBeUndefined();
    expect(await labelledCrds()).toEqual([]);
  });

  test(`installed with kindGroups ${example.spec.group}: the AppKind is Ready with no other command, its CRD labelled; a CR of its kind gets its Deployment and Service`, async () => {
    await install(bundles.allowed);
    // Applying the unchanged file again changes nothing: the install's fix alone serves the kind.
    expect(await kubectl('apply', '-f', EXAMPLE)).toContain(`appkind.appkind.io/${name} unchanged`);
    const serving = await readyOf('True', 'Serving');
    expect(serving.message).toBe(`serving ${example.spec.kind}.${example.spec.group}/v1alpha1 from CRD ${crdName}`);
    const crd = (await getCrd())!;
    expect(crd.metadata?.labels).toMatchObject({ [AppKindApiCrd.APPKIND_LABEL]: name, 'app.kubernetes.io/managed-by': 'appkind-operator' });
    expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');

    expect(await kubectl('apply', '-f', EXAMPLE_CR)).toContain(`${example.spec.kind.toLowerCase()}.${example.spec.group}/${exampleCr.metadata!.name} created`);
    await eventually('the CR\'s Deployment and Service', async () => !!(await child('Deployment', 'deployment')) && !!(await child('Service', 'svc')));
    await eventually('status.resources 1', async () => (await getAppKind())?.status?.resources === 1);
    expect((await kubectl('get', 'appkinds', name)).split('\n')[1]!.split(/\s+/).slice(0, 6)).toEqual([name, 'True', crdName, '["v1alpha1"]', 'v1alpha1', '1']);
  });

  test('an admin cannot delete the CRD while the AppKind exists: the refusal names the AppKind', async () => {
    await eventually('the deletion policy refuses', async () => kubectl('delete', 'crd', crdName, '--dry-run=server').then(() => false, () => true));
    const refused = await kubectl('delete', 'crd', crdName).then(() => '', (e: Error) => e.message);
    expect(refused).toContain(`CRD ${crdName} serves AppKind ${name}`);
    expect(refused).toContain(`kubectl delete appkinds ${name}, with spec.deletionPolicy Delete`);
    expect(await getCrd()).toBeDefined();
  });

  test('deleting the AppKind (deletionPolicy Retain) keeps the CRD, the CR and its Deployment and Service', async () => {
    expect(example.spec.deletionPolicy).toBe('Retain');
    await kubectl('delete', 'appkinds', name, '--wait=true', '--timeout=60s');
    expect(await getAppKind()).toBeUndefined();
    await operator!.waitForLog((l) => l.msg === 'appkind deleted; kind no longer served');
    expect(await getCrd()).toBeDefined();
    expect(await rest.get({ ...exampleCr, metadata: { ...exampleCr.metadata, namespace: 'default' } })).toBeDefined();
    expect(await child('Deployment', 'deployment')).toBeDefined();
    expect(await child('Service', 'svc')).toBeDefined();
  });

  test('with no AppKind left, a CR of the install\'s own kind in that group (examples/example-echoflask.yaml) gets its Deployment and Service', async () => {
    // The AppKind children's policy judges only children of AppKinds' kinds; with none, it would refuse the rest of the group.
    const walkthrough = parse(readFileSync(join(root, 'examples', 'example-echoflask.yaml'), 'utf8')) as KubernetesObject;
    expect(walkthrough.apiVersion).toBe(`${example.spec.group}/v1alpha1`);
    expect(await kubectl('get', 'appkinds', '-o', 'name')).toBe('');
    // Nor does it refuse anyone else's Deployment (a binding's params are looked up before its matchConditions).
    await kubectl('create', 'deployment', 'admins', '--image=example.com/admins:1', '--dry-run=server');
    await kubectl('apply', '-f', join(root, 'examples', 'example-echoflask.yaml'));
    const of = (kind: string, apiVersion: string, suffix: string) => rest.get({ apiVersion, kind, metadata: { namespace: 'default', name: `${walkthrough.metadata!.name}-${suffix}` } });
    let status: unknown;
    await eventually('the EchoFlask\'s Deployment and Service', async () => {
      status = (await rest.get<KubernetesObject & { status?: unknown }>({ ...walkthrough, metadata: { ...walkthrough.metadata, namespace: 'default' } }))?.status;
      return !!(await of('Deployment', 'apps/v1', 'deployment')) && !!(await of('Service', 'v1', 'svc'));
    }).catch((e: Error) => {
      throw new Error(`${e.message}; its status: ${JSON.stringify(status)}`);
    });
  });
});
