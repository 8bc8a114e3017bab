// A CR whose Deployment or Service name is taken by an object it does not own is Degraded
// NameConflict until that object goes. The object's delete event retries the CR at once (as a freed
// NodePort's does, see nodeport-wait.test.ts), instead of its next backoff retry, which with
// APPKIND_DEGRADED_RETRY_SECONDS=3600 is far beyond this test after a dozen failures.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Service } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { controllerOf } from '../../operator/runtime/ref.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, foreignDeployment, sharedCluster } from './cluster.js';
import { installCrds, OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };

const kind = SAMPLE_KIND;
let kc: KubeConfig;
let rest: RestClient;
let op: OperatorProcess | undefined;

const degraded = async (ns: string, name: string) => (await rest.get<Resource>(crObject(kind, ns, name)))?.status?.conditions?.find((c) => c.type === 'Degraded');

/** Reconciles of one CR so far (the operator logs each at debug level). */
const reconciles = (ns: string, name: string) => op!.logs.filter((l) => l.msg === 'reconcile started' && l.key === `${kind.kind}/${ns}/${name}`).length;

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  rest = new RestClient(kc);
  await installCrds(kc, [kind]);
});

afterAll(async () => {
  if (op) {
    expect(await op.stop('SIGTERM')).toBe(0);
    expect(op.logs.filter((l) => l.level === 'error')).toEqual([]);
  }
  rest?.close();
});

describe('a CR whose child name is taken', () => {
  test('when the foreign Deployment or Service is deleted, its event retries the CR at once, long before its backoff would', async () => {
    // A backoff cap far beyond the test: only the delete's event can retry the CRs in time.
    const started = await startOperatorTest('conflict', [kind], { APPKIND_DEGRADED_RETRY_SECONDS: '3600' });
    const ns = started.ns;
    op = started.operator;
    const foreignService: V1Service & KubernetesObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc-taken-svc', namespace: ns }, spec: { ports: [{ port: 80 }] } };
    const foreign = [await rest.apply(foreignDeployment(ns, 'dep-taken-deployment'), 'someone-else'), await rest.apply(foreignService, 'someone-else')];
    const names = ['dep-taken', 'svc-taken'];
    for (const name of names) await rest.apply(crObject(kind, ns, name, { size: 1 }), 'test-user');
    for (const name of names) {
      await eventually(`${name} Degraded`, async () => (await degraded(ns, name))?.status === 'True');
      expect((await degraded(ns, name))!.reason).toBe('NameConflict');
    }
    // 13 reconciles, each a failure (whatever ran it: a retry, or an event of the CR or its other
    // child), about 20 s of backoff from 5 ms doubling: the next retry is 20 s away, the one after 41 s.
    for (const name of names) await eventually(`13 reconciles of ${name}`, async () => reconciles(ns, name) >= 13, 120_000);

    for (const obj of foreign) await rest.delete(obj);
    for (const name of names) {
      // Logged before the reconcile that recovers the CR; stdout can reach us a moment after.
      const line = await op.waitForLog((l) => l.msg === 'conflicting object deleted; retrying the CR whose child takes its name' && l.key === `${kind.kind}/${ns}/${name}`);
      expect(line.object).toBe(name === 'dep-taken' ? `Deployment ${ns}/dep-taken-deployment` : `Service ${ns}/svc-taken-svc`);
      await eventually(`${name} recovered`, async () => (await degraded(ns, name))?.status === 'False');
    }
    // The CRs' own children now, controlled by them.
    for (const name of names) {
      const cr = (await rest.get<Resource>(crObject(kind, ns, name)))!;
      for (const child of [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-deployment`, namespace: ns } }, { apiVersion: 'v1', kind: 'Service', metadata: { name: `${name}-svc`, namespace: ns } }]) {
        expect(controllerOf((await rest.get(child))!)?.uid).toBe(cr.metadata!.uid);
      }
    }
  }, 300_000);
});
