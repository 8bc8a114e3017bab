// What the real node changes on the host, recorded before anything is changed (a state file under
// /run) and undone at stop, or at the next start when a run was SIGKILLed: processes, mounts, links,
// nftables rules/chains/tables, cgroups, paths and sysctls. Only what the run made is removed.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GUARD_TABLE, NODE_LINK, POD_BRIDGE } from './network.js';

export const STATE_DIR = '/run/appkind-realnode';
const STATE_FILE = join(STATE_DIR, 'state.json');

/** Sysctls the kubelet, kube-proxy or the bridge plugin may change. */
export const NODE_SYSCTLS = [
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'net/ipv4/ip_forward',
  'net/ipv4/conf/all/forwarding',
  'net/ipv4/conf/default/forwarding',
  'net/ipv6/conf/all/forwarding',
  'net/ipv6/conf/default/forwarding',
  'net/ipv4/conf/all/route_localnet',
  'net/ipv4/conf/default/route_localnet',
  'net/bridge/bridge-nf-call-iptables',
  'net/bridge/bridge-nf-call-ip6tables',
  'net/bridge/bridge-nf-call-arptables',
  'net/netfilter/nf_conntrack_max',
  'net/netfilter/nf_conntrack_tcp_timeout_established',
  'net/netfilter/nf_conntrack_tcp_timeout_close_wait',
];

/** Host paths containerd or the kubelet create outside the run's folder. */
export const HOST_PATHS = [
  '/run/containerd',
  '/run/nri',
  '/var/run/netns',
  '/var/lib/kubelet', // the device-plugin socket's folder is fixed
  '/usr/libexec/kubernetes',
  '/var/log/containers',
  '/var/log/pods',
  '/var/lib/cni',
  '/etc/cni',
  '/opt/cni',
  '/opt/containerd',
];
const CGROUP_ROOT = '/sys/fs/cgroup';
const KUBEPODS = 'kubepods';
/** Chains (and the rules jumping to them) made by the kubelet, kube-proxy and the CNI plugins. */
const OUR_CHAIN = /^(KUBE-|CNI-)/;
const IPTABLES_TABLES = new Set(['filter', 'nat', 'mangle', 'raw', 'security', 'kube-proxy', GUARD_TABLE]);

export interface NftSnapshot {
  tables: string[];
  chains: string[];
  rules: string[];
}

export interface HostState {
  /** The process that made the run (for the message when it is found dead). */
  pid: number;
  nodeDir: string;
  sysctls: Record<string, string>;
  /** HOST_PATHS that existed before start. */
  paths: string[];
  /** cgroup hierarchies that already had a `kubepods` folder. */
  cgroups: string[];
  nft: NftSnapshot;
}

const readSysctl = (name: string): string | undefined => {
  try {
    return readFileSync(join('/proc/sys', name), 'utf8').trim();
  } catch {
    return undefined;
  }
};

export function readSysctls(names: readonly string[] = NODE_SYSCTLS): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of names) {
    const value = readSysctl(name);
    if (value !== undefined) values[name] = value;
  }
  return values;
}

/** Every cgroup hierarchy mounted under /sys/fs/cgroup (v1 controllers, name=systemd, unified). */
export function cgroupHierarchies(): string[] {
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers'))) return [CGROUP_ROOT];
  return readdirSync(CGROUP_ROOT)
    .map((name) => join(CGROUP_ROOT, name))
    .filter((path) => existsSync(join(path, 'cgroup.procs')));
}

interface NftItem {
  table?: { family: string; name: string };
  chain?: { family: string; table: string; name: string };
  rule?: { family: string; table: string; chain: string; handle: number; expr?: unknown[] };
}

function nftItems(): NftItem[] {
  const out = execFileSync('nft', ['-j', 'list', 'ruleset'], { encoding: 'utf8' });
  return (JSON.parse(out) as { nftables: NftItem[] }).nftables;
}

export function nftSnapshot(): NftSnapshot {
  const snapshot: NftSnapshot = { tables: [], chains: [], rules: [] };
  for (const item of nftItems()) {
    if (item.table) snapshot.tables.push(`${item.table.family} ${item.table.name}`);
    if (item.chain) snapshot.chains.push(`${item.chain.family} ${item.chain.table} ${item.chain.name}`);
    if (item.rule) snapshot.rules.push(`${item.rule.family} ${item.rule.table} ${item.rule.handle}`);
  }
  return snapshot;
}

export function recordHostState(nodeDir: string): HostState {
  const state: HostState = {
    pid: process.pid,
    nodeDir,
    sysctls: readSysctls(),
    paths: HOST_PATHS.filter((path) => existsSync(path)),
    cgroups: cgroupHierarchies().filter((h) => existsSync(join(h, KUBEPODS))),
    nft: nftSnapshot(),
  };
  mkdirSync(STATE_DIR, { recursive: true });
  writeFileSync(STATE_FILE, JSON.stringify(state, null, 2));
  return state;
}

/** The state a previous run left (it was killed before it could clean up), if any. */
export function leftoverHostState(): HostState | undefined {
  try {
    return JSON.parse(readFileSync(STATE_FILE, 'utf8')) as HostState;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const quiet = (cmd: string, args: string[]): boolean => {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** Processes whose command line names the run's folder (containerd shims, which leave its group). */
function processesOf(nodeDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(nodeDir)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

/** Every process in a cgroup folder and below (the pods' containers). */
function cgroupProcesses(dir: string): number[] {
  const pids: number[] = [];
  const walk = (path: string): void => {
    try {
      for (const line of readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n')) if (line) pids.push(Number(line));
      for (const entry of readdirSync(path, { withFileTypes: true })) if (entry.isDirectory()) walk(join(path, entry.name));
    } catch {
      // removed meanwhile
    }
  };
  walk(dir);
  return pids;
}

function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function newKubepods(state: HostState): string[] {
  return cgroupHierarchies()
    .filter((h) => !state.cgroups.includes(h))
    .map((h) => join(h, KUBEPODS))
    .filter((dir) => existsSync(dir));
}

async function killProcesses(state: HostState): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const pids = [...processesOf(state.nodeDir), ...newKubepods(state).flatMap(cgroupProcesses)];
    if (pids.length === 0) return;
    killAll(pids);
    await sleep(100);
  }
}

/** Mount points under `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const decode = (field: string): string => field.replace(/\\(\d{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => decode(line.split(' ')[1] ?? ''))
    .filter((path) => path === dir || path.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

function unmountAll(dir: string): string[] {
  for (let round = 0; round < 5; round++) {
    const mounts = mountsUnder(dir);
    if (mounts.length === 0) return [];
    for (const path of mounts) if (!quiet('umount', [path])) quiet('umount', ['-l', path]);
  }
  return mountsUnder(dir);
}

function removeLinks(): void {
  // Pod veths first (still attached to the bridge when their namespace outlived the run).
  try {
    const attached = JSON.parse(execFileSync('ip', ['-j', 'link', 'show', 'master', POD_BRIDGE], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }) || '[]') as { ifname: string }[];
    for (const link of attached) quiet('ip', ['link', 'del', link.ifname]);
  } catch {
    // no bridge
  }
  for (const link of [POD_BRIDGE, NODE_LINK]) quiet('ip', ['link', 'del', link]);
}

const references = (expr: unknown): boolean => /"target":\s*"(KUBE-|CNI-)/.test(JSON.stringify(expr ?? []));

/** One nft transaction (fast with hundreds of kube-proxy rules); one by one if it is refused. */
function nftBatch(commands: string[]): void {
  if (commands.length === 0) return;
  try {
    execFileSync('nft', ['-f', '-'], { input: commands.join('\n'), stdio: ['pipe', 'ignore', 'ignore'] });
  } catch {
    for (const command of commands) quiet('nft', command.split(' '));
  }
}

/** New rules in iptables' tables that jump to our chains, then our new chains, then new empty tables. */
function removeNftChanges(before: NftSnapshot): void {
  const had = { tables: new Set(before.tables), chains: new Set(before.chains), rules: new Set(before.rules) };
  const ours = (table: string): boolean => IPTABLES_TABLES.has(table);
  const rules = nftItems().flatMap(({ rule }) =>
    rule && ours(rule.table) && !had.rules.has(`${rule.family} ${rule.table} ${rule.handle}`) && (OUR_CHAIN.test(rule.chain) || references(rule.expr) || rule.table === GUARD_TABLE)
      ? [`delete rule ${rule.family} ${rule.table} ${rule.chain} handle ${rule.handle}`]
      : [],
  );
  nftBatch(rules);
  const after = nftItems();
  const withRules = new Set(after.flatMap(({ rule }) => (rule ? [`${rule.family} ${rule.table} ${rule.chain}`] : [])));
  // Our own chains go; a new built-in chain (iptables-nft adds them on first use) goes when empty.
  nftBatch(
    after.flatMap(({ chain }) => {
      const key = chain && `${chain.family} ${chain.table} ${chain.name}`;
      return chain && key && ours(chain.table) && !had.chains.has(key) && !withRules.has(key) ? [`delete chain ${key}`] : [];
    }),
  );
  const left = nftItems();
  nftBatch(
    left.flatMap(({ table }) => {
      if (!table || !ours(table.name) || had.tables.has(`${table.family} ${table.name}`)) return [];
      const empty = !left.some((i) => i.chain && i.chain.family === table.family && i.chain.table === table.name);
      return empty ? [`delete table ${table.family} ${table.name}`] : [];
    }),
  );
}

function removeCgroups(state: HostState): void {
  const rmTree = (dir: string): void => {
    try {
      for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) rmTree(join(dir, entry.name));
      rmdirSync(dir);
    } catch {
      // busy or gone; reported by the caller's check
    }
  };
  for (const dir of newKubepods(state)) rmTree(dir);
}

function restoreSysctls(values: Record<string, string>): void {
  // ip_forward first: writing it resets every per-interface forwarding value.
  const names = Object.keys(values).sort((a, b) => Number(b === 'net/ipv4/ip_forward') - Number(a === 'net/ipv4/ip_forward'));
  for (const name of names) {
    if (readSysctl(name) === values[name]) continue;
    try {
      writeFileSync(join('/proc/sys', name), values[name]);
    } catch {
      // read-only here; nothing to restore
    }
  }
}

/** The netns files containerd left under /var/run/netns (only when it made that folder). */
function removeHostPaths(state: HostState): void {
  for (const path of HOST_PATHS) {
    if (state.paths.includes(path) || !existsSync(path)) continue;
    for (const mount of mountsUnder(path)) if (!quiet('umount', [mount])) quiet('umount', ['-l', mount]);
    rmSync(path, { recursive: true, force: true });
  }
}

/**
 * Undoes everything the run recorded in `state` made. Returns what could not be undone (empty when
 * all is clean). Safe to call twice.
 */
export async function restoreHost(state: HostState): Promise<string[]> {
  const problems: string[] = [];
  await killProcesses(state);
  const stuck = existsSync(state.nodeDir) ? unmountAll(state.nodeDir) : [];
  if (stuck.length) problems.push(`mounts still in place: ${stuck.join(', ')}`);
  removeLinks();
  removeNftChanges(state.nft);
  removeCgroups(state);
  const cgroupsLeft = newKubepods(state);
  if (cgroupsLeft.length) problems.push(`cgroups still in place: ${cgroupsLeft.join(', ')}`);
  removeHostPaths(state);
  restoreSysctls(state.sysctls);
  if (stuck.length === 0) rmSync(state.nodeDir, { recursive: true, force: true });
  if (problems.length === 0) rmSync(STATE_FILE, { force: true });
  return problems;
}
