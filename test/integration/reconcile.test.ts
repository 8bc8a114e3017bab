// Drift, pruning, steady state and errors of the reconciler, on the real control plane.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { crConverged, eventually, freeStaticNodePorts, readSharedAuditLog, sharedCluster } from './cluster.js';
import { OPERATOR_SA, OperatorProcess, startOperatorTest } from './operator-process.js';

type Obj = KubernetesObject & { spec?: Record<string, unknown> };
type Deployment = Obj & { spec: { replicas: number } };
type Service = Obj & { spec: { ports: { nodePort?: number }[] } };
type Condition = { type: string; status: string; reason: string; message: string };
type Resource = Obj & { status?: { nodes?: string[]; nodePort?: number; conditions?: Condition[] } };
type Event = Obj & { reason: string; message: string; type: string; involvedObject: { name: string; kind: string } };

const kind = SAMPLE_KIND;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const ref = (apiVersion: string, k: string, name: string): KubernetesObject => ({ apiVersion, kind: k, metadata: { name, namespace: ns } });
const crRef = (name: string) => ref(`${kind.group}/${kind.version}`, kind.kind, name);
const deploymentRef = (name: string) => ref('apps/v1', 'Deployment', `${name}-deployment`);
const serviceRef = (name: string) => ref('v1', 'Service', `${name}-svc`);
const condition = async (name: string, type: string) => (await rest.get<Resource>(crRef(name)))?.status?.conditions?.find((c) => c.type === type);

async function createAndConverge(name: string, spec: Record<string, unknown>): Promise<void> {
  await rest.apply({ ...crRef(name), spec }, 'test-user');
  await eventually(`${name} converged`, () => crConverged(rest, crRef(name), spec.size as number));
}

beforeAll(async () => {
  ({ kc, rest, ns, operator } = await startOperatorTest('reconcile', [kind]));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('drift is undone', () => {
  test('a replica count edited by hand is restored', async () => {
    await createAndConverge('drift', { size: 2 });
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${ns}/deployments/drift-deployment`, { body: { spec: { replicas: 7 } }, contentType: 'application/merge-patch+json', query: { fieldManager: 'kubectl-edit' } });
    await eventually('replicas restored to 2', async () => (await rest.get<Deployment>(deploymentRef('drift')))?.spec.replicas === 2);
  });

  test('a deleted Service is re-created and status.nodePort follows the new port', async () => {
    const before = (await rest.get<Service>(serviceRef('drift')))!;
    await rest.delete(before);
    await eventually('Service re-created', async () => {
      const after = await rest.get<Service>(serviceRef('drift'));
      return !!after && after.metadata!.uid !== before.metadata!.uid;
    });
    const after = (await rest.get<Service>(serviceRef('drift')))!;
    await eventually('status.nodePort is the new port', async () => (await rest.get<Resource>(crRef('drift')))?.status?.nodePort === after.spec.ports[0]!.nodePort);
  });

  test('a field another manager set and we do not own is left alone', async () => {
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${ns}/deployments/drift-deployment`, {
      body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'drift-deployment', annotations: { 'example.com/owner': 'team-a' } } },
      contentType: 'application/apply-patch+yaml', query: { fieldManager: 'team-a' },
    });
    await rest.apply({ ...crRef('drift'), spec: { size: 3 } }, 'test-user');
    await eventually('resized to 3', async () => (await rest.get<Deployment>(deploymentRef('drift')))?.spec.replicas === 3);
    const live = (await rest.get<Deployment>(deploymentRef('drift')))!;
    expect(live.metadata!.annotations?.['example.com/owner']).toBe('team-a');
  });

  test('a child the construct does not render is pruned', async () => {
    const owner = (await rest.get<Resource>(crRef('drift')))!;
    const stray = {
      apiVersion: 'v1', kind: 'Service',
      metadata: {
        name: 'drift-stray', namespace: ns, labels: { 'app.kubernetes.io/managed-by': 'cdk8s-appkind' },
        ownerReferences: [{ apiVersion: owner.apiVersion!, kind: owner.kind!, name: 'drift', uid: owner.metadata!.uid!, controller: true }],
      },
      spec: { ports: [{ port: 80 }] },
    };
    await rest.apply(stray, 'test-user');
    await eventually('stray Service deleted', async () => !(await rest.get(ref('v1', 'Service', 'drift-stray'))));
  });
});

describe('steady state', () => {
  test('with the CRs converged the operator sends no write request for 30 s', async () => {
    await createAndConverge('steady', { size: 3 });
    if (sharedCluster().hasScheduler) {
      await eventually('steady Ready', async () => (await condition('steady', 'Ready'))?.status === 'True', 90_000);
    }
    await new Promise((r) => setTimeout(r, 3_000)); // let the last status write land in the log
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 30_000));
    const writes = (await readSharedAuditLog()).filter((e) =>
      e.user.username === `system:serviceaccount:${ns}:${OPERATOR_SA}` &&
      ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb) &&
      e.stageTimestamp > since);
    expect(writes.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    // The operator is alive and reading: its watches are open.
    const reads = (await readSharedAuditLog()).filter((e) => e.user.username === `system:serviceaccount:${ns}:${OPERATOR_SA}` && e.verb === 'watch');
    expect(reads.length).toBeGreaterThan(0);
  }, 120_000);
});

describe('errors', () => {
  test.each([
    [{ size: 1000 }, /spec.size: Invalid value: 1000: spec.size in body should be less than or equal to 100/],
    [{ size: -1 }, /spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0/],
    [{ image: '' }, /spec.image: Invalid value: "": spec.image in body should be at least 1 chars long/],
    [{ port: 70000 }, /spec.port: Invalid value: 70000/],
    [{ nodePort: 8080 }, /spec.nodePort: Invalid value: 8080: spec.nodePort in body should be greater than or equal to 30000/],
  ])('the API server refuses a CR with %j and says why', async (spec, message) => {
    const err = await rest.apply({ ...crRef('invalid'), spec }, 'test-user').then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(422);
    expect((err as ApiError).message).toMatch(message);
  });

  test('unknown spec fields are pruned on create, and refused by server-side apply with the field named', async () => {
    const body = { ...crRef('pruned'), spec: { size: 0, colour: 'blue' } };
    const created = await rest.request<Obj>('POST', await rest.path(body.apiVersion!, body.kind!, ns), { body });
    expect(created.spec).toEqual({ size: 0 });
    const err = await rest.apply(body, 'test-user').then(() => undefined, (e: unknown) => e);
    expect((err as ApiError).message).toMatch(/\.spec\.colour: field not declared in schema/);
    await rest.delete(crRef('pruned'));
  });

  test('a name clash with an object we do not own: Degraded, an Event, the object untouched, others converge', async () => {
    await rest.apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'clash-svc', namespace: ns }, spec: { ports: [{ port: 80 }] } }, 'someone-else');
    await rest.apply({ ...crRef('clash'), spec: { size: 1 } }, 'test-user');
    await createAndConverge('bystander', { size: 1 });
    await eventually('clash Degraded', async () => (await condition('clash', 'Degraded'))?.status === 'True');
    const degraded = (await condition('clash', 'Degraded'))!;
    expect(degraded.reason).toBe('NameConflict');
    expect(degraded.message).toBe(`Service ${ns}/clash-svc already exists and is not owned by EchoFlask ${ns}/clash; delete or rename it, or rename the EchoFlask`);
    await eventually('a NameConflict Event', async () => {
      const events = await rest.list<Event>('v1', 'Event', ns);
      return events.items.some((e) => e.involvedObject.name === 'clash' && e.reason === 'NameConflict' && e.type === 'Warning');
    });
    const clash = (await rest.get<Obj>(ref('v1', 'Service', 'clash-svc')))!;
    expect(clash.metadata!.ownerReferences).toBeUndefined();
    expect(clash.metadata!.labels).toBeUndefined();
  });

  test('an apply the API server rejects (a NodePort already taken): Degraded with its message, then recovery', async () => {
    // Ports from the band the allocator keeps for fixed ports, free when picked: a random NodePort of a
    // parallel test file cannot take them meanwhile (a fixed 30950 once could).
    const [taken, other] = (await freeStaticNodePorts(kc, 2)) as [number, number];
    await createAndConverge('np-a', { size: 1, nodePort: taken });
    await rest.apply({ ...crRef('np-b'), spec: { size: 1, nodePort: taken } }, 'test-user');
    await eventually('np-b Degraded', async () => (await condition('np-b', 'Degraded'))?.status === 'True');
    const degraded = (await condition('np-b', 'Degraded'))!;
    expect(degraded.reason).toBe('ApplyFailed');
    expect(degraded.message).toMatch(/Service .*\/np-b-svc: .*provided port is already allocated/);
    await eventually('an ApplyFailed Event', async () => (await rest.list<Event>('v1', 'Event', ns)).items.some((e) => e.involvedObject.name === 'np-b' && e.reason === 'ApplyFailed'));
    await rest.apply({ ...crRef('np-b'), spec: { size: 1, nodePort: other } }, 'test-user');
    await eventually('np-b recovered', async () => (await condition('np-b', 'Degraded'))?.status === 'False');
    expect((await rest.get<Service>(serviceRef('np-b')))!.spec.ports[0]!.nodePort).toBe(other);
  });

  test('the operator is still running after all of it', () => {
    expect(operator.child.exitCode).toBeNull();
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
    const reconcileLines = operator.logs.filter((l) => l.msg === 'created object' || l.msg === 'status updated');
    expect(reconcileLines.length).toBeGreaterThan(0);
    expect(reconcileLines.every((l) => typeof l.key === 'string' && l.key.startsWith('EchoFlask/'))).toBe(true);
  });
});
