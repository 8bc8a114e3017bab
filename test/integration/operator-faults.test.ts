// The operator under faults, on a control plane of its own: a silent watch is relisted by the
// watchdog, and kube-apiserver and etcd restarts are survived without a crash or lost events.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { crConverged, eventually } from './cluster.js';
import { installCrds, OperatorProcess } from './operator-process.js';

const kind = SAMPLE_KIND;
let cp: ControlPlane;
let rest: RestClient;
let operator: OperatorProcess;

const cr = (name: string): KubernetesObject => ({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, namespace: 'default' } });

async function converge(name: string, size: number): Promise<void> {
  await eventually(`${name} with ${size} pods`, () => crConverged(rest, cr(name), size), 120_000);
}

/** Client-side apply retried while the API server comes back. */
async function applyEventually(obj: KubernetesObject): Promise<void> {
  await eventually(`apply ${obj.metadata?.name}`, async () => !!(await rest.apply(obj, 'test-user')));
}

beforeAll(async () => {
  // No scheduler: pods stay Pending, which is enough for status.nodes, and the plane starts faster.
  cp = await ControlPlane.start({ scheduler: false });
  rest = new RestClient(cp.kubeConfig());
  await installCrds(cp.kubeConfig(), [kind]);
  // Pods stay Pending, so a new CR's first status is ordinary progress, which the default
  // APPKIND_STATUS_INTERVAL_MS (60 s) holds back; a short interval keeps status (and the CR watch) prompt.
  operator = await OperatorProcess.spawn({ kubeconfig: cp.kubeconfigPath, env: { APPKIND_WATCH_STALE_SECONDS: '5', APPKIND_STATUS_INTERVAL_MS: '1000' } });
});

afterAll(async () => {
  await operator?.stop('SIGTERM');
  await cp?.stop();
});

describe('operator faults', () => {
  test('a watch silent for longer than APPKIND_WATCH_STALE_SECONDS is relisted, and reconciling goes on', async () => {
    await rest.apply({ ...cr('quiet'), spec: { size: 1 } }, 'test-user');
    await converge('quiet', 1);
    await operator.waitForLog((l) => l.msg === 'watch silent too long; relisting', 60_000);
    await rest.apply({ ...cr('quiet'), spec: { size: 2 } }, 'test-user');
    await converge('quiet', 2);
  });

  test('a kube-apiserver restart is survived (watches resume, 410 Gone relists): a CR created afterwards converges', async () => {
    // From here on an operator with the default watchdog (APPKIND_WATCH_STALE_SECONDS 300): with 5 s,
    // every watch waiting for the restarted server longer than that (a restart under load takes
    // longer) was relisted by the watchdog instead of resumed, so none met the 410 this test is about.
    expect(await operator.stop('SIGTERM')).toBe(0);
    operator = await OperatorProcess.spawn({ kubeconfig: cp.kubeconfigPath, env: { APPKIND_STATUS_INTERVAL_MS: '1000' } });
    await converge('quiet', 2);
    const linesBefore = operator.logs.length;
    await cp.restart('kube-apiserver');
    await applyEventually({ ...cr('after-apiserver'), spec: { size: 2 } } as KubernetesObject);
    await converge('after-apiserver', 2);
    expect(operator.child.exitCode).toBeNull();
    // Dropped watches resume from their resourceVersion; the restarted watch cache answers 410 for
    // the ones older than its start, and those informers relist. Waited for, not read once: an
    // informer the new CR's convergence did not need may relist later, and log lines arrive over a pipe.
    const logged = () => operator.logs.slice(linesBefore).map((l) => l.msg);
    await eventually('the operator logged its watches resuming and relisting', async () =>
      logged().includes('watch failed; resuming') && logged().includes('watch expired (410 Gone); relisting'), 30_000).catch(() => undefined);
    const lines = logged();
    expect(lines).toContain('watch failed; resuming');
    expect(lines).toContain('watch expired (410 Gone); relisting');
  });

  test('an etcd restart is survived: a change made afterwards is reconciled', async () => {
    await cp.restart('etcd');
    await applyEventually({ ...cr('quiet'), spec: { size: 3 } } as KubernetesObject);
    await converge('quiet', 3);
    expect(operator.child.exitCode).toBeNull();
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
