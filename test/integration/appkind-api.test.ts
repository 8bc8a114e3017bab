// The AppKind API on the real control plane: `kubectl apply` of an AppKind makes and serves its kind,
// `kubectl get appkinds` shows it, a bad or colliding AppKind is Ready=False with the reason and
// changes nothing served, deletion keeps (Retain) or deletes (Delete) the CRD, and a restart writes
// nothing to an AppKind whose status is current.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { KubernetesObject, V1CustomResourceDefinition, V1Deployment, V1Service } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { AppKind, AppKindApiCrd, AppKindCrd } from 'cdk8s-appkind';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { crdObjects, SAMPLE_KIND } from 'appkind-operator/kinds';
import type { AppKindResource } from '../../operator/appkinds/types.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { crObject, eventually, sharedCluster } from './cluster.js';
import { OPERATOR_SA, OperatorProcess, operatorWritesSince, prepareOperatorNamespace } from './operator-process.js';

const exec = promisify(execFile);
const FIELD_MANAGER = 'kubectl-client-side-apply';

let rest: RestClient;
let ns: string;
let group: string;
let operator: OperatorProcess;

async function kubectl(input: string | undefined, ...args: string[]): Promise<string> {
  const child = exec('kubectl', ['--kubeconfig', sharedCluster().kubeconfigPath, ...args]);
  if (input !== undefined) {
    child.child.stdin!.write(input);
    child.child.stdin!.end();
  }
  const { stdout } = await child;
  return stdout;
}

/** An AppKind object of a kind in this test's own group. */
function appKind(name: string, spec: Record<string, unknown>): AppKindResource {
  return { apiVersion: AppKindApiCrd.API_VERSION, kind: AppKindApiCrd.KIND, metadata: { name }, spec: { group, version: 'v1alpha1', image: 'takeyan/flask:0.0.3', port: 5000, ...spec } };
}

/** `kubectl apply -f -` of one object. */
const kubectlApply = (obj: KubernetesObject) => kubectl(JSON.stringify(obj), 'apply', '-f', '-');

const getAppKind = (name: string) => rest.get<AppKindResource>({ apiVersion: AppKindApiCrd.API_VERSION, kind: AppKindApiCrd.KIND, metadata: { name } });
const getCrd = (name: string) => rest.get<V1CustomResourceDefinition>({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } });
const ready = (ak: AppKindResource | undefined) => ak?.status?.conditions?.find((c) => c.type === 'Ready');

/** Waits until the AppKind's Ready condition for its current generation has `status` (and `reason`); returns it. */
async function readyOf(name: string, status: 'True' | 'False', reason?: string): Promise<AppKindResource> {
  let last: AppKindResource | undefined;
  await eventually(`AppKind ${name} Ready=${status}${reason ? ` ${reason}` : ''} (last: ${JSON.stringify(last?.status)})`, async () => {
    last = await getAppKind(name);
    const c = ready(last);
    return last?.status?.observedGeneration === last?.metadata?.generation && c?.status === status && (!reason || c.reason === reason);
  }, 90_000);
  return last!;
}

beforeAll(async () => {
  const prepared = await prepareOperatorNamespace('appkind-api', [SAMPLE_KIND]);
  ({ rest, ns } = prepared);
  group = `${ns}.appkind-test.com`;
  const chart = new Chart(new App(), 'api');
  new AppKindApiCrd(chart, 'api');
  const crb = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `appkind-api-test-${ns}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'appkind-operator-appkinds' },
    subjects: [{ kind: 'ServiceAccount', name: OPERATOR_SA, namespace: ns }],
  };
  // The CRD writes a bundle with kindGroups grants (<name>-crds), in any group: this file's kinds span
  // several, and the leash itself is crd-leash.test.ts's and appkind-in-cluster.test.ts's concern.
  const crdRole = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: `appkind-api-test-crds-${ns}` },
    rules: [
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'] },
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions/status'], verbs: ['get', 'patch', 'update'] },
    ],
  };
  const crdRoleBinding = { ...crb, metadata: { name: `appkind-api-test-crds-${ns}` }, roleRef: { ...crb.roleRef, name: `appkind-api-test-crds-${ns}` } };
  // The CRs of the kinds AppKinds declare here: the bundle grants only the kinds it was given.
  const crRole = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'appkind-test-crs', namespace: ns },
    rules: [{ apiGroups: [group, SAMPLE_KIND.group], resources: ['*'], verbs: ['get', 'list', 'watch', 'patch'] }],
  };
  const crRoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'appkind-test-crs', namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'appkind-test-crs' },
    subjects: [{ kind: 'ServiceAccount', name: OPERATOR_SA, namespace: ns }],
  };
  await applyManifests(prepared.kc, [...(chart.toJson() as KubernetesObject[]), crb, crdRole, crdRoleBinding, crRole, crRoleBinding]);
  operator = await OperatorProcess.start(ns, {});
  await operator.waitForLog((l) => l.msg === 'appkind caches synced', 60_000);
});

afterAll(async () => {
  await operator?.stop();
  rest?.close();
});

describe('an AppKind applied with kubectl', () => {
  const name = () => `echos.${group}`;
  const kind = (): AppKind => ({ group, version: 'v1alpha1', kind: 'Echo', plural: 'echos', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'echo' });

  test('gets its CRD, established and labelled, and a CR of it reconciles to a Deployment and a Service', async () => {
    await kubectlApply(appKind(name(), { kind: 'Echo', plural: 'echos', appName: 'echo' }));
    const ak = await readyOf(name(), 'True', 'Serving');
    const crd = (await getCrd(name()))!;
    expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
    expect(crd.metadata?.labels).toMatchObject({ 'appkind.io/appkind': name(), 'app.kubernetes.io/managed-by': 'appkind-operator' });
    expect(ak.metadata?.finalizers).toContain('appkind.io/kind');
    expect(ak.status).toMatchObject({ crd: name(), servedVersions: ['v1alpha1'], storageVersion: 'v1alpha1', storedVersions: ['v1alpha1'] });

    await rest.apply(crObject(kind(), ns, 'first', { size: 1 }), FIELD_MANAGER);
    await eventually('the CR\'s Deployment and Service', async () =>
      !!(await rest.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: ns, name: 'first-deployment' } })) &&
      !!(await rest.get<V1Service>({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: ns, name: 'first-svc' } })));
  });

  test('a kind in the group version of a kind the operator served before it is found (discovery read again) and reconciles', async () => {
    const suffix = ns.split('-').pop()!;
    const same: AppKind = { group: SAMPLE_KIND.group, version: SAMPLE_KIND.version, kind: `Same${suffix}`, plural: `same${suffix}s`, image: 'takeyan/flask:0.0.3', port: 5000, appName: 'same' };
    const akName = AppKindCrd.nameOf(same);
    await kubectlApply(appKind(akName, { ...same }));
    await readyOf(akName, 'True', 'Serving');
    await rest.apply(crObject(same, ns, 'same', { size: 1 }), FIELD_MANAGER);
    await eventually('the Deployment of a CR of a kind in swallowlab.com/v1alpha1', async () =>
      !!(await rest.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: ns, name: 'same-deployment' } })));
    await kubectl(undefined, 'delete', 'appkinds', akName, '--wait=true', '--timeout=60s');
  });

  test('kubectl get appkinds shows Ready True, the CRD, its versions and 1 CR', async () => {
    await eventually('status.resources 1', async () => (await getAppKind(name()))?.status?.resources === 1);
    const out = await kubectl(undefined, 'get', 'appkinds', name());
    const [header, row] = out.trim().split('\n').map((l) => l.trim().split(/\s+/));
    expect(header).toEqual(['NAME', 'READY', 'CRD', 'SERVED', 'STORAGE', 'CRS', 'AGE']);
    expect(row!.slice(0, 6)).toEqual([name(), 'True', name(), '["v1alpha1"]', 'v1alpha1', '1']);
    // The short name and the Event of the change.
    expect(await kubectl(undefined, 'get', 'ak', name(), '-o', 'name')).toBe(`appkind.appkind.io/${name()}\n`);
    const described = await kubectl(undefined, 'describe', 'appkinds', name());
    expect(described).toMatch(/Normal\s+Serving\s.*serving Echo\./);
    // One status write made Ready True: its Event was recorded once, not again off a cache behind the write.
    expect(described).not.toMatch(/\(x\d+ over/);
  });

  test('a restart of the operator writes nothing to an AppKind whose status is current, nor to its CRD', async () => {
    await operator.stop();
    const since = new Date().toISOString();
    operator = await OperatorProcess.start(ns, {});
    await operator.waitForLog((l) => l.msg === 'appkind caches synced', 60_000);
    // Past a resync of every AppKind (10 s), which reads the caches only.
    await new Promise((r) => setTimeout(r, 15_000));
    const writes = (await operatorWritesSince(ns, since)).filter((w) => /appkinds|customresourcedefinitions/.test(w));
    expect(writes).toEqual([]);
    expect(ready(await getAppKind(name()))?.status).toBe('True');
  });

  test('a spec the API server admits but the kinds file\'s checks refuse is Ready=False InvalidSpec, naming the field and the fix, and serves nothing', async () => {
    await kubectlApply(appKind(`bads.${group}`, { kind: 'Bad', plural: 'bads', runAsNonRoot: true, runAsUser: 0 }));
    const ak = await readyOf(`bads.${group}`, 'False', 'InvalidSpec');
    expect(ready(ak)!.message).toBe(`AppKind bads.${group}: spec.runAsUser is 0 (root) while spec.runAsNonRoot is true; give spec.runAsUser a non-zero UID or leave it unset`);
    expect(await getCrd(`bads.${group}`)).toBeUndefined();
    expect(await kubectl(undefined, 'describe', 'appkinds', `bads.${group}`)).toMatch(/Warning\s+InvalidSpec/);
  });

  test('the API server itself refuses what its schema can say (port 0, a kind not UpperCamelCase)', async () => {
    await expect(kubectlApply(appKind(`zeros.${group}`, { kind: 'Zero', port: 0 }))).rejects.toThrow(/spec.port/);
    await expect(kubectlApply(appKind(`lowers.${group}`, { kind: 'lower' }))).rejects.toThrow(/spec.kind/);
  });

  test('a kind the kinds file serves already is KindConflict', async () => {
    await kubectlApply(appKind(`echoflasks.${group}`, { kind: SAMPLE_KIND.kind }));
    const ak = await readyOf(`echoflasks.${group}`, 'False', 'KindConflict');
    expect(ready(ak)!.message).toMatch(/served from the kinds file already; remove it from the kinds file, or give spec.kind and spec.plural other names/);
    expect(await getCrd(`echoflasks.${group}`)).toBeUndefined();
  });

  test('a CRD name taken by a CRD not made for an AppKind is CRDConflict, and that CRD is left as it was', async () => {
    const foreign: AppKind = { group, version: 'v1', kind: 'Theirs', plural: 'theirs', image: 'example.com/theirs:1', port: 80, appName: 'theirs' };
    await applyManifests(sharedCluster().kubeConfig, crdObjects([foreign]));
    const before = (await getCrd(AppKindCrd.nameOf(foreign)))!;
    await kubectlApply(appKind(`mine.${group}`, { kind: 'Mine', plural: 'theirs' }));
    const ak = await readyOf(`mine.${group}`, 'False', 'CRDConflict');
    expect(ready(ak)!.message).toContain(`the CRD theirs.${group} exists and was not made for an AppKind`);
    const after = (await getCrd(AppKindCrd.nameOf(foreign)))!;
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(after.spec.names.kind).toBe('Theirs');
  });

  test('a kind whose CRs the operator may not list is Ready=False ResourcesForbidden, saying which rights to grant', async () => {
    const denied = `denieds.other-${ns}.example.com`;
    await kubectlApply(appKind(denied, { group: `other-${ns}.example.com`, kind: 'Denied', deletionPolicy: 'Delete' }));
    const ak = await readyOf(denied, 'False', 'ResourcesForbidden');
    expect(ready(ak)!.message).toContain(`grant the operator's ServiceAccount get, list and watch on denieds and patch on denieds/status in the API group other-${ns}.example.com`);
    await kubectl(undefined, 'delete', 'appkinds', denied, '--wait=true', '--timeout=60s');
  });

  test('deleting an AppKind (deletionPolicy Retain) stops serving its kind and keeps the CRD, the CR and its Deployment', async () => {
    await kubectl(undefined, 'delete', 'appkinds', name(), '--wait=true', '--timeout=60s');
    expect(await getAppKind(name())).toBeUndefined();
    await operator.waitForLog((l) => l.msg === 'appkind deleted; kind no longer served');
    expect(await getCrd(name())).toBeDefined();
    expect(await rest.get(crObject(kind(), ns, 'first'))).toBeDefined();
    expect(await rest.get({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: ns, name: 'first-deployment' } })).toBeDefined();
  });

  test('deleting an AppKind with deletionPolicy Delete deletes its CRD', async () => {
    const gone = `gones.${group}`;
    await kubectlApply(appKind(gone, { kind: 'Gone', deletionPolicy: 'Delete' }));
    await readyOf(gone, 'True', 'Serving');
    expect(await getCrd(gone)).toBeDefined();
    await kubectl(undefined, 'delete', 'appkinds', gone, '--wait=true', '--timeout=60s');
    await eventually(`CRD ${gone} deleted`, async () => (await getCrd(gone)) === undefined);
  });
});
