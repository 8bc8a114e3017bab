// Fields render() stops giving are released from the live objects, as a server-side apply of the new
// desired object does, and steady state still sends nothing: the reconciler compares the field set it
// owns (its managedFields entry) with what it renders, not only the rendered values with the live ones.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Deployment, V1Service } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { crConverged, crObject, eventually, freeStaticNodePorts, sharedCluster } from './cluster.js';
import { expectNoOperatorWrites, OperatorProcess, prepareOperatorNamespace } from './operator-process.js';

type Condition = { type: string; status: string };
type Resource = KubernetesObject & { status?: { nodes?: string[]; conditions?: Condition[] } };

const kind = SAMPLE_KIND;
const MANAGER = 'appkind-operator';
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess | undefined;

const crRef = (name: string): KubernetesObject => crObject(kind, ns, name);
const deployment = (name: string) => rest.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-deployment`, namespace: ns } });
const service = (name: string) => rest.get<V1Service>({ apiVersion: 'v1', kind: 'Service', metadata: { name: `${name}-svc`, namespace: ns } });
const ownedBy = (obj: KubernetesObject | undefined, manager: string) => JSON.stringify(obj?.metadata?.managedFields?.find((m) => m.manager === manager && m.operation === 'Apply')?.fieldsV1 ?? {});
const converged = (name: string) => crConverged(rest, crRef(name), 0);

beforeAll(async () => {
  ({ kc, rest, ns } = await prepareOperatorNamespace('released', [kind]));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('a field render() no longer gives is released', () => {
  test('a kind setting removed (runAsUser) leaves the live Deployment after a restart of the operator, then nothing is written', async () => {
    const withUser = { ...kind, runAsUser: 1234 };
    const before = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify({ kinds: [withUser] }) });
    await rest.apply({ ...crRef('setting'), spec: { size: 0 } }, 'test-user');
    await eventually('setting converged', () => converged('setting'));
    expect((await deployment('setting'))?.spec?.template.spec?.containers[0]?.securityContext?.runAsUser).toBe(1234);
    expect(await before.stop('SIGTERM')).toBe(0);

    operator = await OperatorProcess.start(ns, {});
    await eventually('runAsUser released', async () => (await deployment('setting'))?.spec?.template.spec?.containers[0]?.securityContext?.runAsUser === undefined);
    expect(ownedBy(await deployment('setting'), MANAGER)).not.toContain('f:runAsUser');
    // The log line is written after the apply returns, so it may reach us after the GET above saw the change.
    const line = await operator.waitForLog((l) => l.msg === 'applied drifted object' && String(l.object).includes('setting-deployment'));
    expect(line.field).toBe('released spec.template.spec.containers[k:{"name":"echoflask"}].securityContext.runAsUser');
    // The apply made a new Deployment generation: the CR's status goes Ready=False at once and back to
    // True only once the Deployment controller has observed it, as late as that controller gets CPU.
    // The quiet period starts after that last status write, not a fixed time after the apply.
    await eventually('the Deployment controller caught up and the CR says so', async () => {
      const d = await deployment('setting');
      const conditions = (await rest.get<Resource>(crRef('setting')))?.status?.conditions ?? [];
      const is = (type: string, status: string) => conditions.find((c) => c.type === type)?.status === status;
      return d?.status?.observedGeneration === d?.metadata?.generation && is('Ready', 'True') && is('Progressing', 'False');
    });
    await expectNoOperatorWrites(ns, 10_000);
  }, 120_000);

  test('a CR drops spec.nodePort: our claim on the port is released, as a server-side apply without it does, then nothing is written', async () => {
    const [port] = (await freeStaticNodePorts(kc, 1)) as [number];
    await rest.apply({ ...crRef('fixed'), spec: { size: 0, nodePort: port } }, 'test-user');
    await eventually('fixed converged', () => converged('fixed'));
    const before = (await service('fixed'))!;
    expect(before.spec?.ports?.[0]?.nodePort).toBe(port);
    expect(ownedBy(before, MANAGER)).toContain('f:nodePort');

    await rest.apply({ ...crRef('fixed'), spec: { size: 0 } }, 'test-user');
    await eventually('nodePort no longer ours', async () => !ownedBy(await service('fixed'), MANAGER).includes('f:nodePort'));
    // The API server keeps a NodePort Service's allocated port when an update leaves it out; what
    // changes is that nobody claims it, so a later CR or user may set another.
    const after = (await service('fixed'))!;
    expect(after.spec?.type).toBe('NodePort');
    expect(after.spec?.ports?.[0]?.nodePort).toBeGreaterThanOrEqual(30000);
    await expectNoOperatorWrites(ns, 10_000);
  }, 120_000);

  test('a new default image in the kind\'s settings, across a restart, rolls out to every CR of the kind', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `fleet-${i}`);
    for (const name of names) await rest.apply({ ...crRef(name), spec: { size: 1 } }, 'test-user');
    const image = (name: string) => deployment(name).then((d) => d?.spec?.template.spec?.containers[0]?.image);
    await eventually('fleet on the kind\'s image', async () => (await Promise.all(names.map(image))).every((i) => i === kind.image));
    expect(await operator!.stop('SIGTERM')).toBe(0);

    const next = 'takeyan/flask:0.0.4';
    operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify({ kinds: [{ ...kind, image: next }] }) });
    await eventually('fleet on the new image', async () => (await Promise.all(names.map(image))).every((i) => i === next), 120_000);
    // The CRs' conditions say the rollout is done, true to the Deployments (observedGeneration caught up).
    await eventually('every CR: rollout complete and not Degraded', async () => (await Promise.all(names.map(async (name) => {
      const d = await deployment(name);
      const conditions = (await rest.get<Resource>(crRef(name)))?.status?.conditions ?? [];
      const is = (type: string, status: string) => conditions.find((c) => c.type === type)?.status === status;
      return d?.status?.observedGeneration === d?.metadata?.generation && d?.status?.updatedReplicas === 1 &&
        is('Progressing', 'False') && is('Degraded', 'False') && (!sharedCluster().hasScheduler || is('Ready', 'True'));
    }))).every(Boolean), 120_000);
    await expectNoOperatorWrites(ns, 10_000);
  }, 300_000);

  test('the operator logged no error', () => {
    expect(operator!.exited).toBe(false);
    expect(operator!.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
