// What a real node may change on this machine, read the way an admin would (ip, iptables-save, nft,
// /proc/mounts, /proc/sys, the cgroup folders), for tests that compare before start and after stop.
// Other sessions' podman/buildah mounts and netns come and go meanwhile; those are left out.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupHierarchies, HOST_PATHS, readSysctls } from '../../tools/controlplane/node/host-state.js';

export interface HostSnapshot {
  links: string[];
  netns: string[];
  iptables: string[];
  nft: string[];
  mounts: string[];
  sysctls: Record<string, string>;
  cgroups: string[];
  paths: string[];
}

const run = (cmd: string, args: string[]): string => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
// Mount points of other tools that share the machine (container storage, their network namespaces).
const OTHERS = /^\/(var\/lib\/containers|run\/containers|run\/user|var\/tmp|tmp\/(buildah|podman|appkind-image|appkind-echo))|^\/run\/netns\/netns-/;

/** Every sysctl under the names the node may touch, and whole folders of them, so a stray change shows. */
function sysctls(): Record<string, string> {
  const folders = ['net/ipv4/conf/all', 'net/ipv4/conf/default', 'net/bridge', 'kernel/keys'];
  const names = folders.flatMap((f) => (existsSync(join('/proc/sys', f)) ? readdirSync(join('/proc/sys', f)).map((n) => `${f}/${n}`) : []));
  const values = readSysctls([...new Set(names)]);
  return { ...values, ...readSysctls() };
}

export function hostSnapshot(): HostSnapshot {
  const links = (JSON.parse(run('ip', ['-j', 'link'])) as { ifname: string }[]).map((l) => l.ifname).sort();
  const netnsDir = '/var/run/netns';
  const netns = existsSync(netnsDir) ? readdirSync(netnsDir).filter((n) => !n.startsWith('netns-')).sort() : [];
  const strip = (text: string): string[] =>
    text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.replace(/\[\d+:\d+\]/g, '[]'));
  const iptables = [...strip(run('iptables-save', [])), ...strip(run('ip6tables-save', []))];
  const nft = run('nft', ['list', 'ruleset']).split('\n').filter(Boolean);
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((p) => p && !OTHERS.test(p))
    .sort();
  const cgroups = cgroupHierarchies()
    .flatMap((h) => readdirSync(h, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `${h}/${e.name}`))
    .sort();
  return { links, netns, iptables, nft, mounts, sysctls: sysctls(), cgroups, paths: HOST_PATHS.filter((p) => existsSync(p)) };
}

/** The differences as readable lines (empty: the same). */
export function snapshotDifferences(before: HostSnapshot, after: HostSnapshot): string[] {
  const lines: string[] = [];
  for (const key of ['links', 'netns', 'iptables', 'nft', 'mounts', 'cgroups', 'paths'] as const) {
    const had = new Set(before[key]);
    const has = new Set(after[key]);
    for (const item of has) if (!had.has(item)) lines.push(`${key}: added ${item}`);
    for (const item of had) if (!has.has(item)) lines.push(`${key}: removed ${item}`);
  }
  for (const name of new Set([...Object.keys(before.sysctls), ...Object.keys(after.sysctls)])) {
    if (before.sysctls[name] !== after.sysctls[name]) lines.push(`sysctl ${name}: ${before.sysctls[name]} -> ${after.sysctls[name]}`);
  }
  return lines;
}
