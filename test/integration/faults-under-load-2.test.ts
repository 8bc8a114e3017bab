// Faults while hundreds of CRs change, on a control plane of its own whose
// kube-apiserver runs without its watch cache (so etcd serves every watch, and a compaction expires
// the ones that resume from before it), with the operator reaching the API server through a TCP proxy
// (tcp-proxy.ts) while the test and the control plane's own components reach it directly:
// kube-controller-manager down for 20 s and back; etcd compacted and every connection of the operator's
// reset, so that each of its watches resumes from before the compaction;
// a silent network partition between the operator and the API server, longer than its watchdog. Each
// in the middle of a batch of creates, scales and deletes; after each, the end state of every CR is
// checked as in faults-under-load.test.ts (load.ts endStateProblems), and each fault is shown to have
// reached what it aims at. The other faults under load are in faults-under-load.test.ts.
//
// LOAD_CRS (default 300) sets the batch size (a smaller one is for developing the test only);
// LOAD_DEBUG=1 prints what is still unconverged on each poll.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CoreV1Api, V1Deployment } from '@kubernetes/client-node';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { converged as convergedModel, LoadBatches, LoadModel, sleep, startLoadCluster } from './load.js';
import { OperatorProcess } from './operator-process.js';
import { TcpProxy } from './tcp-proxy.js';

const kind = SAMPLE_KIND;
const N = Number(process.env.LOAD_CRS ?? 300);
const NS = 'load';
/** The operator's watchdog: a watch silent this long is relisted (without the watch cache no bookmarks come). */
const APPKIND_WATCH_STALE_SECONDS = 10;
const IN_FLIGHT = 8;
const CONVERGE_MS = Number(process.env.LOAD_CONVERGE_MS ?? 240_000);

let cp: ControlPlane;
let rest: RestClient;
let core: CoreV1Api;
let operator: OperatorProcess;
let proxy: TcpProxy;
/** The operator's kubeconfig, its server the proxy. */
let viaProxy: string;

/**
 * What the test asked for. Every batch changes each CR at most once and starts from a converged
 * state, so each Deployment's generation must be exactly 1 + the scales asked for.
 */
const model = new LoadModel(kind, NS, true);
let batches: LoadBatches;

async function startOperator(): Promise<OperatorProcess> {
  return OperatorProcess.spawn({
    kubeconfig: viaProxy,
    env: { APPKIND_WATCH_NAMESPACE: NS, APPKIND_WATCH_STALE_SECONDS: String(APPKIND_WATCH_STALE_SECONDS), APPKIND_LOG_LEVEL: 'info' },
  });
}

/** Waits until the end state holds for every CR (load.ts endStateProblems); fails with what is still wrong. */
const converged = (what: string): Promise<number> => convergedModel(rest, core, model, what, CONVERGE_MS);

/** The operator kept running (no exit, no restart) and logged no error. */
function expectOperatorAlive(op: OperatorProcess): void {
  expect(op.exited).toBe(false);
  expect(op.logs.filter((l) => l.level === 'error').map((l) => `${l.msg} ${l.key ?? ''}`)).toEqual([]);
}

/** The CRs the test wants now that have no Deployment in the cluster (the operator has not acted on them). */
async function wantedWithoutDeployment(): Promise<string[]> {
  const deployments = new Set((await rest.list<V1Deployment>('apps/v1', 'Deployment', NS)).items.map((d) => d.metadata!.name!));
  return [...model.wanted.keys()].filter((name) => !deployments.has(`${name}-deployment`));
}

beforeAll(async () => {
  let operatorKubeconfig: string;
  ({ cp, rest, core, operatorKubeconfig } = await startLoadCluster(kind, NS, 4 * N, { watchCache: false }));
  batches = new LoadBatches(rest, model, IN_FLIGHT);
  proxy = await TcpProxy.start(new URL(cp.server));
  viaProxy = join(cp.dir, 'operator-via-proxy.kubeconfig');
  writeFileSync(viaProxy, readFileSync(operatorKubeconfig, 'utf8').replaceAll(cp.server, `https://127.0.0.1:${proxy.port}`));
  operator = await startOperator();
  // The CRs the batches below scale and delete.
  await batches.run(Array.from({ length: N }, () => batches.create()), N, async () => undefined);
  await converged(`${N} CRs created through the proxy`);
}, 400_000);

afterAll(async () => {
  await operator?.stop('SIGTERM');
  await proxy?.close();
  rest?.close();
  await cp?.stop();
});

describe(`faults while ${N} CRs are created, scaled or deleted (no watch cache, the operator behind a TCP proxy)`, () => {
  test(`kube-controller-manager down for 20 s mid-batch (${N} creates, scales and deletes), then back: every CR converges, the operator not restarted`, async () => {
    const pid = operator.child.pid;
    let unrolled: string[] = [];
    await batches.run(batches.mixed(N), Math.floor(N / 3), () =>
      cp.restart('kube-controller-manager', async () => {
        await sleep(20_000);
        // No deployment controller meanwhile: Deployments the operator created have no status yet.
        const deployments = (await rest.list<V1Deployment>('apps/v1', 'Deployment', NS)).items;
        unrolled = deployments.filter((d) => d.status?.observedGeneration !== d.metadata?.generation).map((d) => d.metadata!.name!);
      }),
    );
    await converged('kube-controller-manager down and back');
    expectOperatorAlive(operator);
    expect(operator.child.pid).toBe(pid);
    // The outage did reach the cluster: Deployments written while it lasted were left unrolled.
    console.log(`kube-controller-manager down 20 s: ${unrolled.length} Deployments not rolled out when it came back`);
    expect(unrolled.length).toBeGreaterThan(0);
  }, 400_000);

  test(`etcd compacted mid-batch (${N} creates, scales and deletes) and the operator's connections reset: every watch resuming from before it expires (410) and relists, every CR converges`, async () => {
    const pid = operator.child.pid;
    let before = operator.logs.length;
    let listedAt = '';
    let revision = 0;
    let reconnectsBefore = 0;
    await batches.run(batches.mixed(N), Math.floor(N / 3), async () => {
      listedAt = (await rest.list('v1', 'Service', NS)).resourceVersion!;
      await sleep(1_000);
      // Held first, so no watch of the operator's sees anything newer than the compaction; then every
      // connection reset, as a network blip does: each watch resumes from its last resourceVersion.
      proxy.partition();
      try {
        revision = await cp.compactEtcd();
        before = operator.logs.length;
        reconnectsBefore = proxy.accepted;
        proxy.reset();
      } finally {
        proxy.heal();
      }
    });
    await converged('etcd compaction');
    expectOperatorAlive(operator);
    expect(operator.child.pid).toBe(pid);
    expect(proxy.accepted).toBeGreaterThan(reconnectsBefore);
    // The compaction did happen: a list at a resourceVersion from before it, read from etcd, is gone.
    const old = await rest
      .request('GET', `/api/v1/namespaces/${NS}/services`, { query: { resourceVersion: listedAt, resourceVersionMatch: 'Exact' } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(old).toBeInstanceOf(ApiError);
    expect((old as ApiError).code).toBe(410);
    // And it expired the operator's watches: each one that resumed from a resourceVersion before the
    // compaction was refused by etcd (410) and relisted. A watch whose last event was the compaction's
    // own revision, or one that resumed again after its relist, resumes from at or after it: allowed.
    const lines = operator.logs.slice(before);
    const resumed = new Set(
      lines.filter((l) => l.msg === 'watch failed; resuming' && Number(l.resourceVersion) < revision).map((l) => String(l.resource)),
    );
    const expired = new Set(
      lines
        .filter((l) => l.msg === 'watch expired (410 Gone); relisting' || (l.msg === 'watch failed; relisting' && l.code === 410))
        .map((l) => String(l.resource)),
    );
    console.log(`etcd compacted to revision ${revision}: watches resumed from before it ${[...resumed].join(', ')}; expired and relisted ${[...expired].join(', ')}`);
    expect(expired).toContain(`/apis/${kind.group}/${kind.version}/namespaces/${NS}/${kind.plural}`);
    expect(expired).toContain(`/apis/apps/v1/namespaces/${NS}/deployments`);
    expect([...resumed].filter((r) => !expired.has(r))).toEqual([]);
  }, 400_000);

  test(`a silent network partition between the operator and the API server for ${APPKIND_WATCH_STALE_SECONDS + 10} s mid-batch (${N} creates, scales and deletes), then healed: every CR converges, the operator not restarted`, async () => {
    const pid = operator.child.pid;
    let stalled: string[] = [];
    let silentRelists = 0;
    await batches.run(batches.mixed(N), Math.floor(N / 3), async () => {
      const before = operator.logs.length;
      proxy.partition();
      try {
        await sleep((APPKIND_WATCH_STALE_SECONDS + 10) * 1000);
        // Nothing of the operator's reached the server meanwhile: CRs created since have no Deployment.
        stalled = await wantedWithoutDeployment();
      } finally {
        proxy.heal();
      }
      silentRelists = operator.logs.slice(before).filter((l) => l.msg === 'watch silent too long; relisting').length;
    });
    await converged('network partition healed');
    expectOperatorAlive(operator);
    expect(operator.child.pid).toBe(pid);
    console.log(`partition of ${APPKIND_WATCH_STALE_SECONDS + 10} s: ${stalled.length} CRs without a Deployment when it healed; ${silentRelists} watches given up as silent meanwhile`);
    expect(stalled.length).toBeGreaterThan(0);
  }, 400_000);
});
