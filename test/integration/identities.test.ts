// No confused deputy, proven as the people involved, on the real control plane:
// - a CR author, bound to the kind's -view and -edit ClusterRoles in one namespace only;
// - the operator, its bundle ServiceAccount, watching every namespace (the widest install);
// - a bystander with no grants;
// - an editor bound to the built-in `edit` role, which the kind's roles aggregate into.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1ConfigMap, V1Deployment, V1Secret } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { randomBytes } from 'node:crypto';
import { AppKind, OperatorBundle } from 'cdk8s-appkind';
import { ApiError, APPLY_PATCH, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { createTestNamespace, crObject, eventually, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';
import { installCrds, OperatorProcess } from './operator-process.js';

type Resource = KubernetesObject & { spec?: Record<string, unknown> };
type ClusterRole = KubernetesObject & { rules?: { apiGroups?: string[]; resources?: string[]; verbs: string[] }[] };
type Review = { status?: { allowed: boolean } };

const kind: AppKind = {
  group: 'identities.appkind.test', version: 'v1', kind: 'Authored', plural: 'authoreds', appName: 'authored',
  image: 'takeyan/flask:0.0.3', port: 5000, runAsNonRoot: true, runAsUser: 1000,
};
const apiVersion = `${kind.group}/${kind.version}`;
// Cluster-scoped RBAC names of its own: other test files share the cluster.
const operatorName = `appkind-operator-${randomBytes(3).toString('hex')}`;

let admin: RestClient;
let team: string;
let other: string;
let opNs: string;
let author: RestClient;
let bystander: RestClient;
let editor: RestClient;
let operator: OperatorProcess;

const cr = (namespace: string, name: string, spec: Record<string, unknown> = {}): Resource => crObject(kind, namespace, name, spec);
const crPath = (namespace: string, name: string) => `/apis/${kind.group}/${kind.version}/namespaces/${namespace}/${kind.plural}/${name}`;
const deploymentOf = (namespace: string, name: string) =>
  admin.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-deployment`, namespace } });

async function as(namespace: string, name: string): Promise<RestClient> {
  const kc = new KubeConfig();
  kc.loadFromFile(await sharedServiceAccountKubeconfig(namespace, name));
  return new RestClient(kc);
}

/** The error code the API server answers `call` with (0 when it succeeds). */
async function codeOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 0;
  } catch (e) {
    if (e instanceof ApiError) return e.code;
    throw e;
  }
}

/** SubjectAccessReview: may `user` do `verb` on `resource` in `namespace`? */
async function allowed(user: string, verb: string, group: string, resource: string, namespace: string): Promise<boolean> {
  const review = await admin.request<Review>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user, groups: ['system:serviceaccounts', 'system:authenticated'], resourceAttributes: { verb, group, resource, namespace } } },
  });
  return review.status?.allowed ?? false;
}

const binding = (namespace: string, name: string, roleKind: 'ClusterRole', role: string, sa: string) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: role },
  subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
});

beforeAll(async () => {
  const kc = sharedCluster().kubeConfig;
  admin = new RestClient(kc);
  [team, other, opNs] = [await createTestNamespace(kc, 'team'), await createTestNamespace(kc, 'other'), await createTestNamespace(kc, 'operator')];
  await installCrds(kc, [kind]);
  // The bundle as a cluster admin installs it, watching all namespaces (its Deployment left out: we run the process).
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds: [kind], namespace: opNs, name: operatorName, createNamespace: false, crds: false });
  await applyManifests(kc, (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment'));

  const secret: V1Secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: team }, stringData: { password: 'hunter2' } };
  const configMap: V1ConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: team }, data: { mode: 'prod' } };
  const sa = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  await applyManifests(kc, [
    sa(team, 'author'), sa(team, 'bystander'), sa(team, 'editor'),
    binding(team, 'author-view', 'ClusterRole', `${kind.plural}.${kind.group}-view`, 'author'),
    binding(team, 'author-edit', 'ClusterRole', `${kind.plural}.${kind.group}-edit`, 'author'),
    binding(team, 'editor', 'ClusterRole', 'edit', 'editor'),
    // A Secret and a ConfigMap the author must not reach, directly or through the operator.
    secret, configMap,
  ]);
  [author, bystander, editor] = [await as(team, 'author'), await as(team, 'bystander'), await as(team, 'editor')];
  operator = await OperatorProcess.spawn({
    kubeconfig: await sharedServiceAccountKubeconfig(opNs, operatorName),
    env: { APPKIND_WATCH_NAMESPACE: '', APPKIND_KINDS: JSON.stringify([kind]) },
  });
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  // The bundle's cluster-scoped objects are named for this file; the namespaced ones go with the namespaces.
  for (const [k, name] of [
    ['ClusterRoleBinding', operatorName], ['ClusterRole', operatorName],
    ['ClusterRoleBinding', `${operatorName}-metrics-auth`], ['ClusterRole', `${operatorName}-metrics-auth`], ['ClusterRole', `${operatorName}-metrics-reader`],
    ['ClusterRoleBinding', `${operatorName}-crds`], ['ClusterRole', `${operatorName}-crds`],
  ] as const) {
    await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: k, metadata: { name } }).catch(() => undefined);
  }
  for (const k of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy']) {
    for (const name of [`${operatorName}-deployments`, `${operatorName}-services`, `${operatorName}-pod-policies`, `${operatorName}-crds`])
      await admin.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: k, metadata: { name } }).catch(() => undefined);
  }
});

describe('the CR author', () => {
  test('creates a CR in their namespace and the operator runs it with the kind\'s image and security settings', async () => {
    await author.apply(cr(team, 'mine', { size: 1 }), 'author');
    await eventually('Deployment created by the operator', async () => !!(await deploymentOf(team, 'mine')));
    const pod = (await deploymentOf(team, 'mine'))!.spec!.template.spec!;
    expect(pod.containers[0]!.image).toBe(kind.image);
    expect(pod.containers[0]!.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, capabilities: { drop: ['ALL'] } });
  });

  test('cannot get a disallowed image deployed', async () => {
    expect(await codeOf(author.apply(cr(team, 'nginx', { image: 'nginx:1.27' }), 'author'))).toBe(422);
    expect(await codeOf(author.apply(cr(team, 'mine', { size: 1, image: 'nginx:1.27' }), 'author'))).toBe(422);
    expect((await deploymentOf(team, 'mine'))!.spec!.template.spec!.containers[0]!.image).toBe(kind.image);
  });

  test('cannot smuggle security settings, Secrets, ConfigMaps or a namespace in through the spec', async () => {
    const sneaky = {
      size: 1,
      securityContext: { runAsUser: 0, privileged: true }, runAsNonRoot: false, namespace: other, serviceAccountName: 'default',
      env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
      envFrom: [{ configMapRef: { name: 'settings' } }],
      volumes: [{ name: 's', secret: { secretName: 'db' } }],
    };
    const body = { ...cr(team, 'sneaky'), spec: sneaky };
    const collection = `/apis/${kind.group}/${kind.version}/namespaces/${team}/${kind.plural}`;
    // Strict field validation (kubectl's default) refuses the unknown fields outright; so does
    // server-side apply, whose typed patch cannot hold fields the schema lacks ...
    expect(await codeOf(author.request('POST', collection, { body, query: { fieldValidation: 'Strict' } }))).toBe(400);
    expect(await codeOf(author.request('PATCH', crPath(team, 'sneaky'), { body, contentType: APPLY_PATCH, query: { fieldManager: 'author' } }))).not.toBe(0);
    expect(await admin.get(cr(team, 'sneaky'))).toBeUndefined();
    // ... and when the client asks to ignore them, the API server prunes them from the stored CR.
    await author.request('POST', collection, { body, query: { fieldValidation: 'Ignore' } });
    expect((await admin.get<Resource>(cr(team, 'sneaky')))!.spec).toEqual({ size: 1 });
    await eventually('Deployment created', async () => !!(await deploymentOf(team, 'sneaky')));
    const pod = (await deploymentOf(team, 'sneaky'))!.spec!.template.spec!;
    expect(pod.volumes).toBeUndefined();
    expect(pod.serviceAccountName).toBeUndefined();
    expect(pod.containers[0]!.env).toBeUndefined();
    expect(pod.containers[0]!.envFrom).toBeUndefined();
    expect(pod.containers[0]!.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, privileged: false });
    expect(await deploymentOf(other, 'sneaky')).toBeUndefined();
  });

  test('cannot reach another namespace, directly or by naming it in the object', async () => {
    expect(await codeOf(author.apply(cr(other, 'elsewhere', { size: 1 }), 'author'))).toBe(403);
    expect(await codeOf(author.request('POST', `/apis/${kind.group}/${kind.version}/namespaces/${team}/${kind.plural}`, { body: cr(other, 'mismatch') }))).toBe(400);
    expect(await deploymentOf(other, 'elsewhere')).toBeUndefined();
  });

  test('cannot read Secrets or ConfigMaps, write the operator\'s children, or set the CR status', async () => {
    expect(await codeOf(author.get({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: team } }))).toBe(403);
    expect(await codeOf(author.get({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: team } }))).toBe(403);
    expect(await codeOf(author.request('PATCH', `/apis/apps/v1/namespaces/${team}/deployments/mine-deployment`, {
      body: { spec: { template: { spec: { containers: [{ name: kind.appName, image: 'nginx:1.27' }] } } } }, contentType: 'application/strategic-merge-patch+json',
    }))).toBe(403);
    expect(await codeOf(author.patchStatus(cr(team, 'mine'), { readyReplicas: 99 }))).toBe(403);
  });
});

describe('the operator', () => {
  test('holds no access to Secrets or ConfigMaps that a CR could borrow', async () => {
    const user = `system:serviceaccount:${opNs}:${operatorName}`;
    for (const resource of ['secrets', 'configmaps']) {
      for (const verb of ['get', 'list', 'watch', 'create']) expect(await allowed(user, verb, '', resource, team)).toBe(false);
    }
    // What it does hold, for contrast: it really is the identity that writes Deployments.
    expect(await allowed(user, 'patch', 'apps', 'deployments', team)).toBe(true);
  });
});

describe('the bystander', () => {
  test('can neither read nor create the kind\'s CRs, nor see what the operator made', async () => {
    expect(await codeOf(bystander.list(apiVersion, kind.kind, team))).toBe(403);
    expect(await codeOf(bystander.get(cr(team, 'mine')))).toBe(403);
    expect(await codeOf(bystander.apply(cr(team, 'theirs', { size: 1 }), 'bystander'))).toBe(403);
    expect(await codeOf(bystander.list('apps/v1', 'Deployment', team))).toBe(403);
  });
});

describe('the built-in edit role', () => {
  test('includes CR authoring once the kind\'s roles aggregate into it', async () => {
    await eventually('edit aggregates the kind', async () => {
      const edit = await admin.get<ClusterRole>({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'edit' } });
      return edit?.rules?.some((r) => r.apiGroups?.includes(kind.group) && r.resources?.includes(kind.plural) && r.verbs.includes('create')) ?? false;
    });
    await editor.apply(cr(team, 'edited', { size: 1 }), 'editor');
    expect((await editor.get<Resource>(cr(team, 'edited')))?.spec).toMatchObject({ size: 1 });
    expect(await codeOf(editor.apply(cr(other, 'edited', { size: 1 }), 'editor'))).toBe(403);
  });
});
