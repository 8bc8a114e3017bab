// The kind's image policy on the real control plane: the generated CRD refuses a disallowed image at
// admission; with a CRD that lacks the rule (installed by hand), the operator refuses to apply it.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { crdObjects } from '../../operator/kinds/crd-yaml.js';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { createTestNamespace, crObject, eventually, sharedCluster } from './cluster.js';
import { installCrds, installOperatorIdentity, OperatorProcess } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };
type Deployment = KubernetesObject & { spec: { template: { spec: { containers: { image: string }[] } } } };
type HandmadeCrd = KubernetesObject & { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: { image: Record<string, unknown> } } } } } }[] } };
type Event = KubernetesObject & { reason: string; message: string; type: string; involvedObject: { name: string } };

// Kinds of their own: other test files share the cluster and install the sample kind's CRD.
const guarded: AppKind = {
  group: 'policy.appkind.test', version: 'v1', kind: 'Guarded', plural: 'guardeds', appName: 'guarded',
  image: 'takeyan/flask:0.0.3', port: 5000, allowedImages: ['registry.example.com/*', 'takeyan/flask:*'],
};
const handmade: AppKind = {
  group: 'handmade.appkind.test', version: 'v1', kind: 'Handmade', plural: 'handmades', appName: 'handmade', image: 'takeyan/flask:0.0.3', port: 5000,
};

let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const cr = (kind: AppKind, name: string, spec: Record<string, unknown>) => crObject(kind, ns, name, spec);
const deployment = (name: string) => rest.get<Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-deployment`, namespace: ns } });
const imageOf = async (name: string) => (await deployment(name))?.spec.template.spec.containers[0]!.image;
const degraded = async (kind: AppKind, name: string) =>
  (await rest.get<Resource>(cr(kind, name, {})))?.status?.conditions?.find((c) => c.type === 'Degraded');

async function refusal(obj: KubernetesObject): Promise<ApiError> {
  const error = await rest.apply(obj, 'cr-author').then(() => undefined, (e: unknown) => e);
  if (!(error instanceof ApiError)) throw new Error(`expected the API server to refuse ${JSON.stringify(obj)}, got ${String(error)}`);
  return error;
}

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  rest = new RestClient(kc);
  ns = await createTestNamespace(kc, 'imagepolicy');
  await installCrds(kc, [guarded]);
  // A CRD as someone might install it by hand: the generated one without its validation rules.
  const crd = crdObjects([handmade])[0] as unknown as HandmadeCrd;
  delete crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.image['x-kubernetes-validations'];
  await applyManifests(kc, [crd]);
  await installOperatorIdentity(kc, [guarded, handmade], ns);
  operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify([guarded, handmade]) });
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('the CRD refuses a disallowed image at admission', () => {
  test('another image is refused with a message naming the allowed patterns', async () => {
    const error = await refusal(cr(guarded, 'nginx', { image: 'nginx:1.27' }));
    expect(error.code).toBe(422);
    expect(error.message).toBe(
      'Guarded.policy.appkind.test "nginx" is invalid: spec.image: Invalid value: "nginx:1.27": spec.image is not allowed for this kind; allowed images: takeyan/flask:0.0.3, registry.example.com/*, takeyan/flask:*',
    );
    expect(await rest.get(cr(guarded, 'nginx', {}))).toBeUndefined();
  });

  test('a look-alike registry host is refused; the prefix is plain text', async () => {
    expect((await refusal(cr(guarded, 'lookalike', { image: 'registry.example.com.evil.io/app:1' }))).code).toBe(422);
  });

  test('the kind image, another tag of it and an image of the allowed registry are admitted and run', async () => {
    await rest.apply(cr(guarded, 'default', { size: 1 }), 'cr-author');
    await rest.apply(cr(guarded, 'tag', { size: 1, image: 'takeyan/flask:0.0.4' }), 'cr-author');
    await rest.apply(cr(guarded, 'registry', { size: 1, image: 'registry.example.com/team/app:2' }), 'cr-author');
    await eventually('three Deployments with the asked images', async () =>
      (await imageOf('default')) === 'takeyan/flask:0.0.3' && (await imageOf('tag')) === 'takeyan/flask:0.0.4' && (await imageOf('registry')) === 'registry.example.com/team/app:2');
  });

  test('an admitted CR cannot be changed to a disallowed image either', async () => {
    const error = await refusal(cr(guarded, 'registry', { size: 1, image: 'docker.io/library/nginx:1.27' }));
    expect(error.code).toBe(422);
    expect(error.message).toContain('allowed images: takeyan/flask:0.0.3, registry.example.com/*, takeyan/flask:*');
  });
});

describe('the operator checks again when the CRD lacks the rule', () => {
  test('a disallowed image is admitted by the hand-made CRD but never applied: Degraded ImageNotAllowed and a Warning Event', async () => {
    await rest.apply(cr(handmade, 'sneaky', { size: 1, image: 'nginx:1.27' }), 'cr-author');
    await eventually('Degraded ImageNotAllowed', async () => {
      const c = await degraded(handmade, 'sneaky');
      return c?.status === 'True' && c.reason === 'ImageNotAllowed';
    });
    expect((await degraded(handmade, 'sneaky'))!.message).toBe('image "nginx:1.27": spec.image is not allowed for this kind; allowed images: takeyan/flask:0.0.3');
    await eventually('a Warning Event ImageNotAllowed', async () =>
      (await rest.list<Event>('v1', 'Event', ns)).items.some((e) => e.involvedObject.name === 'sneaky' && e.type === 'Warning' && e.reason === 'ImageNotAllowed'));
    expect(await deployment('sneaky')).toBeUndefined();
  });

  test('switching a running CR to a disallowed image keeps the running Deployment as it was', async () => {
    await rest.apply(cr(handmade, 'switch', { size: 1 }), 'cr-author');
    await eventually('Deployment created', async () => (await imageOf('switch')) === 'takeyan/flask:0.0.3');
    await rest.apply(cr(handmade, 'switch', { size: 1, image: 'nginx:1.27' }), 'cr-author');
    await eventually('Degraded ImageNotAllowed', async () => (await degraded(handmade, 'switch'))?.reason === 'ImageNotAllowed');
    expect(await imageOf('switch')).toBe('takeyan/flask:0.0.3');
    // Back to an allowed image: the operator converges again.
    await rest.apply(cr(handmade, 'switch', { size: 1 }), 'cr-author');
    await eventually('Degraded False again', async () => (await degraded(handmade, 'switch'))?.status === 'False');
  });
});
