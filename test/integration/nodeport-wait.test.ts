// A CR asking for a NodePort that something else holds is Degraded (ApplyFailed) until the port is
// free. How soon it recovers depends on whether the operator can see the port being freed:
// - a Service in a namespace it watches gives the port up (deleted, or moved to another port): that
//   Service's event retries the waiting CR at once;
// - nothing it watches does (a Service in another namespace; an allocation an API server killed
//   mid-write left behind, freed by its repair loop): only the retry does, and APPKIND_DEGRADED_RETRY_SECONDS
//   bounds its backoff, so the CR converges within that long of the port being freed.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Service } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { createTestNamespace, crObject, eventually, freeStaticNodePorts, sharedCluster } from './cluster.js';
import { installCrds, LogLine, OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { nodePort?: number; conditions?: Condition[] } };

const kind = SAMPLE_KIND;
let kc: KubeConfig;
let rest: RestClient;
const operators: OperatorProcess[] = [];

/** A Service not of any CR, holding `nodePort`. */
function foreignService(namespace: string, name: string, nodePort: number): V1Service {
  return {
    apiVersion: 'v1', kind: 'Service', metadata: { name, namespace },
    spec: { type: 'NodePort', selector: { app: 'nothing' }, ports: [{ port: 80, nodePort }] },
  };
}

const degraded = async (ns: string, name: string) => (await rest.get<Resource>(crObject(kind, ns, name)))?.status?.conditions?.find((c) => c.type === 'Degraded');

/** The operator's failed applies of one CR so far. */
const applyFailures = (op: OperatorProcess, ns: string, name: string): LogLine[] => op.logs.filter((l) => l.msg === 'apply failed' && l.key === `${kind.kind}/${ns}/${name}`);

/** Asks for `nodePort`, waits for Degraded ApplyFailed, then for `failures` failed applies in all. */
async function blockedOn(op: OperatorProcess, ns: string, name: string, nodePort: number, failures: number): Promise<void> {
  await rest.apply(crObject(kind, ns, name, { size: 1, nodePort }), 'test-user');
  await eventually(`${name} Degraded`, async () => (await degraded(ns, name))?.status === 'True');
  const d = (await degraded(ns, name))!;
  expect(d.reason).toBe('ApplyFailed');
  expect(d.message).toMatch(/provided port is already allocated/);
  await eventually(`${failures} failed applies of ${name}`, async () => applyFailures(op, ns, name).length >= failures, 120_000);
}

async function recovered(ns: string, name: string, nodePort: number): Promise<void> {
  await eventually(`${name} recovered`, async () => (await degraded(ns, name))?.status === 'False');
  const cr = (await rest.get<Resource>(crObject(kind, ns, name)))!;
  expect(cr.status?.nodePort).toBe(nodePort);
  expect((await rest.get<V1Service>({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: ns, name: `${name}-svc` } }))!.spec!.ports![0]!.nodePort).toBe(nodePort);
}

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  rest = new RestClient(kc);
  await installCrds(kc, [kind]);
});

afterAll(async () => {
  for (const op of operators) expect(await op.stop('SIGTERM')).toBe(0);
  for (const op of operators) expect(op.logs.filter((l) => l.level === 'error')).toEqual([]);
  rest?.close();
});

describe('a CR waiting for a NodePort', () => {
  test('held in a namespace the operator does not watch: retried at least every APPKIND_DEGRADED_RETRY_SECONDS, Ready once the port is freed', async () => {
    const { ns, operator: op } = await startOperatorTest('npwait', [kind], { APPKIND_DEGRADED_RETRY_SECONDS: '2' });
    const elsewhere = await createTestNamespace(kc, 'npheld');
    operators.push(op);
    const [port] = (await freeStaticNodePorts(kc, 1)) as [number];
    const holder = await rest.apply(foreignService(elsewhere, 'holder', port), 'test-user');

    // 18 failures in a row: backing off from 5 ms, doubling without a cap (client-go's 1000 s) the
    // 18th would come 22 minutes after the first; capped at 2 s, about 20 s.
    await blockedOn(op, ns, 'far', port, 18);
    // The retries went on at the cap (each at most APPKIND_DEGRADED_RETRY_SECONDS apart is the setting's
    // promise; what is asserted is that they went on at all after the backoff passed it).
    await rest.delete(holder);
    await recovered(ns, 'far', port);
  }, 240_000);

  test('held by a Service in the watched namespace: when it goes, its event retries the CR at once, long before its backoff would', async () => {
    // A backoff cap far beyond the test: only the freed port's event can retry the CR in time.
    const { ns, operator: op } = await startOperatorTest('npevent', [kind], { APPKIND_DEGRADED_RETRY_SECONDS: '3600' });
    operators.push(op);
    const [port, other, moved] = (await freeStaticNodePorts(kc, 3)) as [number, number, number];

    // Deleted: after 12 failures the next retry is 20 s away, the one after 41 s.
    const holder = await rest.apply(foreignService(ns, 'holder', port), 'test-user');
    await blockedOn(op, ns, 'near', port, 12);
    const before = applyFailures(op, ns, 'near').length;
    await rest.delete(holder);
    await recovered(ns, 'near', port);
    // Logged before the retry that recovered the CR, but stdout can reach us after the GET that saw it.
    const freed = await op.waitForLog((l) => l.msg === 'NodePort freed; retrying the CR asking for it' && l.key === `${kind.kind}/${ns}/near`);
    expect(freed).toMatchObject({ nodePort: port });
    // Retried from the event: at most the few failures of a port released a moment after its
    // Service's delete is watched (the backoff starts again from 5 ms then: 10 failures span 2.5 s,
    // room for a loaded API server's release), not the 20 s wait.
    expect(applyFailures(op, ns, 'near').length - before).toBeLessThanOrEqual(10);

    // Moved to another port by an update: the old one is freed the same way.
    await rest.apply(foreignService(ns, 'mover', other), 'test-user');
    await blockedOn(op, ns, 'next', other, 12);
    await rest.apply(foreignService(ns, 'mover', moved), 'test-user');
    await recovered(ns, 'next', other);
    expect(await op.waitForLog((l) => l.msg === 'NodePort freed; retrying the CR asking for it' && l.key === `${kind.kind}/${ns}/next`)).toMatchObject({ nodePort: other });
  }, 300_000);
});
