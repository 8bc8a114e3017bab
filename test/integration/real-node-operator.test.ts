// The operator in-cluster for real: the image `npm run image` builds, loaded into the real node's
// containerd without a registry, and the install bundle `npx cdk8s synth` writes, applied as a user
// applies dist/appkind-operator.k8s.yaml. The kubelet and runc run the pod under the bundle's security
// context and probe it; the operator reaches the API server through the `kubernetes` Service with the
// in-cluster config and its projected ServiceAccount token; CRs of the sample kind converge with their
// echo pods running. Two replicas elect one leader, deleting the leader hands over, and a rollout
// restart loses no CR and makes no duplicate child. Needs root and Linux (the real node), podman and
// buildah (the image).
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { CoreV1Api, type KubeConfig, type KubernetesObject, type V1Pod, Watch } from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { AppKind } from 'cdk8s-appkind';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { requestServiceAccountToken } from '../../tools/controlplane/serviceaccount.js';
import { loadEchoStandIn } from '../../tools/echo-image.js';
import { type OperatorPod, operatorPod, podKinds, readBundle, synthBundle } from './bundle-file.js';
import { createTestNamespace, crObject, eventually } from './cluster.js';
import { processesMentioning } from './controlplane-processes.js';
import { buildOperatorImage } from './operator-container.js';
import { httpsGet, metricValue } from './operator-process.js';
import { getLocal } from './real-node-pods.js';

const root = join(import.meta.dirname, '..', '..');
// Each run's figures; docs/in-cluster.md and docs/controlplane.md quote one run's.
const FIGURES_FILE = join(root, 'bench', 'out', 'real-node.json');
const log = (line: string): void => void process.stderr.write(`${line}\n`);

jest.setTimeout(600_000);

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
type Lease = Obj & { spec: { holderIdentity?: string } };
type Cr = Obj & { status?: { nodes?: string[]; nodePort?: number; conditions?: { type: string; status: string }[] } };
type Deployment = Obj & { spec: { replicas: number }; status?: { replicas?: number; updatedReplicas?: number; readyReplicas?: number; observedGeneration?: number } };
interface LogLine {
  msg: string;
  [field: string]: unknown;
}

let cp: ControlPlane;
let admin: KubeConfig;
let rest: RestClient;
let core: CoreV1Api;
let scratch: string;
let bundle: KubernetesObject[];
let pod: OperatorPod;
let kind: AppKind;
let leaseName: string;
let ns: string;
/** A bearer token of a ServiceAccount bound to the bundle's metrics-reader ClusterRole, as Prometheus' would be. */
let scraperToken: string;
const figures: Record<string, unknown> = {};

const env = (name: string): string | undefined => pod.container.env?.find((e) => e.name === name)?.value;
const operatorSelector = (): string => Object.entries(pod.deployment.spec!.selector.matchLabels!).map(([k, v]) => `${k}=${v}`).join(',');
const leaseHolder = async (): Promise<string | undefined> =>
  (await rest.get<Lease>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { namespace: pod.namespace, name: leaseName } }))?.spec.holderIdentity || undefined;
const operatorDeployment = (): Promise<Deployment | undefined> => rest.get<Deployment>(pod.deployment as KubernetesObject);
const applyCr = (name: string, size: number): Promise<unknown> => rest.apply({ ...crObject(kind, ns, name), spec: { size } }, 'test-user');
const seconds = (ms: number): number => Math.round(ms / 100) / 10;

/** The operator's pods that are not being deleted. */
async function operatorPods(): Promise<V1Pod[]> {
  const pods = await core.listNamespacedPod({ namespace: pod.namespace, labelSelector: operatorSelector() });
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp);
}

const isReady = (p: V1Pod): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** Every replica of the Deployment is of its current template, Ready, and no older pod is left. */
async function rolledOut(replicas: number): Promise<boolean> {
  const d = await operatorDeployment();
  const pods = await core.listNamespacedPod({ namespace: pod.namespace, labelSelector: operatorSelector() });
  return (
    (d?.status?.observedGeneration ?? 0) >= (d?.metadata?.generation ?? 1) &&
    d?.status?.updatedReplicas === replicas &&
    d.status.readyReplicas === replicas &&
    d.status.replicas === replicas &&
    pods.items.length === replicas &&
    pods.items.every(isReady)
  );
}

/** The operator pod's JSON log lines, through the API server and the kubelet (kubectl logs). */
async function podLog(name: string): Promise<LogLine[]> {
  const text = await core.readNamespacedPodLog({ name, namespace: pod.namespace });
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
}

/**
 * GET on one of the operator pod's named container ports, at its pod IP (inside the node's network):
 * the probes' port over plain HTTP, the metrics port over HTTPS with `token` as the bearer token (the
 * operator's self-signed certificate is not verified: the bundle mounts none).
 */
async function podHttp(p: V1Pod, port: 'metrics' | 'health', path: string, token?: string): Promise<{ status: number; body: string }> {
  const containerPort = pod.container.ports?.find((x) => x.name === port)?.containerPort;
  if (port === 'health') {
    const res = await fetch(`http://${p.status!.podIP!}:${containerPort}${path}`);
    return { status: res.status, body: await res.text() };
  }
  return httpsGet(p.status!.podIP!, containerPort!, path, token);
}

/** The CR's pods with a running, ready container. */
async function runningPods(name: string): Promise<string[]> {
  const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
  return pods.items
    .filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready && c.state?.running))
    .map((p) => p.metadata!.name!)
    .sort();
}

/** `size` running pods, and exactly those in status.nodes, with Ready=True. */
async function converged(name: string, size: number): Promise<boolean> {
  const [cr, pods] = await Promise.all([rest.get<Cr>(crObject(kind, ns, name)), runningPods(name)]);
  return (
    pods.length === size &&
    JSON.stringify([...(cr?.status?.nodes ?? [])].sort()) === JSON.stringify(pods) &&
    cr?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
  );
}

/** The kernel's view of a process (host /proc). */
function procStatus(pid: number): Record<string, string> {
  return Object.fromEntries(readFileSync(`/proc/${pid}/status`, 'utf8').trim().split('\n').map((l) => l.split(/:\s*/, 2) as [string, string]));
}
const rssMiB = (pid: number): number => Math.round(Number(procStatus(pid).VmRSS!.replace(/\s*kB$/, '')) / 1024);

/** The children of kind `kind` in the test namespace, per owner uid. */
async function childrenByOwner(apiVersion: string, childKind: string): Promise<Map<string, string[]>> {
  const list = await rest.list<Obj>(apiVersion, childKind, ns);
  const byOwner = new Map<string, string[]>();
  for (const child of list.items) {
    for (const ref of child.metadata?.ownerReferences ?? []) {
      if (ref.controller) byOwner.set(ref.uid, [...(byOwner.get(ref.uid) ?? []), `${child.metadata!.name}/${child.metadata!.uid}`]);
    }
  }
  return byOwner;
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'appkind-real-operator-'));
  const out = join(scratch, 'dist');
  mkdirSync(out);
  bundle = readBundle(await synthBundle(out));
  pod = operatorPod(bundle);
  kind = podKinds(pod)[0]!;
  leaseName = env('APPKIND_LEASE_NAME')!;

  // The image the bundle names, built from this checkout.
  const image = pod.container.image!;
  figures.imageBuildSeconds = seconds(await buildOperatorImage(image));

  const started = Date.now();
  cp = await ControlPlane.start({ realNode: true, auditLog: true, log });
  figures.realNodeStartSeconds = seconds(Date.now() - started);
  admin = cp.kubeConfig();
  rest = new RestClient(admin);
  core = admin.makeApiClient(CoreV1Api);
  const loaded = Date.now();
  figures.operatorImage = await cp.loadImage(image);
  figures.operatorImageLoadSeconds = seconds(Date.now() - loaded);
  await loadEchoStandIn(cp, log);
  ns = await createTestNamespace(admin, 'in-node');
  // What an admin does for Prometheus: bind the bundle's metrics-reader ClusterRole to the scraper's identity.
  const reader = bundle.find((o) => o.kind === 'ClusterRole' && o.metadata!.name!.endsWith('-metrics-reader'))!.metadata!.name!;
  await applyManifests(admin, [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'scraper', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `${reader}-scraper` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: reader },
      subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: ns }],
    } as KubernetesObject,
  ]);
  scraperToken = await requestServiceAccountToken(admin, ns, 'scraper', 3600);
});

afterAll(async () => {
  await cp?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the operator as a pod of its install bundle, on the real node', () => {
  let leader: V1Pod;
  let standby: V1Pod;

  test('kubectl apply -f dist/appkind-operator.k8s.yaml: the pod runs the loaded image under the bundle\'s security context, enforced by runc; the kubelet\'s probes pass', async () => {
    expect(pod.container.imagePullPolicy).toBe('IfNotPresent');
    // The kubelet probes plain HTTP on 8081; /metrics is HTTPS on 8443 (scraped in the next tests).
    expect(Object.fromEntries((pod.container.ports ?? []).map((x) => [x.name, x.containerPort]))).toEqual({ metrics: 8443, health: 8081 });
    for (const probe of [pod.container.livenessProbe, pod.container.readinessProbe]) expect(probe?.httpGet).toMatchObject({ port: 'health' });
    for (const probe of [pod.container.livenessProbe, pod.container.readinessProbe]) expect(probe?.httpGet?.scheme ?? 'HTTP').toBe('HTTP');
    const applied = Date.now();
    await applyManifests(admin, bundle);
    await eventually('the operator pod Ready (readiness probe passed)', async () => (await operatorPods()).some(isReady), 180_000);
    figures.applyToReadySeconds = seconds(Date.now() - applied);
    const [p] = await operatorPods();
    const status = p!.status!.containerStatuses![0]!;
    expect(status.imageID).toBeTruthy();
    expect(p!.spec!.nodeName).toBe(cp.realNode!.name);

    // What the kernel enforces on the container's process, as runc set it up from the kubelet's request.
    const pid = await cp.containerPid(status.containerID!);
    expect(pid).toBeGreaterThan(0);
    const proc = procStatus(pid!);
    const sc = { ...pod.spec.securityContext, ...pod.container.securityContext };
    expect(proc.Uid!.split(/\s+/)).toEqual(Array(4).fill(String(sc.runAsUser)));
    expect(proc.Gid!.split(/\s+/)).toEqual(Array(4).fill(String(sc.runAsGroup)));
    expect(pod.container.securityContext?.capabilities?.drop).toEqual(['ALL']);
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) expect([set, BigInt(`0x${proc[set]!}`)]).toEqual([set, 0n]);
    expect(pod.container.securityContext?.allowPrivilegeEscalation).toBe(false);
    expect(proc.NoNewPrivs).toBe('1');
    expect(sc.seccompProfile?.type).toBe('RuntimeDefault');
    expect(proc.Seccomp).toBe('2'); // filter mode
    expect(pod.container.securityContext?.readOnlyRootFilesystem).toBe(true);
    const rootMount = readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n').map((l) => l.split(' ')).find((f) => f[4] === '/')!;
    expect(rootMount[5]!.split(',')).toContain('ro');
    // The memory limit reached the container's cgroup (v1 here: memory.limit_in_bytes; v2: memory.max).
    const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => /:memory:|^0::/.test(l))!.split(':')[2]!;
    const limitFile = cgroup && readFileSync('/proc/self/mountinfo', 'utf8').includes(' /sys/fs/cgroup/memory ') ? `/sys/fs/cgroup/memory${cgroup}/memory.limit_in_bytes` : `/sys/fs/cgroup${cgroup}/memory.max`;
    const limit = String(pod.container.resources?.limits?.memory);
    expect(Number(readFileSync(limitFile, 'utf8').trim())).toBe(Number(/^(\d+)Mi$/.exec(limit)![1]) * 1024 * 1024);
    figures.operatorRssMiB = rssMiB(pid!);

    // The in-cluster config: the API server through the `kubernetes` Service's ClusterIP.
    const lines = await podLog(p!.metadata!.name!);
    expect(lines.find((l) => l.msg === 'operator starting')?.server).toBe(`https://${cp.realNode!.kubernetesServiceIp}:443`);
    expect(status.restartCount).toBe(0);
  });

  test('reconciles as its ServiceAccount, from the pod\'s IP: a CR of size 3 gets 3 running echo pods, and its NodePort answers on localhost', async () => {
    await applyCr('example-echoflask', 3);
    await eventually('3 running pods, all of them in status.nodes, Ready', () => converged('example-echoflask', 3), 180_000);
    const nodePort = (await rest.get<Cr>(crObject(kind, ns, 'example-echoflask')))!.status!.nodePort!;
    await eventually('the NodePort answers', async () => (await getLocal(nodePort, '/api/echo?Hello=World!')).status === 200, 60_000);
    const answer = JSON.parse((await getLocal(nodePort, '/api/echo?Hello=World!')).body) as { podname: string; query_string: string };
    expect(answer.query_string).toBe('Hello=World!');
    expect(await runningPods('example-echoflask')).toContain(answer.podname);

    // The writes came from the pod, authenticated by the token the kubelet projected.
    const [p] = await operatorPods();
    const user = `system:serviceaccount:${pod.namespace}:${pod.spec.serviceAccountName}`;
    const writes = (await cp.readAuditLog()).filter((e) => e.user.username === user && e.objectRef?.namespace === ns && ['create', 'patch', 'update'].includes(e.verb));
    expect(writes.length).toBeGreaterThan(0);
    expect(new Set(writes.flatMap((e) => e.sourceIPs ?? []))).toEqual(new Set([p!.status!.podIP]));
  });

  test('two replicas: one leads, the other stands by (ready, not reconciling)', async () => {
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${pod.namespace}/deployments/${pod.deployment.metadata!.name}/scale`, {
      body: { spec: { replicas: 2 } },
      contentType: 'application/merge-patch+json',
    });
    await eventually('2 operator pods Ready', async () => (await operatorPods()).filter(isReady).length === 2, 180_000);
    const pods = await operatorPods();
    await eventually('one of them holds the Lease', async () => {
      const holder = await leaseHolder();
      return pods.some((p) => p.metadata!.name === holder);
    });
    const holder = await leaseHolder();
    leader = pods.find((p) => p.metadata!.name === holder)!;
    standby = pods.find((p) => p.metadata!.name !== holder)!;
    // /metrics over HTTPS, each scrape's token reviewed by the API server (TokenReview, SubjectAccessReview).
    const scrape = async (p: V1Pod) => {
      const res = await podHttp(p, 'metrics', '/metrics', scraperToken);
      expect(res.status).toBe(200);
      return res.body;
    };
    expect(metricValue(await scrape(leader), 'leader_election_master_status', { name: leaseName })).toBe(1);
    expect(metricValue(await scrape(standby), 'leader_election_master_status', { name: leaseName })).toBe(0);
    const refused = await podHttp(standby, 'metrics', '/metrics');
    expect(refused.status).toBe(401);
    expect(refused.body).not.toContain('leader_election');
    // The kubelet's probes stay plain HTTP, without a token.
    expect((await podHttp(standby, 'health', '/readyz')).status).toBe(200);
    expect((await podHttp(standby, 'health', '/healthz')).status).toBe(200);
  });

  test('deleting the leading pod: it exits 0 on SIGTERM within its grace period, another replica takes over, and CRs keep converging', async () => {
    // The kubelet reports the container's exit before the pod object goes; a watch sees that status.
    const exits: number[] = [];
    const name = leader.metadata!.name!;
    const watch = await new Watch(admin).watch(`/api/v1/namespaces/${pod.namespace}/pods`, { fieldSelector: `metadata.name=${name}` }, (_type: string, p: V1Pod) => {
      const terminated = p.status?.containerStatuses?.[0]?.state?.terminated;
      if (terminated) exits.push(terminated.exitCode);
    }, () => undefined);
    try {
      await core.deleteNamespacedPod({ name, namespace: pod.namespace });
      // The leader releases the Lease on SIGTERM; whichever candidate asks first takes it: the standby
      // at its next retry, or the pod the Deployment starts in the deleted one's place, which campaigns
      // as soon as its caches sync (seen in CI). Leader election does not say which, and either serves.
      const takenOver = async () => {
        const holder = await leaseHolder();
        return holder !== undefined && holder !== name && (await operatorPods()).some((p) => p.metadata!.name === holder && !p.metadata!.deletionTimestamp);
      };
      try {
        await eventually('another replica holds the Lease', takenOver, 120_000);
        process.stderr.write(`leader ${name} deleted: ${(await leaseHolder()) === standby.metadata!.name ? 'the standby' : 'the replacement pod'} took the Lease\n`);
      } catch (e) {
        // When no replica takes over in time, the failure says who holds the Lease and what the standby logged.
        const pods = (await operatorPods()).map((p) => `${p.metadata!.name} ${p.status?.phase}${isReady(p) ? ' ready' : ''}`);
        const standbyLog = await podLog(standby.metadata!.name!).catch((err: unknown) => [{ msg: `no log: ${String(err)}` } as LogLine]);
        throw new Error(
          `${(e as Error).message}; the Lease is held by ${(await leaseHolder()) ?? 'nobody'} (leader was ${name}, standby ${standby.metadata!.name}); ` +
            `operator pods: ${pods.join(', ')}; the standby's last log lines:\n${standbyLog.slice(-25).map((l) => JSON.stringify(l)).join('\n')}`,
          { cause: e },
        );
      }
      await eventually('the deleted pod reported its exit', async () => exits.length > 0, 60_000);
    } finally {
      watch.abort();
    }
    // 137 would mean the kubelet had to SIGKILL it after terminationGracePeriodSeconds.
    expect(exits).toEqual(exits.map(() => 0));
    await applyCr('example-echoflask', 5);
    await eventually('5 running pods in status.nodes', () => converged('example-echoflask', 5), 180_000);
    await eventually('the Deployment replaced the deleted replica', () => rolledOut(2), 180_000);
  });

  test('kubectl rollout restart: no CR is lost and no child is made twice; the CRs converge after it', async () => {
    const names = ['restart-a', 'restart-b', 'restart-c'];
    for (const name of names) await applyCr(name, 1);
    for (const name of names) await eventually(`${name}: 1 running pod`, () => converged(name, 1), 180_000);
    const crUids = async (): Promise<string[]> => (await rest.list<Obj>(`${kind.group}/${kind.version}`, kind.kind, ns)).items.map((c) => c.metadata!.uid!).sort();
    const crsBefore = await crUids();
    const deploymentsBefore = await childrenByOwner('apps/v1', 'Deployment');
    const servicesBefore = await childrenByOwner('v1', 'Service');
    const podsBefore = new Set((await operatorPods()).map((p) => p.metadata!.uid));

    // What `kubectl rollout restart deployment/<operator>` sends.
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${pod.namespace}/deployments/${pod.deployment.metadata!.name}`, {
      body: { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } } },
      contentType: 'application/strategic-merge-patch+json',
    });
    await eventually('the rollout replaced both replicas', async () => (await rolledOut(2)) && (await operatorPods()).every((p) => !podsBefore.has(p.metadata!.uid)), 240_000);
    for (const name of names) await applyCr(name, 2);
    for (const name of [...names, 'example-echoflask']) await eventually(`${name} converged after the restart`, () => converged(name, name === 'example-echoflask' ? 5 : 2), 180_000);

    expect(await crUids()).toEqual(crsBefore);
    // One Deployment and one Service per CR, the same objects as before the restart.
    expect(await childrenByOwner('apps/v1', 'Deployment')).toEqual(deploymentsBefore);
    expect(await childrenByOwner('v1', 'Service')).toEqual(servicesBefore);
    for (const uid of crsBefore) {
      expect(deploymentsBefore.get(uid)).toHaveLength(1);
      expect(servicesBefore.get(uid)).toHaveLength(1);
    }
    expect(crsBefore).toHaveLength(4);
  });

  test('cost of the real node: its processes\' memory with 2 operator pods and 11 app pods running', async () => {
    const pids = cp.pids();
    const node = { containerd: pids.containerd, kubelet: pids.kubelet, 'kube-proxy': pids['kube-proxy'] };
    const rss = Object.fromEntries(Object.entries(node).map(([name, pid]) => [name, rssMiB(pid!)]));
    // One runc shim per pod, started by this node's containerd (its socket is in the node's folder).
    const shims = processesMentioning('containerd-shim-runc-v2').filter((p) => p.cmdline.includes('/tmp/appkind-node-')).map((p) => p.pid);
    const shimRss = shims.reduce((sum, pid) => sum + rssMiB(pid), 0);
    Object.assign(figures, { nodeRssMiB: rss, shims: shims.length, shimsRssMiB: shimRss });
    mkdirSync(dirname(FIGURES_FILE), { recursive: true });
    writeFileSync(
      FIGURES_FILE,
      JSON.stringify({ what: 'The real node and the operator as a pod on it; test/integration/real-node-operator.test.ts', measuredAt: new Date().toISOString(), ...figures, machine: { node: process.version, cpus: cpus().length } }, null, 2) + '\n',
    );
    log(`real node figures: ${JSON.stringify(figures)}`);
    for (const value of Object.values(rss)) expect(value).toBeGreaterThan(0);
  });
});
