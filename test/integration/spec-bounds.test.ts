// Defence in depth beyond the image: with a CRD that lacks the generated bounds (installed
// by hand: no maximum on spec.size, no range on spec.port), the operator checks them itself. A CR out
// of bounds is never applied (Degraded InvalidSpec, a Warning Event); a running CR edited out of bounds
// keeps its Deployment as it was, and converges again once back within them.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { crdObjects } from '../../operator/kinds/crd-yaml.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { createTestNamespace, crObject, eventually, sharedCluster } from './cluster.js';
import { installOperatorIdentity, OperatorProcess } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };
type Event = KubernetesObject & { reason: string; type: string; involvedObject: { name: string } };
type SpecSchema = { properties: Record<string, Record<string, unknown>> };
type HandmadeCrd = KubernetesObject & { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: SpecSchema } } } }[] } };

// A kind of its own: other test files share the cluster and install the sample kind's CRD.
const loose: AppKind = {
  group: 'loose.appkind.test', version: 'v1', kind: 'Loose', plural: 'looses', appName: 'loose', image: 'takeyan/flask:0.0.3', port: 5000, maxSize: 5,
};

let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const cr = (name: string, spec: Record<string, unknown>) => crObject(loose, ns, name, spec);
const degraded = async (name: string) => (await rest.get<Resource>(cr(name, {})))?.status?.conditions?.find((c) => c.type === 'Degraded');
const replicasOf = async (name: string) =>
  (await rest.get<V1Deployment & KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-deployment`, namespace: ns } }))?.spec?.replicas;

beforeAll(async () => {
  const kc = sharedCluster().kubeConfig;
  rest = new RestClient(kc);
  ns = await createTestNamespace(kc, 'bounds');
  // The generated CRD without its bounds on size and port, as someone might install it by hand.
  const crd = crdObjects([loose])[0] as unknown as HandmadeCrd;
  const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec;
  delete spec.properties.size!.maximum;
  delete spec.properties.port!.maximum;
  await applyManifests(kc, [crd]);
  await installOperatorIdentity(kc, [loose], ns);
  operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify([loose]) });
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  rest?.close();
});

describe("the operator checks the CRD's bounds when the CRD lacks them", () => {
  test("spec.size above the kind's maximum, admitted by the hand-made CRD, is never applied: Degraded InvalidSpec and a Warning Event", async () => {
    await rest.apply(cr('huge', { size: 1000 }), 'cr-author');
    await eventually('Degraded InvalidSpec', async () => (await degraded('huge'))?.reason === 'InvalidSpec');
    expect((await degraded('huge'))!.message).toContain('spec.size 1000 is not an integer from 0 to 5');
    await eventually('a Warning Event InvalidSpec', async () =>
      (await rest.list<Event>('v1', 'Event', ns)).items.some((e) => e.involvedObject.name === 'huge' && e.type === 'Warning' && e.reason === 'InvalidSpec'));
    expect(await replicasOf('huge')).toBeUndefined();
  });

  test('a running CR scaled above the maximum, or given port 70000, keeps its Deployment as it was', async () => {
    await rest.apply(cr('running', { size: 2 }), 'cr-author');
    await eventually('Deployment with 2 replicas', async () => (await replicasOf('running')) === 2);
    await rest.apply(cr('running', { size: 6 }), 'cr-author');
    await eventually('Degraded InvalidSpec', async () => (await degraded('running'))?.reason === 'InvalidSpec');
    await rest.apply(cr('running', { size: 3, port: 70000 }), 'cr-author');
    await eventually('Degraded InvalidSpec for the port', async () => (await degraded('running'))?.message.includes('spec.port 70000') ?? false);
    expect(await replicasOf('running')).toBe(2);
    // Back within the bounds: the operator converges again.
    await rest.apply(cr('running', { size: 5 }), 'cr-author');
    await eventually('Degraded False and 5 replicas', async () => (await degraded('running'))?.status === 'False' && (await replicasOf('running')) === 5);
  });

  test('the operator logged no error', () => {
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
