// The real node beside the control plane (ControlPlane.start({ realNode: true })): the host is
// prepared before the API server starts (lock, leftovers of a killed run, network, state record), then
// containerd, the kubelet and kube-proxy run until stop() undoes everything the run made.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Binaries } from '../binaries.js';
import { Component, type ComponentName } from '../component.js';
import { containerdArgs, containerdSocket, writeContainerdConfig } from './containerd.js';
import { addTokenUser, writeKubeconfig } from '../files.js';
import { leftoverHostState, recordHostState, restoreHost, type HostState } from './host-state.js';
import { KUBE_PROXY_USER, kubeProxyArgs } from './kube-proxy.js';
import { KUBELET_USER, NODE_NAME, kubeletArgs, writeKubeletFiles } from './kubelet.js';
import { Ctr, normalizeImageName, pauseImageName, saveFromPodman, writePauseImage } from './images.js';
import { acquireNodeLock, type NodeLock } from './lock.js';
import {
  createNodeLink,
  currentRoutes,
  firstAddress,
  installForwardGuard,
  pickNodeNetwork,
  writeCniConfig,
  type NodeNetwork,
} from './network.js';
import { findRunc, realNodeProblems, RealNodeUnavailableError, snapshotterForThisKernel } from './preconditions.js';
import { freePorts } from '../ports.js';
import { waitFor } from '../readiness.js';

const exec = promisify(execFile);
const CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'] as const;
/** How long a second real node waits for the first to stop. */
const LOCK_WAIT_MS = 15 * 60_000;

export { NODE_NAME } from './kubelet.js';

export interface RealNodeInfo {
  name: string;
  /** The node's address: the kubelet's, and the API server's bind and advertise address. */
  address: string;
  serviceCidr: string;
  podCidr: string;
  /** The `kubernetes` Service's ClusterIP, which pods reach the API server through. */
  kubernetesServiceIp: string;
}

export interface ControlPlaneAccess {
  /** https://<node address>:<port> */
  server: string;
  caPem: string;
  logsDir: string;
}

export class RealNode {
  readonly info: RealNodeInfo;
  private readonly components: Component[] = [];
  private readonly snapshotter = snapshotterForThisKernel();
  private ctrClient?: Ctr;
  private stoppingProcesses?: Promise<void>;
  private tokens?: { kubelet: string; proxy: string };
  private stopping?: Promise<void>;

  private constructor(
    private readonly binaries: Binaries,
    private readonly lock: NodeLock,
    private readonly state: HostState,
    readonly network: NodeNetwork,
    private readonly log: (line: string) => void,
    private readonly timeoutMs: number,
  ) {
    this.info = {
      name: NODE_NAME,
      address: network.nodeIp,
      serviceCidr: network.serviceCidr,
      podCidr: network.podCidr,
      kubernetesServiceIp: firstAddress(network.serviceCidr),
    };
  }

  get dir(): string {
    return this.state.nodeDir;
  }

  /**
   * Checks the machine, takes the machine-wide lock, cleans up after a killed run, picks the network
   * and records the host's state before changing it; then makes the node's link and FORWARD guard.
   */
  static async prepare(binaries: Binaries, log: (line: string) => void, timeoutMs: number): Promise<RealNode> {
    const problems = realNodeProblems(binaries);
    if (problems.length) throw new RealNodeUnavailableError(problems);
    const lock = await acquireNodeLock(log, LOCK_WAIT_MS);
    try {
      const leftover = leftoverHostState();
      if (leftover) {
        log(`controlplane: cleaning up after a real node that did not stop (pid ${leftover.pid}, ${leftover.nodeDir})`);
        const left = await restoreHost(leftover);
        if (left.length) throw new Error(`controlplane: could not clean up the previous real node: ${left.join('; ')}`);
      }
      const network = pickNodeNetwork(currentRoutes());
      const state = recordHostState(mkdtempSync('/tmp/appkind-node-'));
      const node = new RealNode(binaries, lock, state, network, log, timeoutMs);
      try {
        createNodeLink(network);
        installForwardGuard(state.sysctls['net/ipv4/ip_forward'] === '1');
      } catch (err) {
        await node.stop();
        throw err;
      }
      return node;
    } catch (err) {
      lock.release();
      throw err;
    }
  }

  /** The kubelet's and kube-proxy's users, added to the API server's token file before it starts. */
  addUsers(tokenFile: string): void {
    this.tokens = {
      kubelet: addTokenUser(tokenFile, KUBELET_USER.name, KUBELET_USER.groups),
      proxy: addTokenUser(tokenFile, KUBE_PROXY_USER.name, KUBE_PROXY_USER.groups),
    };
  }

  private bin(name: keyof Binaries): string {
    const path = this.binaries[name];
    if (!path) throw new Error(`controlplane: ${name} missing`); // realNodeProblems checked it
    return path;
  }

  private add(name: ComponentName, binary: string, args: string[], logsDir: string, env?: NodeJS.ProcessEnv): Component {
    const component = new Component(name, binary, args, join(logsDir, `${name}.log`), env);
    this.components.push(component);
    component.start();
    return component;
  }

  /** Starts containerd, the kubelet and kube-proxy against the running API server; waits for Ready. */
  async start(cp: ControlPlaneAccess, kc: KubeConfig): Promise<void> {
    const dir = this.dir;
    const started = Date.now();
    const step = (what: string): void => this.log(`controlplane: ${what} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
    // containerd finds the shim on PATH and the CNI plugins in one folder: links to the resolved binaries.
    const binDir = join(dir, 'bin');
    const cniBinDir = join(dir, 'cni', 'bin');
    mkdirSync(binDir, { recursive: true });
    mkdirSync(cniBinDir, { recursive: true });
    symlinkSync(this.bin('containerd-shim-runc-v2'), join(binDir, 'containerd-shim-runc-v2'));
    for (const plugin of CNI_PLUGINS) symlinkSync(this.bin(plugin), join(cniBinDir, plugin));
    const pause = this.bin('pause');
    const config = writeContainerdConfig({
      dir,
      cniBinDir,
      cniConfDir: writeCniConfig(dir, this.network),
      runc: findRunc() ?? 'runc',
      sandboxImage: pauseImageName(pause),
      snapshotter: this.snapshotter,
    });
    const containerd = this.add('containerd', this.bin('containerd'), containerdArgs(config), cp.logsDir, {
      PATH: `${binDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
    });
    this.ctrClient = new Ctr(this.bin('ctr'), containerdSocket(dir));
    const ctr = this.ctrClient;
    const pauseArchive = writePauseImage(pause, join(dir, 'pause.oci.tar'));
    await waitFor('containerd socket', async () => Boolean(await ctr.images()), { timeoutMs: this.timeoutMs, components: [containerd] });
    await ctr.importArchive(await pauseArchive, this.snapshotter);
    step('containerd ready, sandbox image loaded');

    const tokens = this.tokens;
    if (!tokens) throw new Error('controlplane: RealNode.addUsers() must run before the API server starts');
    const [kubeletPort, kubeletHealthz, proxyHealthz, proxyMetrics] = await freePorts(4);
    const kubeletKubeconfig = join(dir, 'kubelet.kubeconfig');
    writeKubeconfig(kubeletKubeconfig, { server: cp.server, caPem: cp.caPem, user: KUBELET_USER.name, token: tokens.kubelet });
    const proxyKubeconfig = join(dir, 'kube-proxy.kubeconfig');
    writeKubeconfig(proxyKubeconfig, { server: cp.server, caPem: cp.caPem, user: KUBE_PROXY_USER.name, token: tokens.proxy });
    const kubeletFiles = { dir, kubeconfig: kubeletKubeconfig, containerdSocket: containerdSocket(dir), nodeIp: this.network.nodeIp, port: kubeletPort, healthzPort: kubeletHealthz };
    const kubelet = this.add('kubelet', this.bin('kubelet'), kubeletArgs(kubeletFiles, writeKubeletFiles(kubeletFiles)), cp.logsDir);
    const proxy = this.add(
      'kube-proxy',
      this.bin('kube-proxy'),
      kubeProxyArgs({ kubeconfig: proxyKubeconfig, nodeIp: this.network.nodeIp, podCidr: this.network.podCidr, healthzPort: proxyHealthz, metricsPort: proxyMetrics }),
      cp.logsDir,
    );
    const core = kc.makeApiClient(CoreV1Api);
    const ready = async (): Promise<boolean> => {
      const node = await core.readNode({ name: NODE_NAME });
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    };
    await waitFor(`node ${NODE_NAME} Ready (kubelet)`, ready, { timeoutMs: this.timeoutMs, components: [kubelet, containerd, proxy] });
    step(`node ${NODE_NAME} Ready at ${this.network.nodeIp}`);
  }

  private get ctr(): Ctr {
    if (!this.ctrClient) throw new Error('controlplane: the real node has not started');
    return this.ctrClient;
  }

  /**
   * Loads an image from podman/buildah storage into the node (as `kind load docker-image` does), under
   * its normalized name or under `as`. Returns the name the node knows it by.
   */
  async loadImage(ref: string, as?: string): Promise<string> {
    const archive = join(this.dir, `load-${Date.now()}.tar`);
    await saveFromPodman(ref, archive);
    return this.loadImageArchive(archive, as ?? ref);
  }

  /** Imports an OCI or docker archive; with `as`, tags its image with that name too. */
  async loadImageArchive(archive: string, as?: string): Promise<string> {
    const names = await this.ctr.importArchive(archive, this.snapshotter);
    if (!as) {
      if (!names[0]) throw new Error(`controlplane: ${archive} held no named image`);
      return names[0];
    }
    const target = normalizeImageName(as);
    if (!names.includes(target)) {
      const source = names[0];
      if (!source) throw new Error(`controlplane: ${archive} held no named image to tag as ${target}`);
      await this.ctr.tag(source, target);
    }
    return target;
  }

  /** Image names in the node's containerd (k8s.io namespace). */
  images(): Promise<string[]> {
    return this.ctr.images();
  }

  /** The host pid of a running container (a pod status's containerID, with or without `containerd://`). */
  containerPid(containerId: string): Promise<number | undefined> {
    return this.ctr.taskPid(containerId.replace(/^containerd:\/\//, ''));
  }

  pids(): Partial<Record<ComponentName, number>> {
    return Object.fromEntries(this.components.filter((c) => c.pid !== undefined).map((c) => [c.name, c.pid]));
  }

  /**
   * Stops kube-proxy and the kubelet, removes the pods (their network namespaces and CNI allocations)
   * and stops containerd. The node's link stays until stop(): the API server, stopped after this,
   * still deletes its Lease through that address on the way down.
   */
  stopProcesses(): Promise<void> {
    this.stoppingProcesses ??= (async () => {
      const byName = (name: ComponentName): Component | undefined => this.components.find((c) => c.name === name);
      await Promise.all([byName('kubelet')?.stop(5_000), byName('kube-proxy')?.stop(5_000)]);
      const crictl = this.binaries.crictl;
      if (crictl && byName('containerd')?.running) {
        await exec(crictl, ['--runtime-endpoint', `unix://${containerdSocket(this.dir)}`, '--timeout', '20s', 'rmp', '--all', '--force']).catch(() => undefined);
      }
      await byName('containerd')?.stop(5_000);
    })();
    return this.stoppingProcesses;
  }

  /** stopProcesses(), then undoes the host changes and releases the lock. Safe to call more than once. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.stopProcesses();
      const left = await restoreHost(this.state);
      this.lock.release();
      if (left.length) this.log(`controlplane: the real node left: ${left.join('; ')}`);
    })();
    return this.stopping;
  }

  /** For exit handlers: kill the processes; the next start cleans up the rest (the state file). */
  killSync(): void {
    for (const component of this.components) component.killSync();
  }
}
