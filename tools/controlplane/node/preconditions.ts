// What the real node needs from the machine, checked before anything is started or changed; the error
// names every missing piece and how to get it. There is no silent fallback to the kwok node.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { NODE_BINARIES, type Binaries } from '../binaries.js';

export const RUNC_CANDIDATES = ['/usr/sbin/runc', '/usr/bin/runc'];

export class RealNodeUnavailableError extends Error {
  constructor(readonly problems: string[]) {
    super(`controlplane: the real node cannot start here:\n${problems.map((p) => `  - ${p}`).join('\n')}\n(the default kwok node needs none of this: start without --real-node / realNode)`);
    this.name = 'RealNodeUnavailableError';
  }
}

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};
const onPath = (tool: string): boolean => !spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status;

export function findRunc(): string | undefined {
  return RUNC_CANDIDATES.find(executable) ?? (onPath('runc') ? 'runc' : undefined);
}

/** 'overlayfs' where the kernel has overlay, else containerd's slower 'native' snapshotter. */
export function snapshotterForThisKernel(): string {
  try {
    return /\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8')) ? 'overlayfs' : 'native';
  } catch {
    return 'native';
  }
}

/** Every reason the real node cannot start on this machine (empty: it can). */
export function realNodeProblems(binaries: Binaries): string[] {
  const problems: string[] = [];
  if (process.platform !== 'linux') return [`it needs Linux (this is ${process.platform}); use the kwok default`];
  if (process.getuid?.() !== 0) problems.push('it needs root (network links, iptables, mounts, cgroups): run as root, e.g. sudo -E npm start -- --real-node');
  if (!existsSync('/sys/fs/cgroup/cgroup.controllers') && !existsSync('/sys/fs/cgroup/memory/cgroup.procs')) {
    problems.push('no cgroup file system under /sys/fs/cgroup (v2, or v1 with the memory controller)');
  }
  const tools: [string, string][] = [
    ['iptables', 'apt-get install iptables'],
    ['nft', 'apt-get install nftables'],
    ['ip', 'apt-get install iproute2'],
    ['flock', 'apt-get install util-linux'],
    ['mount', 'apt-get install mount'],
    ['tar', 'apt-get install tar'],
  ];
  const missing = tools.filter(([tool]) => !onPath(tool));
  if (!findRunc()) missing.unshift(['runc', 'apt-get install runc']);
  if (missing.length) {
    problems.push(`missing ${missing.map(([t]) => t).join(', ')}: ${['apt-get install', ...new Set(missing.map(([, fix]) => fix.split(' ').pop()))].join(' ')}`);
  }
  if (!existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables')) {
    problems.push('no br_netfilter (pod-to-Service traffic on the bridge needs it): modprobe br_netfilter');
  }
  const absent = NODE_BINARIES.filter((name) => !binaries[name]);
  if (absent.length) {
    problems.push(`binaries not built: ${absent.join(', ')} (bash tools/controlplane/build.sh builds them; or set TEST_ASSET_<NAME> / KUBEBUILDER_ASSETS)`);
  }
  if (!binaries['kube-scheduler']) problems.push('kube-scheduler not built (bash tools/controlplane/build.sh)');
  return problems;
}
