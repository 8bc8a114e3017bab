// A kind that asks for a PodDisruptionBudget and a NetworkPolicy (and the placement and port settings)
// on the real control plane: the operator creates both, owned by the CR as the Deployment and Service
// are, puts back one that is deleted, writes nothing in steady state, and prunes both once the kind
// stops asking (the Deployment and Service losing the other settings); one of someone else's under the
// child's name holds the CR Degraded until it is deleted, which retries the CR at once.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment, V1NetworkPolicy, V1PodDisruptionBudget, V1Service } from '@kubernetes/client-node';
import { AppKind, ImagePullPolicy } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { crConverged, crObject, eventually } from './cluster.js';
import { expectNoOperatorWrites, OperatorProcess, prepareOperatorNamespace } from './operator-process.js';

type Condition = { type: string; status: string; reason?: string };
type Resource = KubernetesObject & { status?: { nodes?: string[]; conditions?: Condition[] } };

const kind: AppKind = {
  ...SAMPLE_KIND,
  podDisruptionBudget: { maxUnavailable: '1' },
  networkPolicy: { from: [{ podSelector: { matchLabels: { role: 'client' } } }] },
  topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone' }],
  podAntiAffinity: {},
  portName: 'http-echo',
  appProtocol: 'http',
  imagePullPolicy: ImagePullPolicy.ALWAYS,
  resources: { requests: { ephemeralStorage: '64Mi' }, limits: { ephemeralStorage: '256Mi' } },
};
let rest: RestClient;
let ns: string;
let operator: OperatorProcess | undefined;

const crRef = (name: string): KubernetesObject => crObject(kind, ns, name);
const get = <T extends KubernetesObject>(apiVersion: string, k: string, name: string) => rest.get<T>({ apiVersion, kind: k, metadata: { name, namespace: ns } });
const pdb = (name: string) => get<V1PodDisruptionBudget>('policy/v1', 'PodDisruptionBudget', `${name}-pdb`);
const netpol = (name: string) => get<V1NetworkPolicy>('networking.k8s.io/v1', 'NetworkPolicy', `${name}-ingress`);
const deployment = (name: string) => get<V1Deployment>('apps/v1', 'Deployment', `${name}-deployment`);
const service = (name: string) => get<V1Service>('v1', 'Service', `${name}-svc`);
const converged = (name: string) => crConverged(rest, crRef(name), 0);

beforeAll(async () => {
  ({ rest, ns } = await prepareOperatorNamespace('pod-policies', [kind]));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('a kind with a PodDisruptionBudget and a NetworkPolicy', () => {
  test('both are created and owned by the CR, a deleted one comes back, nothing is written in steady state, and both are pruned when the kind drops them', async () => {
    operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify({ kinds: [kind] }) });
    const cr = await rest.apply({ ...crRef('guarded'), spec: { size: 0 } }, 'test-user');
    await eventually('guarded converged with its budget and policy', async () => (await converged('guarded')) && !!(await pdb('guarded')) && !!(await netpol('guarded')));

    const budget = (await pdb('guarded'))!;
    const policy = (await netpol('guarded'))!;
    for (const obj of [budget, policy]) {
      expect(obj.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'EchoFlask', name: 'guarded', uid: cr.metadata!.uid, controller: true })]);
    }
    expect(budget.spec).toMatchObject({ maxUnavailable: 1, selector: { matchLabels: { 'app.kubernetes.io/instance': 'guarded' } } });
    expect(policy.spec?.ingress).toEqual([{ from: [{ podSelector: { matchLabels: { role: 'client' } } }], ports: [{ protocol: 'TCP', port: 5000 }] }]);
    const pod = (await deployment('guarded'))!.spec!.template.spec!;
    expect(pod.topologySpreadConstraints?.[0]).toMatchObject({ topologyKey: 'topology.kubernetes.io/zone', maxSkew: 1, whenUnsatisfiable: 'ScheduleAnyway' });
    expect(pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
    expect(pod.containers[0]).toMatchObject({ imagePullPolicy: 'Always', resources: { requests: { 'ephemeral-storage': '64Mi' }, limits: { 'ephemeral-storage': '256Mi' } } });
    expect((await service('guarded'))!.spec!.ports).toEqual([expect.objectContaining({ name: 'http-echo', appProtocol: 'http', port: 5000 })]);

    await rest.delete(budget);
    await eventually('the deleted budget put back', async () => {
      const again = await pdb('guarded');
      return !!again && again.metadata?.uid !== budget.metadata?.uid;
    });
    await expectNoOperatorWrites(ns, 10_000);

    // The same CR under the sample kind, which asks for none of it.
    expect(await operator.stop('SIGTERM')).toBe(0);
    operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify({ kinds: [SAMPLE_KIND] }) });
    await eventually('budget and policy pruned', async () => !(await pdb('guarded')) && !(await netpol('guarded')));
    await eventually('placement and port settings released', async () => {
      const p = (await deployment('guarded'))?.spec?.template.spec;
      const port = (await service('guarded'))?.spec?.ports?.[0];
      return !!p && !p.affinity && !p.topologySpreadConstraints && port?.name === 'http' && port.appProtocol === undefined;
    });
    await eventually('guarded converged again', () => converged('guarded'));
    await expectNoOperatorWrites(ns, 10_000);
  }, 180_000);

  test('a PodDisruptionBudget of someone else\'s under the child\'s name: Degraded NameConflict, and its deletion retries the CR at once', async () => {
    expect(await operator!.stop('SIGTERM')).toBe(0);
    // A backoff cap far beyond the test: only the delete's event can retry the CR in time.
    operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify({ kinds: [kind] }), APPKIND_DEGRADED_RETRY_SECONDS: '3600' });
    const foreign = await rest.apply(
      { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'taken-pdb', namespace: ns }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'other' } } } },
      'someone-else',
    );
    await rest.apply({ ...crRef('taken'), spec: { size: 0 } }, 'test-user');
    const degraded = async () => (await rest.get<Resource>(crRef('taken')))?.status?.conditions?.find((c) => c.type === 'Degraded');
    await eventually('taken Degraded NameConflict', async () => (await degraded())?.reason === 'NameConflict');
    expect((await pdb('taken'))!.spec!.maxUnavailable).toBe(0);

    await rest.delete(foreign);
    const line = await operator!.waitForLog((l) => l.msg === 'conflicting object deleted; retrying the CR whose child takes its name' && l.key === `${kind.kind}/${ns}/taken`);
    expect(line.object).toBe(`PodDisruptionBudget ${ns}/taken-pdb`);
    await eventually('taken recovered with its own budget', async () => (await degraded())?.status === 'False' && (await pdb('taken'))?.metadata?.ownerReferences?.[0]?.name === 'taken');
  }, 120_000);
});
