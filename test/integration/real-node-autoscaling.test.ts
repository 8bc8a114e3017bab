// A HorizontalPodAutoscaler drives an app kind on the real node, as docs/autoscaling.md shows: a kind
// whose pods request CPU, `kubectl autoscale <kind> <cr> --min 2 --max 5 --cpu-percent 50`, CPU load
// from this process through the CR's NodePort on localhost (the echo app's /api/burn), and metrics-server
// scraping the kubelet. The HPA raises spec.size through the scale subresource, the operator follows
// (Deployment replicas, pods in status.nodes); the load stops and both come back down. They never
// fight: the audit log shows the HPA alone writing spec.size and the operator alone the Deployment,
// and watches show replicas following spec.size in step, one way per phase.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { kindsFromFile } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane, type AuditEvent } from '../../tools/controlplane/controlplane.js';
import { loadEchoStandIn } from '../../tools/echo-image.js';
import { createTestNamespace, eventually } from './cluster.js';
import { OPERATOR_SA, OperatorProcess, startOperatorOn } from './operator-process.js';
import { getLocal } from './real-node-pods.js';

const exec = promisify(execFile);
const log = (line: string): void => void process.stderr.write(`${line}\n`);

const root = join(import.meta.dirname, '..', '..');
/** The kind docs/autoscaling.md shows: the echo app with a CPU request, which the HPA's percentage is of. */
const kindsFile = join(root, 'examples', 'autoscaling.yaml');
const kind = kindsFromFile(kindsFile)[0]!;
const crFile = join(root, 'examples', 'example-burner.yaml');
const name = (parse(readFileSync(crFile, 'utf8')) as KubernetesObject).metadata!.name!;
const deploymentName = `${name}-deployment`;

type Cr = KubernetesObject & { spec?: { size?: number }; status?: { nodes?: string[]; replicas?: number; readyReplicas?: number } };
type Deployment = KubernetesObject & { spec?: { replicas?: number } };
type Hpa = KubernetesObject & { status?: { currentReplicas?: number; desiredReplicas?: number; currentMetrics?: { resource?: { current?: { averageUtilization?: number } } }[] } };
/** One change seen by a watch: the value of spec.size (CR) or spec.replicas (Deployment). */
interface Seen {
  value: number;
  at: number;
}

let cp: ControlPlane;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;
const sizes: Seen[] = [];
const replicas: Seen[] = [];
const stopWatches: (() => void)[] = [];

const kubectl = async (...args: string[]): Promise<string> => (await exec('kubectl', ['--kubeconfig', cp.kubeconfigPath, '-n', ns, ...args])).stdout;
const cr = async (): Promise<Cr | undefined> => rest.get<Cr>({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, namespace: ns } });
const hpaLine = async (): Promise<string> => {
  const hpa = await rest.get<Hpa>({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name, namespace: ns } });
  return `HPA current ${hpa?.status?.currentReplicas} desired ${hpa?.status?.desiredReplicas} cpu ${hpa?.status?.currentMetrics?.[0]?.resource?.current?.averageUtilization ?? '?'}%`;
};

/**
 * Records each change of `field` of the one object `objName` from a watch of `path`. client-node ends a
 * watch after 30 s without an event; it resumes from the last resourceVersion seen, so no change is lost.
 */
async function record(path: string, objName: string, field: (obj: KubernetesObject) => number | undefined, into: Seen[]): Promise<void> {
  let resourceVersion: string | undefined;
  let stopped = false;
  let request: AbortController | undefined;
  const watch = async (): Promise<void> => {
    request = await new Watch(kc).watch(
      path,
      { fieldSelector: `metadata.name=${objName}`, allowWatchBookmarks: true, ...(resourceVersion && { resourceVersion }) },
      (type, obj: KubernetesObject) => {
        resourceVersion = obj.metadata?.resourceVersion ?? resourceVersion;
        const value = type === 'BOOKMARK' ? undefined : field(obj);
        if (value !== undefined && into.at(-1)?.value !== value) into.push({ value, at: Date.now() });
      },
      (err) => {
        if (stopped) return;
        if (err && !['AbortError', 'TimeoutError'].includes((err as Error).name)) log(`autoscaling test: watch of ${path} ended: ${String(err)}; resuming`);
        watch().catch((e: unknown) => log(`autoscaling test: watch of ${path} could not resume: ${String(e)}`));
      },
    );
  };
  await watch();
  stopWatches.push(() => {
    stopped = true;
    request?.abort();
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The values in order, each once per run (what a change of it looked like). */
const values = (seen: Seen[]): number[] => seen.map((s) => s.value);
const monotonic = (xs: number[], up: boolean): boolean => xs.every((x, i) => i === 0 || (up ? x >= xs[i - 1]! : x <= xs[i - 1]!));
/** Whether `sub` appears in `seq` in order (not necessarily adjacent). */
const subsequence = (sub: number[], seq: number[]): boolean => {
  let i = 0;
  for (const x of seq) if (x === sub[i]) i++;
  return i === sub.length;
};

/** CPU load: one request at a time, each spinning 100 ms in a pod, with 100 ms between (about half a core). */
function startLoad(nodePort: number): { stop: () => Promise<number> } {
  let running = true;
  let answered = 0;
  const loop = (async () => {
    while (running) {
      try {
        if ((await getLocal(nodePort, '/api/burn?ms=100', 5000)).status === 200) answered++;
      } catch {
        // a pod going away mid-request; the next request goes to another
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return answered;
    },
  };
}

/** The CR's state once the operator caught up with spec.size: Deployment replicas and ready pods in status.nodes. */
async function followed(size: number): Promise<boolean> {
  const deployment = await rest.get<Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: deploymentName, namespace: ns } });
  const status = (await cr())?.status;
  return deployment?.spec?.replicas === size && status?.readyReplicas === size && status.nodes?.length === size;
}

beforeAll(async () => {
  // A first run builds metrics-server from the Go module proxy (minutes); later runs reuse it.
  cp = await ControlPlane.start({ realNode: true, metricsServer: true, auditLog: true, log });
  await loadEchoStandIn(cp, log);
  kc = cp.kubeConfig();
  rest = new RestClient(kc);
  ns = await createTestNamespace(kc, 'autoscaling');
  operator = await startOperatorOn(cp, ns, [kind], { APPKIND_CONFIG: kindsFile });
  await record(`/apis/${kind.group}/${kind.version}/namespaces/${ns}/${kind.plural}`, name, (o) => (o as Cr).spec?.size, sizes);
  await record(`/apis/apps/v1/namespaces/${ns}/deployments`, deploymentName, (o) => (o as Deployment).spec?.replicas, replicas);
}, 1_200_000);

afterAll(async () => {
  for (const stop of stopWatches) stop();
  await operator?.stop('SIGTERM');
  await cp?.stop();
});

describe('a HorizontalPodAutoscaler on an app kind (real node, metrics-server)', () => {
  let nodePort = 0;
  let loadStarted = 0;
  let loadStopped = 0;

  test('kubectl autoscale burner busy --min 2 --max 5 --cpu-percent 50: the HPA reads the pods\' CPU and sets spec.size to its minimum', async () => {
    expect(kind.resources?.requests?.cpu).toBe('50m');
    await kubectl('apply', '-f', crFile);
    expect(await kubectl('autoscale', `${kind.kind.toLowerCase()}/${name}`, '--min=2', '--max=5', '--cpu-percent=50')).toContain(`horizontalpodautoscaler.autoscaling/${name} autoscaled`);
    // Down in seconds once the load stops, not after the default 5 minutes.
    await kubectl('patch', 'hpa', name, '--type=merge', '-p', JSON.stringify({ spec: { behavior: { scaleDown: { stabilizationWindowSeconds: 15 } } } }));
    await eventually('the HPA raises spec.size to its minimum 2 and the operator follows', () => followed(2), 240_000);
    expect((await cr())?.spec?.size).toBe(2);
    // The metrics API answers for the pods (the HPA's source) before any load.
    await eventually('kubectl top pods lists the CR\'s 2 pods', async () => {
      const top = await kubectl('top', 'pods', '-l', `app.kubernetes.io/instance=${name}`, '--no-headers').catch(() => '');
      return top.trim().split('\n').filter((l) => l.startsWith(deploymentName)).length === 2;
    }, 120_000);
    const crStatus = await cr();
    nodePort = (crStatus?.status as { nodePort?: number } | undefined)?.nodePort ?? 0;
    expect(nodePort).toBeGreaterThan(0);
    await eventually('the NodePort answers /api/burn', async () => (await getLocal(nodePort, '/api/burn?ms=1')).status === 200, 60_000);
  }, 600_000);

  test('under CPU load the HPA raises spec.size and the operator follows: Deployment replicas and the pods in status.nodes', async () => {
    loadStarted = Date.now();
    const load = startLoad(nodePort);
    let highest = 0;
    try {
      await eventually('spec.size above 2', async () => ((await cr())?.spec?.size ?? 0) > 2, 300_000);
      // Up to where the HPA settles under this load (its maximum 5 unless the machine is too busy to burn).
      await eventually('spec.size at 5, or steady for 60 s, and the operator caught up', async () => {
        const size = (await cr())?.spec?.size ?? 0;
        const last = sizes.at(-1)?.at ?? 0;
        log(`autoscaling test: spec.size ${size}, ${await hpaLine()}`);
        return (size === 5 || Date.now() - last > 60_000) && (await followed(size));
      }, 420_000);
      highest = (await cr())?.spec?.size ?? 0;
    } finally {
      log(`autoscaling test: ${await load.stop()} burn requests answered`);
      loadStopped = Date.now();
    }
    expect(highest).toBeGreaterThan(2);
    expect(highest).toBeLessThanOrEqual(5);
    const status = (await cr())?.status;
    expect(status?.nodes).toHaveLength(highest);
  }, 800_000);

  test('the load stops: the HPA lowers spec.size to 2 and the operator follows', async () => {
    await eventually('spec.size back at 2 and the operator caught up', async () => {
      log(`autoscaling test: spec.size ${(await cr())?.spec?.size}, ${await hpaLine()}`);
      return (await cr())?.spec?.size === 2 && (await followed(2));
    }, 420_000);
    expect((await cr())?.status?.nodes).toHaveLength(2);
  }, 500_000);

  test('they never fight: the HPA alone writes spec.size, the operator alone the Deployment, replicas follow spec.size one way per phase', async () => {
    const events = await cp.readAuditLog();
    const writes = (e: AuditEvent): boolean => ['create', 'update', 'patch'].includes(e.verb) && (e.responseStatus?.code ?? 0) < 300 && e.objectRef?.namespace === ns;
    const operatorUser = `system:serviceaccount:${ns}:${OPERATOR_SA}`;
    const onCr = events.filter((e) => writes(e) && e.objectRef?.resource === kind.plural && e.objectRef.name === name);
    const onDeployment = events.filter((e) => writes(e) && e.objectRef?.resource === 'deployments' && e.objectRef.name === deploymentName);
    const who = (list: AuditEvent[]): string[] => list.map((e) => `${e.user.username} ${e.userAgent ?? ''} ${e.verb} ${e.objectRef?.subresource ?? ''}`);

    // spec.size: the test's one create; then only the HPA, through the scale subresource.
    const scaleWrites = onCr.filter((e) => e.objectRef?.subresource === 'scale');
    const specWrites = onCr.filter((e) => e.objectRef?.subresource === undefined);
    expect(who(specWrites)).toEqual([expect.stringMatching(/^appkind-admin kubectl.* create $/)]);
    expect(scaleWrites.length).toBeGreaterThanOrEqual(3); // 1 -> 2, up, back to 2
    for (const e of scaleWrites) expect(e.userAgent).toMatch(/horizontal-pod-autoscaler$/);
    // The operator writes the CR's status only, never spec.size.
    expect(who(onCr.filter((e) => e.user.username === operatorUser && e.objectRef?.subresource !== 'status'))).toEqual([]);

    // The Deployment's spec: the operator alone (the deployment controller writes its status); nobody scales it directly.
    const specOfDeployment = onDeployment.filter((e) => e.objectRef?.subresource !== 'status');
    expect(who(specOfDeployment.filter((e) => e.user.username !== operatorUser))).toEqual([]);
    // One apply per size the HPA set (plus the create): the operator does not write back and forth.
    expect(specOfDeployment.length).toBeLessThanOrEqual(scaleWrites.length + 1);

    // The watches: spec.size went 1, 2, up to the highest, back to 2; replicas took the same values in order.
    const up = sizes.filter((s) => s.at < loadStopped);
    const down = sizes.filter((s) => s.at >= loadStopped);
    log(`autoscaling test: spec.size ${values(sizes).join(' -> ')}, Deployment replicas ${values(replicas).join(' -> ')}; load ${((loadStopped - loadStarted) / 1000).toFixed(0)} s; ${scaleWrites.length} scale writes by the HPA, ${specOfDeployment.length} Deployment writes by the operator`);
    expect(monotonic(values(up), true)).toBe(true);
    expect(monotonic(values(down), false)).toBe(true);
    expect(values(sizes).at(-1)).toBe(2);
    expect(Math.max(...values(sizes))).toBeGreaterThan(2);
    expect(values(replicas).at(-1)).toBe(2);
    expect(subsequence(values(replicas), values(sizes))).toBe(true);
    expect(values(replicas).length).toBeLessThanOrEqual(values(sizes).length);
  }, 120_000);

  test('stop: the metrics-server process and its files are gone', async () => {
    const pid = cp.pids()['metrics-server'];
    expect(pid).toBeGreaterThan(0);
    const certDir = join(cp.dir, 'metrics-server');
    expect(existsSync(certDir)).toBe(true); // its self-signed serving certificate
    for (const stop of stopWatches.splice(0)) stop();
    await operator.stop('SIGTERM');
    await cp.stop();
    expect(alive(pid!)).toBe(false);
    expect(existsSync(cp.dir)).toBe(false);
  }, 120_000);
});
