// The power to make CRDs, on a short leash, shown on the real control plane: the bundle with one
// allowed kind group is applied, and then, acting as the operator's own ServiceAccount (a TokenRequest
// token), every CRD write outside that group, on a CRD it did not label, in a Kubernetes group, or on
// RBAC is refused by the API server, and a labelled CRD in the group is made. As an admin, the CRD of an
// AppKind that exists cannot be deleted (the message names the AppKind), and can once the AppKind is
// gone. A child of a CR of that kind is admitted under the generic rules and its AppKind's image.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Deployment, V1Service } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { randomBytes } from 'node:crypto';
import { AppKind, OperatorBundle } from 'cdk8s-appkind';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { createTestNamespace, eventually, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';

// As the API server spells it (client-node's V1JSONSchemaProps renames the x-kubernetes- fields).
type Crd = KubernetesObject & {
  spec: { group: string; scope: string; names: Record<string, unknown>; versions: Record<string, unknown>[]; conversion?: Record<string, unknown> };
  status?: { conditions?: { type: string; status: string }[] };
};
type Answer = { code: number; message: string };

const LABEL = 'appkind.io/appkind';
const suffix = randomBytes(3).toString('hex');
// Cluster-scoped names of its own: other test files share the cluster.
const operatorName = `appkind-operator-${suffix}`;
const allowed = `leash-${suffix}.appkind.test`;
const elsewhere = `other-${suffix}.appkind.test`;
const appKindName = `leashed-${suffix}`;
const kind: AppKind = {
  group: `installed-${suffix}.appkind.test`, version: 'v1', kind: 'Installed', plural: 'installeds', appName: 'installed',
  image: 'takeyan/flask:0.0.3', port: 5000,
};
const APPKIND_CRD = 'appkinds.appkind.io';

let admin: RestClient;
let asOperator: RestClient;
let ns: string;
let bundleObjects: KubernetesObject[] = [];
const made: string[] = [];

/** A CRD of `plural.group` (one version, namespaced, no conversion), with `labels`. */
function crd(group: string, plural: string, labels: Record<string, string> = { [LABEL]: appKindName }, annotations?: Record<string, string>): Crd {
  const singular = plural.replace(/s$/, '');
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}`, labels, ...(annotations ? { annotations } : {}) },
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind: singular.charAt(0).toUpperCase() + singular.slice(1), plural, singular, listKind: `${singular.charAt(0).toUpperCase()}${singular.slice(1)}List` },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }, subresources: { status: {} } }],
    },
  };
}

/** What the API server answers `call` with: 0 and '' when it succeeds, else the HTTP code and its message. */
async function answer(call: Promise<unknown>): Promise<Answer> {
  try {
    await call;
    return { code: 0, message: '' };
  } catch (e) {
    if (e instanceof ApiError) return { code: e.code, message: e.message };
    throw e;
  }
}

const crdPath = (name = '') => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions${name ? `/${name}` : ''}`;
const dryRunCreate = (client: RestClient, obj: KubernetesObject, path: string) => answer(client.request('POST', path, { body: obj, query: { dryRun: 'All' } }));
const deleteCrd = (client: RestClient, name: string, dryRun = false) => answer(client.request('DELETE', crdPath(name), { query: dryRun ? { dryRun: 'All' } : {} }));
const byPolicy = (policy: string) => expect.stringContaining(`ValidatingAdmissionPolicy '${operatorName}-${policy}'`);

/** The AppKind API's CRD, when no bundle installed it yet: the group, names and scope of the contract, any spec. */
const minimalAppKindCrd: Crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: APPKIND_CRD },
  spec: {
    group: 'appkind.io',
    scope: 'Cluster',
    names: { kind: 'AppKind', plural: 'appkinds', singular: 'appkind', shortNames: ['ak'], listKind: 'AppKindList' },
    versions: [
      {
        name: 'v1alpha1', served: true, storage: true, subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } },
      },
    ],
  },
};

const appKind = {
  apiVersion: 'appkind.io/v1alpha1',
  kind: 'AppKind',
  metadata: { name: appKindName },
  spec: { group: allowed, version: 'v1', kind: 'Widget', plural: 'widgets', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'widget', deletionPolicy: 'Retain' },
};

beforeAll(async () => {
  const kc: KubeConfig = sharedCluster().kubeConfig;
  admin = new RestClient(kc);
  ns = await createTestNamespace(kc, 'leash');
  if (!(await admin.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: APPKIND_CRD } }))) {
    await applyManifests(kc, [minimalAppKindCrd]);
  }
  // The bundle as a cluster admin installs it, AppKinds allowed one group (its Deployment left out: no operator process runs).
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds: [kind], namespace: ns, name: operatorName, createNamespace: false, crds: false, kindGroups: [allowed] });
  bundleObjects = (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment');
  await applyManifests(kc, bundleObjects);
  const skc = new KubeConfig();
  skc.loadFromFile(await sharedServiceAccountKubeconfig(ns, operatorName));
  asOperator = new RestClient(skc);
  // The API server takes up a new policy a moment after it is written: wait until it refuses.
  await eventually('the CRD policy is in force', async () => (await dryRunCreate(asOperator, crd(elsewhere, 'probes'), crdPath())).code === 403);
});

afterAll(async () => {
  await admin?.delete(appKind).catch(() => undefined);
  for (const name of made) await eventually(`CRD ${name} deleted`, async () => (await deleteCrd(admin, name)).code !== 403).catch(() => undefined);
  // The bundle's cluster-scoped objects are named for this file; the namespaced ones go with the namespace.
  for (const o of bundleObjects.filter((b) => !b.metadata?.namespace)) await admin?.delete(o).catch(() => undefined);
  admin?.close();
  asOperator?.close();
});

describe("the operator's ServiceAccount, with kindGroups: [one group]", () => {
  test('cannot create a CRD in a group outside kindGroups', async () => {
    const refused = await dryRunCreate(asOperator, crd(elsewhere, 'gadgets'), crdPath());
    expect(refused).toMatchObject({ code: 403, message: byPolicy('crds') });
    expect(refused.message).toContain(`only in the API groups the install allows (kindGroups: ${allowed})`);
    expect(refused.message).toContain("add the AppKind's group to kindGroups");
  });

  test('cannot create a CRD in an allowed group without the AppKind label', async () => {
    const refused = await dryRunCreate(asOperator, crd(allowed, 'gadgets', {}), crdPath());
    expect(refused).toMatchObject({ code: 403, message: byPolicy('crds') });
    expect(refused.message).toContain(`only CRDs it made for an AppKind (label ${LABEL})`);
  });

  test('cannot create a CRD in a Kubernetes group, even labelled and approved', async () => {
    // A *.k8s.io CRD needs this annotation to pass the API server's own validation; the policy still refuses it.
    const approved = { 'api-approved.kubernetes.io': 'https://github.com/kubernetes/enhancements/pull/1111' };
    for (const group of [`leash-${suffix}.k8s.io`, `leash-${suffix}.kubernetes.io`]) {
      const refused = await dryRunCreate(asOperator, crd(group, 'gadgets', { [LABEL]: appKindName }, approved), crdPath());
      expect([group, refused]).toEqual([group, { code: 403, message: byPolicy('crds') }]);
      expect(refused.message).toContain('never writes a CRD of a Kubernetes group');
    }
  });

  test('cannot create a CRD with a conversion webhook', async () => {
    const hooked = crd(allowed, 'hooks');
    hooked.spec.conversion = { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://127.0.0.1:1/convert' } } };
    const refused = await dryRunCreate(asOperator, hooked, crdPath());
    expect(refused).toMatchObject({ code: 403, message: byPolicy('crds') });
    expect(refused.message).toContain('no conversion webhook');
  });

  test("cannot change, take over, delete or write the status of a CRD someone else made, even in an allowed group", async () => {
    const foreign = crd(allowed, 'foreigns', { owner: 'someone-else' });
    await applyManifests(sharedCluster().kubeConfig, [foreign]);
    made.push(foreign.metadata!.name!);
    const taken = await answer(asOperator.apply({ ...foreign, metadata: { ...foreign.metadata, labels: { [LABEL]: appKindName } } }, 'appkind-operator'));
    expect(taken).toMatchObject({ code: 403, message: byPolicy('crds') });
    expect(taken.message).toContain('a CRD without it belongs to someone else');
    expect(await deleteCrd(asOperator, foreign.metadata!.name!, true)).toMatchObject({ code: 403, message: byPolicy('crds') });
    const status = { body: { status: { storedVersions: ['v1'] } }, contentType: 'application/merge-patch+json', query: { dryRun: 'All' } };
    expect(await answer(asOperator.request('PATCH', `${crdPath(foreign.metadata!.name!)}/status`, status))).toMatchObject({ code: 403, message: byPolicy('crds') });
    expect((await admin.get<Crd>(foreign))!.metadata!.labels).toEqual({ owner: 'someone-else' });
  });

  test('holds no write on RBAC: a ClusterRole granting everything and a ClusterRoleBinding are refused', async () => {
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `leash-${suffix}-all` }, rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] };
    const rolePath = '/apis/rbac.authorization.k8s.io/v1/clusterroles';
    expect(await dryRunCreate(asOperator, role, rolePath)).toEqual({ code: 403, message: expect.stringContaining('cannot create resource "clusterroles"') });
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `leash-${suffix}-all` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: operatorName, namespace: ns }],
    };
    expect(await dryRunCreate(asOperator, binding, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings')).toEqual({
      code: 403, message: expect.stringContaining('cannot create resource "clusterrolebindings"'),
    });
    const policyPath = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';
    expect(await answer(asOperator.request('DELETE', `${policyPath}/${operatorName}-crds`, { query: { dryRun: 'All' } }))).toMatchObject({ code: 403 });
  });

  test('creates a labelled CRD in an allowed group, updates it and its status, and cannot take the label off', async () => {
    const widgets = crd(allowed, 'widgets');
    const name = widgets.metadata!.name!;
    made.push(name);
    await asOperator.apply(widgets, 'appkind-operator');
    await eventually(`CRD ${name} Established`, async () => (await admin.get<Crd>(widgets))?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false);
    const printed = { ...widgets, spec: { ...widgets.spec, versions: widgets.spec.versions.map((v) => ({ ...v, additionalPrinterColumns: [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }] })) } };
    expect(await answer(asOperator.apply(printed, 'appkind-operator'))).toEqual({ code: 0, message: '' });
    // storedVersions is written through the status subresource.
    const storedVersions = await answer(
      asOperator.request('PATCH', `${crdPath(name)}/status`, { body: { status: { storedVersions: ['v1'] } }, contentType: 'application/merge-patch+json' }),
    );
    expect(storedVersions).toEqual({ code: 0, message: '' });
    const unlabelled = await answer(asOperator.request('PATCH', crdPath(name), { body: { metadata: { labels: { [LABEL]: null } } }, contentType: 'application/merge-patch+json' }));
    expect(unlabelled).toMatchObject({ code: 403, message: byPolicy('crds') });
  });
});

describe("the CRD of an AppKind that exists", () => {
  const widgets = `widgets.${allowed}`;

  test('an admin cannot delete it: the refusal names the AppKind to delete instead; the operator can', async () => {
    await admin.apply(appKind, 'test');
    await eventually('the deletion policy refuses', async () => (await deleteCrd(admin, widgets, true)).code === 403);
    const refused = await deleteCrd(admin, widgets);
    expect(refused).toMatchObject({ code: 403, message: byPolicy('appkind-crds') });
    expect(refused.message).toContain(`CRD ${widgets} serves AppKind ${appKindName}`);
    expect(refused.message).toContain(`kubectl delete appkinds ${appKindName}, with spec.deletionPolicy Delete`);
    expect(await admin.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: widgets } })).toBeDefined();
    // The operator deletes it for an AppKind deleted with deletionPolicy Delete.
    expect(await deleteCrd(asOperator, widgets, true)).toEqual({ code: 0, message: '' });
  });

  test('children of its CRs are admitted for the operator under the generic rules and the AppKind\'s image and Service type', async () => {
    const owner = { apiVersion: `${allowed}/v1`, kind: 'Widget', name: 'w', uid: '0b9ee0c1-5cc2-4bb6-9b1e-000000000001', controller: true, blockOwnerDeletion: true };
    const deployment = (image: string, hostNetwork = false): V1Deployment & KubernetesObject => ({
      apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: { name: `w-deployment-${randomBytes(2).toString('hex')}`, namespace: ns, ownerReferences: [owner] },
      spec: {
        selector: { matchLabels: { app: 'w' } },
        template: {
          metadata: { labels: { app: 'w' } },
          spec: {
            automountServiceAccountToken: false, hostNetwork,
            containers: [{ name: 'widget', image, securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
          },
        },
      },
    });
    const deployments = `/apis/apps/v1/namespaces/${ns}/deployments`;
    expect(await dryRunCreate(asOperator, deployment(appKind.spec.image), deployments)).toEqual({ code: 0, message: '' });
    const image = await dryRunCreate(asOperator, deployment('example.com/miner:1'), deployments);
    expect(image).toMatchObject({ code: 403, message: byPolicy('appkind-children') });
    expect(image.message).toContain(`an image AppKind ${appKindName} does not allow`);
    const host = await dryRunCreate(asOperator, deployment(appKind.spec.image, true), deployments);
    expect(host).toMatchObject({ code: 403, message: byPolicy('deployments') });
    expect(host.message).toContain('host namespaces');
    const service = (type: string): V1Service & KubernetesObject => ({
      apiVersion: 'v1', kind: 'Service',
      metadata: { name: `w-svc-${randomBytes(2).toString('hex')}`, namespace: ns, ownerReferences: [owner] },
      spec: { type, selector: { app: 'w' }, ports: [{ port: 5000 }] },
    });
    const services = `/api/v1/namespaces/${ns}/services`;
    expect(await dryRunCreate(asOperator, service('NodePort'), services)).toEqual({ code: 0, message: '' });
    expect(await dryRunCreate(asOperator, service('LoadBalancer'), services)).toMatchObject({ code: 403, message: byPolicy('appkind-children') });
    // A kind in a group no AppKind may use is still no owner the operator writes for.
    const stray = { ...deployment(appKind.spec.image), metadata: { ...deployment(appKind.spec.image).metadata, ownerReferences: [{ ...owner, apiVersion: `${elsewhere}/v1` }] } };
    expect(await dryRunCreate(asOperator, stray, deployments)).toMatchObject({ code: 403, message: byPolicy('deployments') });
  });

  test('once the AppKind is gone, an admin can delete it', async () => {
    await admin.delete(appKind);
    await eventually('the AppKind gone', async () => !(await admin.get(appKind)));
    await eventually('the deletion is admitted', async () => (await deleteCrd(admin, widgets, true)).code === 0);
    expect(await deleteCrd(admin, widgets)).toEqual({ code: 0, message: '' });
  });
});
