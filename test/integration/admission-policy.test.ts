// The operator's ServiceAccount is no deputy for arbitrary pods: the bundle's
// ValidatingAdmissionPolicies refuse, for writes by that ServiceAccount, any Deployment or Service the
// construct could not have rendered for a CR of a served kind (and any PodDisruptionBudget or
// NetworkPolicy no such CR controls), and let through everything it renders.
// Tested as the operator's own identity (a TokenRequest token of its ServiceAccount) on the real
// control plane: the operator reconciles CRs of two kinds under the policy, and hand-made variants of
// what it renders (privileged, host namespaces, hostPath, another ServiceAccount, Secret or image, a
// token mounted, no controller reference...) are refused for it and admitted for a cluster admin.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Container, V1Deployment, V1PodSpec, V1Service } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { randomBytes } from 'node:crypto';
import { AppKind, OperatorBundle } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { KubeObject, render } from '../../operator/kinds/render.js';
import { ApiError, resourcePath, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { createTestNamespace, crObject, eventually, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';
import { installCrds, OperatorProcess } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };
type Deployment = V1Deployment & KubernetesObject;
type Service = V1Service & KubernetesObject;

/** A second kind with what the policy must let through: a Secret and a ConfigMap volume, a pull Secret, non-root. */
const mounted: AppKind = {
  group: 'policy.appkind.test', version: 'v1', kind: 'Mounted', plural: 'mounteds', appName: 'mounted',
  image: 'takeyan/flask:0.0.3', port: 5000, runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true,
  volumes: [{ name: 'settings', configMap: { name: 'settings' } }, { name: 'creds', secret: { secretName: 'creds' } }],
  volumeMounts: [{ name: 'settings', mountPath: '/etc/app' }, { name: 'creds', mountPath: '/etc/creds' }],
  imagePullSecrets: [{ name: 'pull' }],
};
const kinds = [SAMPLE_KIND, mounted];
// Cluster-scoped names of its own: other test files share the cluster.
const operatorName = `appkind-operator-${randomBytes(3).toString('hex')}`;

let admin: RestClient;
let asOperator: RestClient;
let ns: string;
let other: string;
let operator: OperatorProcess;

const PLURALS: Record<string, [string, string]> = {
  Deployment: ['apps/v1', 'deployments'],
  Service: ['v1', 'services'],
  PodDisruptionBudget: ['policy/v1', 'poddisruptionbudgets'],
  NetworkPolicy: ['networking.k8s.io/v1', 'networkpolicies'],
};

/** The HTTP code the API server answers a dry-run create of `obj` with (0: admitted), and its message. */
async function dryRunCreate(client: RestClient, obj: KubernetesObject, namespace = ns): Promise<{ code: number; message: string }> {
  const [apiVersion, plural] = PLURALS[obj.kind!]!;
  try {
    await client.request('POST', resourcePath({ apiVersion, plural, namespace }), { body: { ...obj, metadata: { ...obj.metadata, namespace } }, query: { dryRun: 'All' } });
    return { code: 0, message: '' };
  } catch (e) {
    if (e instanceof ApiError) return { code: e.code, message: e.message };
    throw e;
  }
}

/** What the operator renders for CR `name` of `kind` (that CR's uid in the controller reference), under another name. */
async function rendered<T extends Deployment | Service>(kind: AppKind, name: string, objectKind: T['kind']): Promise<T> {
  const cr = (await admin.get<Resource>(crObject(kind, ns, name)))!;
  const obj = render(kind, cr as never).find((o: KubeObject) => o.kind === objectKind) as unknown as T;
  obj.metadata = {
    ...obj.metadata,
    name: `variant-${randomBytes(3).toString('hex')}`,
    namespace: ns,
    ownerReferences: [{ apiVersion: cr.apiVersion!, kind: cr.kind!, name, uid: cr.metadata!.uid!, controller: true, blockOwnerDeletion: true }],
  };
  return obj;
}

const pod = (d: Deployment): V1PodSpec => d.spec!.template.spec!;
const container = (d: Deployment): V1Container => pod(d).containers[0]!;

beforeAll(async () => {
  const kc: KubeConfig = sharedCluster().kubeConfig;
  admin = new RestClient(kc);
  ns = await createTestNamespace(kc, 'policy');
  other = await createTestNamespace(kc, 'policy-other');
  await installCrds(kc, kinds);
  // The bundle as a cluster admin installs it for one namespace (its Deployment left out: we run the process).
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds, namespace: ns, name: operatorName, createNamespace: false, crds: false, watchNamespaces: [ns] });
  const objects = (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment');
  // The operator's CRD policy (crd-leash.test.ts tests it) comes along.
  expect(objects.filter((o) => o.kind?.startsWith('ValidatingAdmissionPolicy')).map((o) => `${o.kind}/${o.metadata?.name}`).sort()).toEqual([
    `ValidatingAdmissionPolicy/${operatorName}-crds`,
    `ValidatingAdmissionPolicy/${operatorName}-deployments`,
    `ValidatingAdmissionPolicy/${operatorName}-pod-policies`,
    `ValidatingAdmissionPolicy/${operatorName}-services`,
    `ValidatingAdmissionPolicyBinding/${operatorName}-crds`,
    `ValidatingAdmissionPolicyBinding/${operatorName}-deployments`,
    `ValidatingAdmissionPolicyBinding/${operatorName}-pod-policies`,
    `ValidatingAdmissionPolicyBinding/${operatorName}-services`,
  ]);
  await applyManifests(kc, objects);
  const skc = new KubeConfig();
  skc.loadFromFile(await sharedServiceAccountKubeconfig(ns, operatorName));
  asOperator = new RestClient(skc);
  // The API server takes up a new policy a moment after it is written: wait until it refuses.
  await admin.apply(crObject(SAMPLE_KIND, ns, 'probe', { size: 1 }), 'test');
  await eventually('the policy is in force', async () => {
    const orphan = await rendered<Deployment>(SAMPLE_KIND, 'probe', 'Deployment');
    delete orphan.metadata!.ownerReferences;
    return (await dryRunCreate(asOperator, orphan)).code !== 0;
  });
  operator = await OperatorProcess.spawn({
    kubeconfig: await sharedServiceAccountKubeconfig(ns, operatorName),
    env: { WATCH_NAMESPACE: ns, APPKIND_KINDS: JSON.stringify(kinds) },
  });
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  for (const k of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy']) {
    for (const name of [`${operatorName}-deployments`, `${operatorName}-services`, `${operatorName}-pod-policies`, `${operatorName}-crds`])
      await admin?.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: k, metadata: { name } }).catch(() => undefined);
  }
  // The metrics reviews' ClusterRole and binding, and the scrapers' role: cluster-scoped, named for this file.
  for (const [k, name] of [
    ['ClusterRoleBinding', `${operatorName}-metrics-auth`], ['ClusterRole', `${operatorName}-metrics-auth`], ['ClusterRole', `${operatorName}-metrics-reader`],
    ['ClusterRoleBinding', `${operatorName}-crds`], ['ClusterRole', `${operatorName}-crds`],
  ] as const)
    await admin?.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: k, metadata: { name } }).catch(() => undefined);
  admin?.close();
  asOperator?.close();
});

describe("the bundle's admission policy, for the operator's ServiceAccount", () => {
  test('admits what the construct renders: the operator reconciles a CR of each kind to Ready', async () => {
    await admin.apply(crObject(mounted, ns, 'app', { size: 1 }), 'test');
    for (const [kind, name] of [[SAMPLE_KIND, 'probe'], [mounted, 'app']] as const) {
      await eventually(`${kind.kind} ${name} Ready`, async () => {
        const cr = await admin.get<Resource>(crObject(kind, ns, name));
        return cr?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      });
    }
    for (const [kind, name] of [[SAMPLE_KIND, 'probe'], [mounted, 'app']] as const) {
      expect(await dryRunCreate(asOperator, await rendered<Deployment>(kind, name, 'Deployment'))).toEqual({ code: 0, message: '' });
      expect(await dryRunCreate(asOperator, await rendered<Service>(kind, name, 'Service'))).toEqual({ code: 0, message: '' });
    }
  }, 120_000);

  // What is changed, the rule's message that refuses it, the kind, the change.
  const deploymentVariants: [string, string, AppKind, (d: Deployment) => void][] = [
    ['no controller reference', 'whose controller is a CR of a kind it serves', SAMPLE_KIND, (d) => delete d.metadata!.ownerReferences],
    ['a controller reference to a kind not served', 'whose controller is a CR of a kind it serves', SAMPLE_KIND, (d) => Object.assign(d.metadata!.ownerReferences![0]!, { apiVersion: 'v1', kind: 'ConfigMap' })],
    // Not `privileged: true`: this API server (--allow-privileged=false, the default) refuses it to everyone.
    ['privilege escalation', 'never allowed privilege escalation', SAMPLE_KIND, (d) => (container(d).securityContext!.allowPrivilegeEscalation = true)],
    ['an added capability', 'never given capabilities', SAMPLE_KIND, (d) => (container(d).securityContext!.capabilities = { add: ['NET_ADMIN'] })],
    ['a host port', 'host ports', SAMPLE_KIND, (d) => (container(d).ports![0]!.hostPort = 8080)],
    ['the host network', 'host namespaces', SAMPLE_KIND, (d) => (pod(d).hostNetwork = true)],
    ['the host PID namespace', 'host namespaces', SAMPLE_KIND, (d) => (pod(d).hostPID = true)],
    ['a hostPath volume', 'hostPath volumes are never rendered', SAMPLE_KIND, (d) => (pod(d).volumes = [{ name: 'root', hostPath: { path: '/' } }])],
    ['an init container', 'exactly one container', SAMPLE_KIND, (d) => (pod(d).initContainers = [{ name: 'i', image: SAMPLE_KIND.image }])],
    ['a second container', 'exactly one container', SAMPLE_KIND, (d) => pod(d).containers.push({ name: 'two', image: SAMPLE_KIND.image })],
    ['an image the kind does not allow', 'an image EchoFlask does not allow', SAMPLE_KIND, (d) => (container(d).image = 'example.com/miner:1')],
    ['another ServiceAccount', "a ServiceAccount other than EchoFlask's", SAMPLE_KIND, (d) => (pod(d).serviceAccountName = 'cluster-admin-sa')],
    ['a mounted token', 'a ServiceAccount token mounted', SAMPLE_KIND, (d) => (pod(d).automountServiceAccountToken = true)],
    ['a Secret in env', 'a Secret in env that EchoFlask does not name', SAMPLE_KIND, (d) => (container(d).env = [{ name: 'X', valueFrom: { secretKeyRef: { name: 'other', key: 'k' } } }])],
    ['a Secret in envFrom', 'a Secret in envFrom that EchoFlask does not name', SAMPLE_KIND, (d) => (container(d).envFrom = [{ secretRef: { name: 'other' } }])],
    ["another Secret under the kind's volume name", 'a volume Mounted does not render', mounted, (d) => (pod(d).volumes!.find((v) => v.name === 'creds')!.secret!.secretName = 'other')],
    ['a volume the kind does not render', 'a volume Mounted does not render', mounted, (d) => pod(d).volumes!.push({ name: 'extra', secret: { secretName: 'other' } })],
    ['another image pull Secret', 'an image pull Secret Mounted does not name', mounted, (d) => (pod(d).imagePullSecrets = [{ name: 'other' }])],
    ['a container allowed to run as root in a runAsNonRoot kind', 'allowed to run as root', mounted, (d) => (container(d).securityContext!.runAsNonRoot = false)],
  ];
  for (const [what, rule, kind, change] of deploymentVariants) {
    test(`refuses a Deployment with ${what}, which a cluster admin may still create`, async () => {
      const d = await rendered<Deployment>(kind, kind === mounted ? 'app' : 'probe', 'Deployment');
      change(d);
      const refused = await dryRunCreate(asOperator, d);
      expect(refused).toMatchObject({ code: 403, message: expect.stringContaining(`ValidatingAdmissionPolicy '${operatorName}-deployments'`) });
      expect(refused.message).toContain(rule);
      expect(await dryRunCreate(admin, d)).toEqual({ code: 0, message: '' });
    }, 60_000);
  }

  const serviceVariants: [string, string, (s: Service) => void][] = [
    ['no controller reference', 'whose controller is a CR of a kind it serves', (s) => delete s.metadata!.ownerReferences],
    ['another type', 'Service is of type NodePort', (s) => (s.spec!.type = 'LoadBalancer')],
    ['externalIPs', 'externalIPs', (s) => (s.spec!.externalIPs = ['203.0.113.7'])],
  ];
  for (const [what, rule, change] of serviceVariants) {
    test(`refuses a Service with ${what}, which a cluster admin may still create`, async () => {
      const s = await rendered<Service>(SAMPLE_KIND, 'probe', 'Service');
      change(s);
      const refused = await dryRunCreate(asOperator, s);
      expect(refused).toMatchObject({ code: 403, message: expect.stringContaining(`ValidatingAdmissionPolicy '${operatorName}-services'`) });
      expect(refused.message).toContain(rule);
      expect(await dryRunCreate(admin, s)).toEqual({ code: 0, message: '' });
    }, 60_000);
  }

  test('refuses a PodDisruptionBudget or NetworkPolicy that no CR of a served kind controls, and admits one that one does', async () => {
    const cr = (await admin.get<Resource>(crObject(SAMPLE_KIND, ns, 'probe')))!;
    const owner = { apiVersion: cr.apiVersion!, kind: cr.kind!, name: 'probe', uid: cr.metadata!.uid!, controller: true, blockOwnerDeletion: true };
    const guarded = { ...SAMPLE_KIND, podDisruptionBudget: {}, networkPolicy: { from: [] } };
    const objs = render(guarded, cr as never).filter((o) => o.kind === 'PodDisruptionBudget' || o.kind === 'NetworkPolicy');
    expect(objs.map((o) => o.kind)).toEqual(['PodDisruptionBudget', 'NetworkPolicy']);
    for (const obj of objs) {
      const orphan = { ...obj, metadata: { ...obj.metadata, name: `variant-${randomBytes(3).toString('hex')}`, namespace: ns } } as KubernetesObject;
      expect(await dryRunCreate(asOperator, { ...orphan, metadata: { ...orphan.metadata, ownerReferences: [owner] } })).toEqual({ code: 0, message: '' });
      const refused = await dryRunCreate(asOperator, orphan);
      expect(refused).toMatchObject({ code: 403, message: expect.stringContaining(`ValidatingAdmissionPolicy '${operatorName}-pod-policies'`) });
      expect(refused.message).toContain('whose controller is a CR of a kind it serves');
      expect(await dryRunCreate(admin, orphan)).toEqual({ code: 0, message: '' });
    }
  }, 60_000);

  test('the operator logged no error', () => {
    expect(operator.exited).toBe(false);
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});

describe('a namespace-scoped install (watchNamespaces: Roles, no ClusterRole), as its ServiceAccount', () => {
  test('writes and reads nothing outside its namespaces, and holds no cluster-wide grant', async () => {
    const d = await rendered<Deployment>(SAMPLE_KIND, 'probe', 'Deployment');
    const outside = await dryRunCreate(asOperator, d, other);
    expect(outside).toMatchObject({ code: 403, message: expect.stringContaining('cannot create resource "deployments"') });
    for (const path of [`/apis/apps/v1/namespaces/${other}/deployments`, '/apis/apps/v1/deployments', '/api/v1/pods', `/apis/${SAMPLE_KIND.group}/${SAMPLE_KIND.version}/${SAMPLE_KIND.plural}`]) {
      const code = await asOperator.request('GET', path).then(() => 0, (e: unknown) => (e instanceof ApiError ? e.code : -1));
      expect([path, code]).toEqual([path, 403]);
    }
    // In its own namespace it reads what it watches.
    await expect(asOperator.request('GET', `/apis/apps/v1/namespaces/${ns}/deployments`)).resolves.toBeDefined();
  });
});
