// A real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-controller-manager and,
// when built, kube-scheduler + kwok with fake nodes, one per 2000 pods) for tests, `npm start` and
// benchmarks; with `realNode: true` a real node (containerd, kubelet, kube-proxy) instead of kwok.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readAuditLogFile, type AuditEvent } from './audit.js';
import { RealNode, type RealNodeInfo } from './node/real-node.js';
import { resolveBinaries, type Binaries } from './binaries.js';
import { track, untrack, type Stoppable } from './cleanup.js';
import { Component, type ComponentName } from './component.js';
import {
  apiserverArgs,
  controllerManagerArgs,
  etcdArgs,
  etcdUrl,
  kwokArgs,
  schedulerArgs,
  type ApiserverFiles,
  type Ports,
} from './components.js';
import { createFakeNodes, fakeNodeCount, fakeNodesReady } from './fake-node.js';
import { addTokenUser, ADMIN_USER, writeAdminTokenFile, writeAuditPolicy, writeKubeconfig, writeServiceAccountKeys } from './files.js';
import { writeFrontProxyCerts } from './front-proxy.js';
import { buildMetricsServer, METRICS_API_SERVICE, METRICS_SERVER_USER, metricsApiAvailable, metricsServerArgs, registerMetricsServer } from './node/metrics-server.js';
import { freePorts } from './ports.js';
import { answers200, httpGet, waitFor } from './readiness.js';
import { requestServiceAccountToken, writeServiceAccountKubeconfig } from './serviceaccount.js';
import { unwatchDir, watchDir } from './watchdog.js';

export type { AuditEvent, AuditObjectRef } from './audit.js';
export type { RealNodeInfo } from './node/real-node.js';
export { RealNodeUnavailableError } from './node/preconditions.js';
export { killWithThisProcess } from './watchdog.js';

export interface ControlPlaneOptions {
  /** Write a Metadata-level JSON audit log of every request (see auditLogPath). Default false. */
  auditLog?: boolean;
  /** Run kube-scheduler + kwok so pods become Running/Ready. Default: if both binaries exist. */
  scheduler?: boolean;
  /** Progress lines (build output, readiness). Default: build output to stderr, the rest silent. */
  log?: (line: string) => void;
  /** Use these binaries instead of resolving them. */
  binaries?: Binaries;
  /** Per readiness step. Default 60 s. */
  timeoutMs?: number;
  /** Pods the run will hold: one kwok fake node per 2000. Default 2000 (one node). */
  pods?: number;
  /** `--service-node-port-range`, e.g. `30000-39999` for more than 2768 NodePort Services. */
  nodePortRange?: string;
  /** Serve kube-apiserver's /debug/pprof (CPU profiles for `npm run bench -- --profile`). Default false. */
  profiling?: boolean;
  /**
   * kube-apiserver's watch cache (`--watch-cache`). Default true. Without it every watch is served by
   * etcd, so an etcd compaction expires (410 Gone) a watch that resumes from before it.
   */
  watchCache?: boolean;
  /**
   * Run a real node (containerd, kubelet, kube-proxy; needs root and Linux) instead of the kwok fake
   * node: pods run containers, NodePorts answer on localhost. One per machine (a second start waits).
   * The API server then binds and advertises the node's address. Default false.
   */
  realNode?: boolean;
  /**
   * With realNode: run metrics-server (built on first use, minutes) and register the metrics API, so
   * HorizontalPodAutoscalers scale on CPU (docs/autoscaling.md). Default false.
   */
  metricsServer?: boolean;
}

export type RestartableComponent = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

const DEFAULT_TIMEOUT_MS = 60_000;
const RESTART_GRACE_MS = 2_000;

export class ControlPlane implements Stoppable {
  /** Admin kubeconfig (system:masters), absolute path. */
  readonly kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  /** Set when started with auditLog: the JSON-lines audit log. */
  readonly auditLogPath?: string;
  /** kube-scheduler and kwok run: pods get scheduled to a fake node and turn Running/Ready. */
  readonly hasScheduler: boolean;
  /** Temp folder with data, logs (logs/<component>.log) and kubeconfigs; removed on stop(). */
  readonly dir: string;
  /** Set when started with realNode: the node's name, address and ranges. */
  readonly realNode?: RealNodeInfo;

  private readonly components = new Map<ComponentName, Component>();
  private readonly adminToken: string;
  private readonly timeoutMs: number;
  private readonly log: (line: string) => void;
  private readonly fakeNodes: number;
  private readonly nodePortRange?: string;
  private readonly profiling: boolean;
  private readonly watchCache: boolean;
  private readonly metricsServerToken?: string;
  private caPem = '';
  private stopping?: Promise<void>;

  private constructor(
    private readonly binaries: Binaries,
    private readonly ports: Ports,
    hasScheduler: boolean,
    opts: ControlPlaneOptions,
    private readonly node?: RealNode,
    /** Set when metrics-server runs: its binary. */
    private readonly metricsServer?: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'appkind-cp-'));
    watchDir(this.dir);
    mkdirSync(join(this.dir, 'logs'));
    this.server = `https://${node?.info.address ?? '127.0.0.1'}:${ports.apiserver}`;
    this.realNode = node?.info;
    this.kubeconfigPath = join(this.dir, 'kubeconfig');
    this.adminToken = writeAdminTokenFile(join(this.dir, 'tokens.csv'));
    node?.addUsers(join(this.dir, 'tokens.csv'));
    if (metricsServer) this.metricsServerToken = addTokenUser(join(this.dir, 'tokens.csv'), METRICS_SERVER_USER.name, METRICS_SERVER_USER.groups);
    if (opts.auditLog) this.auditLogPath = join(this.dir, 'audit.log');
    this.hasScheduler = hasScheduler;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.log = opts.log ?? (() => undefined);
    this.fakeNodes = fakeNodeCount(opts.pods);
    this.nodePortRange = opts.nodePortRange;
    this.profiling = opts.profiling ?? false;
    this.watchCache = opts.watchCache ?? true;
  }

  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const binaries = opts.binaries ?? (await resolveBinaries({ log: opts.log }));
    const hasScheduler = opts.realNode ? true : wantsScheduler(binaries, opts.scheduler);
    if (opts.metricsServer && !opts.realNode) throw new Error('controlplane: metricsServer needs realNode: true (kwok\'s fake node runs no kubelet to scrape)');
    // Built before the node's lock is taken: a first build takes minutes another run need not wait out.
    const metricsServer = opts.metricsServer ? await buildMetricsServer(opts.log ?? ((line) => void process.stderr.write(`${line}\n`))) : undefined;
    const node = opts.realNode ? await RealNode.prepare(binaries, opts.log ?? (() => undefined), opts.timeoutMs ?? DEFAULT_TIMEOUT_MS) : undefined;
    const [etcdClient, etcdPeer, apiserver, kwok] = await freePorts(4);
    let cp: ControlPlane;
    try {
      cp = new ControlPlane(binaries, { etcdClient, etcdPeer, apiserver, kwok }, hasScheduler, opts, node, metricsServer);
    } catch (err) {
      await node?.stop();
      throw err;
    }
    track(cp);
    const started = Date.now();
    try {
      await cp.boot();
    } catch (err) {
      await cp.node?.stopProcesses();
      await cp.stopProcesses();
      await cp.node?.stop();
      cp.keepLogsOnly();
      throw err;
    }
    cp.log(`controlplane: ready in ${((Date.now() - started) / 1000).toFixed(1)}s at ${cp.server}`);
    return cp;
  }

  private async boot(): Promise<void> {
    const started = Date.now();
    const step = (what: string): void => this.log(`controlplane: ${what} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
    await this.startEtcd();
    step('etcd ready');
    await this.startApiserver();
    step('kube-apiserver ready');
    this.writeAdminKubeconfig();
    const kc = this.kubeConfig();
    this.startControllers();
    if (this.node) {
      const node = this.node;
      const access = { server: this.server, caPem: this.caPem, logsDir: join(this.dir, 'logs') };
      await Promise.all([this.waitForDefaultServiceAccount(kc), node.start(access, kc)]);
      step(`controllers, scheduler and real node ${node.info.name} ready`);
      if (this.metricsServer) {
        await this.startMetricsServer(this.metricsServer, node.info.address, kc);
        step(`metrics-server ready (APIService ${METRICS_API_SERVICE} Available)`);
      }
      return;
    }
    await Promise.all([this.waitForDefaultServiceAccount(kc), this.hasScheduler ? this.waitForFakeNode(kc) : undefined]);
    step(this.hasScheduler ? 'controllers, scheduler and fake node ready' : 'controllers ready');
  }

  private add(name: ComponentName, binary: string, args: string[]): Component {
    const component = new Component(name, binary, args, join(this.dir, 'logs', `${name}.log`));
    this.components.set(name, component);
    component.start();
    return component;
  }

  private async startMetricsServer(binary: string, address: string, kc: KubeConfig): Promise<void> {
    const kubeconfig = join(this.dir, 'metrics-server.kubeconfig');
    writeKubeconfig(kubeconfig, { server: this.server, caPem: this.caPem, user: METRICS_SERVER_USER.name, token: this.metricsServerToken ?? '' });
    const [port] = await freePorts(1);
    const server = this.add('metrics-server', binary, metricsServerArgs({ kubeconfig, address, port: port!, certDir: join(this.dir, 'metrics-server') }));
    await registerMetricsServer(kc, address, port!);
    await waitFor(`APIService ${METRICS_API_SERVICE} Available (metrics-server)`, () => metricsApiAvailable(kc), this.waitOpts([server]));
  }

  private component(name: ComponentName): Component {
    const component = this.components.get(name);
    if (!component) throw new Error(`controlplane: ${name} was never started`);
    return component;
  }

  private async startEtcd(): Promise<void> {
    this.add('etcd', this.binaries.etcd, etcdArgs(this.dir, this.ports));
    await this.waitForEtcd();
  }

  private waitForEtcd(): Promise<void> {
    const etcd = this.component('etcd');
    return waitFor('etcd /health', () => answers200(`${etcdUrl(this.ports)}/health`), this.waitOpts([etcd]));
  }

  private async startApiserver(): Promise<void> {
    const certDir = join(this.dir, 'certs');
    const keys = writeServiceAccountKeys(this.dir);
    const files: ApiserverFiles = {
      certDir,
      tokenFile: join(this.dir, 'tokens.csv'),
      serviceAccountPublicKey: keys.publicKeyPath,
      serviceAccountPrivateKey: keys.privateKeyPath,
      nodePortRange: this.nodePortRange,
      profiling: this.profiling,
      watchCache: this.watchCache,
      realNode: this.node && { address: this.node.info.address, serviceCidr: this.node.info.serviceCidr },
      frontProxy: this.metricsServer ? writeFrontProxyCerts(join(this.dir, 'front-proxy')) : undefined,
    };
    if (this.auditLogPath) {
      files.auditPolicy = join(this.dir, 'audit-policy.yaml');
      files.auditLog = this.auditLogPath;
      writeAuditPolicy(files.auditPolicy);
    }
    const apiserver = this.add('kube-apiserver', this.binaries['kube-apiserver'], apiserverArgs(this.ports, files));
    // The self-signed serving cert (leaf + its CA) is written before the server listens.
    const certFile = join(certDir, 'apiserver.crt');
    await waitFor('kube-apiserver serving certificate', async () => existsSync(certFile), this.waitOpts([apiserver]));
    this.caPem = readFileSync(certFile, 'utf8');
    await this.waitForApiserver();
  }

  private waitForApiserver(): Promise<void> {
    const apiserver = this.component('kube-apiserver');
    // Not answers200: a timeout then says what /readyz last answered (its failing checks) or why it
    // could not be asked (refused, timed out), which is all a restart that never came back leaves.
    const check = async (): Promise<boolean> => {
      const { status, body } = await httpGet(`${this.server}/readyz`, { ca: this.caPem, token: this.adminToken });
      if (status !== 200) throw new Error(`/readyz answered ${status}: ${body.trim().split('\n').filter((l) => !l.includes('] ok')).join('; ').slice(0, 500)}`);
      return true;
    };
    return waitFor('kube-apiserver /readyz', check, this.waitOpts([apiserver, this.component('etcd')]));
  }

  private writeAdminKubeconfig(): void {
    writeKubeconfig(this.kubeconfigPath, { server: this.server, caPem: this.caPem, user: ADMIN_USER, token: this.adminToken });
  }

  private startControllers(): void {
    const caFile = join(this.dir, 'certs', 'apiserver.crt');
    const keyFile = join(this.dir, 'sa.key');
    this.add('kube-controller-manager', this.binaries['kube-controller-manager'], controllerManagerArgs(this.kubeconfigPath, keyFile, caFile));
    const { 'kube-scheduler': scheduler, kwok } = this.binaries;
    if (this.node && scheduler) {
      this.add('kube-scheduler', scheduler, schedulerArgs(this.kubeconfigPath));
    } else if (this.hasScheduler && scheduler && kwok) {
      this.add('kube-scheduler', scheduler, schedulerArgs(this.kubeconfigPath));
      this.add('kwok', kwok, kwokArgs(this.kubeconfigPath, this.ports));
    }
  }

  /** The serviceaccount controller creating `default/default` shows the controller manager works. */
  private waitForDefaultServiceAccount(kc: KubeConfig): Promise<void> {
    const core = kc.makeApiClient(CoreV1Api);
    const check = async (): Promise<boolean> => Boolean(await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }));
    return waitFor('ServiceAccount default/default (kube-controller-manager)', check, this.waitOpts([this.component('kube-controller-manager')]));
  }

  private async waitForFakeNode(kc: KubeConfig): Promise<void> {
    await createFakeNodes(kc, this.fakeNodes);
    const watched = [this.component('kwok'), this.component('kube-scheduler')];
    await waitFor(`${this.fakeNodes} fake node(s) Ready (kwok)`, () => fakeNodesReady(kc, this.fakeNodes), this.waitOpts(watched));
  }

  private waitOpts(components: Component[]): { timeoutMs: number; components: Component[] } {
    return { timeoutMs: this.timeoutMs, components };
  }

  /** A fresh admin KubeConfig (system:masters) for @kubernetes/client-node. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    return kc;
  }

  /**
   * Stops the component and starts it again on the same port with the same data; waits until ready.
   * SIGTERM, then SIGKILL after 2 s: with clients connected both would otherwise drain for 7-10 s,
   * and a fault test wants the outage, not the drain.
   */
  async restart(name: RestartableComponent, whileDown?: () => Promise<void>): Promise<void> {
    if (this.stopping) throw new Error('controlplane: restart() after stop()');
    const component = this.component(name);
    await component.stop(RESTART_GRACE_MS);
    // What a test does while the component is down (wait out an outage, look at what it left undone).
    if (whileDown) await whileDown();
    component.start();
    if (name === 'etcd') await this.waitForEtcd();
    await this.waitForApiserver();
  }

  /**
   * Compacts etcd's history up to its current revision, as kube-apiserver does every 5 minutes (and
   * physically: the call returns once it is done). A list or watch from an older resourceVersion that
   * etcd must serve then ends with 410 Gone. Resolves with the revision compacted to.
   */
  async compactEtcd(): Promise<number> {
    const post = async (path: string, body: unknown): Promise<{ header?: { revision?: string } }> => {
      const res = await fetch(`${etcdUrl(this.ports)}${path}`, { method: 'POST', body: JSON.stringify(body) });
      if (!res.ok) throw new Error(`etcd ${path}: HTTP ${res.status} ${await res.text()}`);
      return (await res.json()) as { header?: { revision?: string } };
    };
    // The header of any read carries the store's current revision.
    const revision = Number((await post('/v3/kv/range', { key: Buffer.from('/').toString('base64') })).header?.revision);
    if (!Number.isInteger(revision) || revision <= 0) throw new Error('etcd /v3/kv/range: no revision in the answer');
    await post('/v3/kv/compaction', { revision: String(revision), physical: true });
    return revision;
  }

  /** A bound ServiceAccount token from the TokenRequest API (min. 600 s, default 1 h). */
  serviceAccountToken(namespace: string, name: string, expirationSeconds = 3600): Promise<string> {
    return requestServiceAccountToken(this.kubeConfig(), namespace, name, expirationSeconds);
  }

  /** Writes a kubeconfig authenticating as the ServiceAccount (24 h token); returns its path. */
  async serviceAccountKubeconfig(namespace: string, name: string): Promise<string> {
    const path = join(this.dir, `sa-${namespace}-${name}.kubeconfig`);
    await writeServiceAccountKubeconfig(this.kubeConfig(), namespace, name, path);
    return path;
  }

  private requireNode(): RealNode {
    if (!this.node) throw new Error('controlplane: started without realNode: true; images run only on a real node');
    return this.node;
  }

  /**
   * Loads an image from podman/buildah storage into the real node (as `kind load docker-image`), under
   * its normalized name or under `as` (e.g. a local stand-in for a public image). Returns that name.
   */
  loadImage(ref: string, as?: string): Promise<string> {
    return this.requireNode().loadImage(ref, as);
  }

  /** Imports an OCI or docker image archive into the real node; with `as`, under that name too. */
  loadImageArchive(archive: string, as?: string): Promise<string> {
    return this.requireNode().loadImageArchive(archive, as);
  }

  /** Image names the real node's containerd holds. */
  nodeImages(): Promise<string[]> {
    return this.requireNode().images();
  }

  /**
   * The host pid of a container running on the real node (`status.containerStatuses[].containerID`):
   * what the kernel enforces for it (user, capabilities, seccomp, mounts) is read from /proc/<pid>.
   */
  containerPid(containerId: string): Promise<number | undefined> {
    return this.requireNode().containerPid(containerId);
  }

  /** Every audit event so far (blocking mode: a finished request is already in the file). */
  async readAuditLog(): Promise<AuditEvent[]> {
    if (!this.auditLogPath) throw new Error('controlplane: started without auditLog: true');
    return readAuditLogFile(this.auditLogPath);
  }

  /** Process ids of the running components (for CPU and memory figures from /proc). */
  pids(): Partial<Record<ComponentName, number>> {
    const pids: Partial<Record<ComponentName, number>> = {};
    for (const [name, component] of this.components) {
      if (component.pid !== undefined) pids[name] = component.pid;
    }
    return { ...pids, ...this.node?.pids() };
  }

  /** Log file of a component, e.g. for a test's failure message. */
  logPath(name: ComponentName): string {
    return join(this.dir, 'logs', `${name}.log`);
  }

  /** Stops every process and removes the temp folder. Safe to call more than once. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.node?.stopProcesses();
      await this.stopProcesses();
      await this.node?.stop();
      await rm(this.dir, { recursive: true, force: true });
      unwatchDir(this.dir);
      untrack(this);
    })();
    return this.stopping;
  }

  /** Dependents first, etcd last, so nothing logs errors about a vanished backend on the way down. */
  private async stopProcesses(): Promise<void> {
    const stopAll = (names: ComponentName[]): Promise<unknown> =>
      Promise.all(names.map((name) => this.components.get(name)?.stop()));
    await stopAll(['metrics-server', 'kwok', 'kube-scheduler', 'kube-controller-manager']);
    await stopAll(['kube-apiserver']);
    await stopAll(['etcd']);
  }

  /** A failed start removes its data but keeps logs/, which the error message points to. */
  private keepLogsOnly(): void {
    for (const entry of readdirSync(this.dir)) {
      if (entry !== 'logs') rmSync(join(this.dir, entry), { recursive: true, force: true });
    }
    unwatchDir(this.dir);
    untrack(this);
    this.stopping = Promise.resolve();
  }

  killSync(): void {
    this.node?.killSync();
    for (const component of this.components.values()) component.killSync();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function wantsScheduler(binaries: Binaries, requested: boolean | undefined): boolean {
  const available = Boolean(binaries['kube-scheduler'] && binaries.kwok);
  if (requested === true && !available) {
    const missing = (['kube-scheduler', 'kwok'] as const).filter((name) => !binaries[name]);
    throw new Error(`controlplane: scheduler requested but ${missing.join(' and ')} could not be found or built`);
  }
  return requested ?? available;
}
