// The real node's network: address ranges that overlap no route the machine had before start, a veth
// pair holding the node address (the kubelet refuses loopback and this kernel has no dummy device),
// the CNI config for the pod bridge, and a FORWARD guard so nothing is routed off the machine.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Interface names (15 characters at most) and the iptables chain; cleanup finds them by these names. */
export const NODE_LINK = 'appkind-node';
export const NODE_LINK_PEER = 'appkind-peer';
export const POD_BRIDGE = 'appkind-br';
/** An nftables table of our own: its forward hook runs before iptables' (kube-proxy inserts its rules first there). */
export const GUARD_TABLE = 'appkind-node';
export const CNI_NETWORK = 'appkind';

export interface NodeNetwork {
  /** The node's address (kubelet --node-ip, the API server's bind and advertise address). */
  nodeIp: string;
  /** `--service-cluster-ip-range`; its first address is the `kubernetes` Service. */
  serviceCidr: string;
  /** The pod bridge's subnet (host-local IPAM); its first address is the bridge (the pods' gateway). */
  podCidr: string;
}

interface Cidr {
  base: number;
  bits: number;
}

function parseIpv4(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    const n = Number(part);
    if (!/^\d+$/.test(part) || n > 255) return undefined;
    value = value * 256 + n;
  }
  return value;
}

/** `10.0.0.0/16` or a bare address (a /32); undefined for IPv6 and `default`. */
export function parseCidr(text: string): Cidr | undefined {
  const [ip, bitsText] = text.split('/');
  const base = parseIpv4(ip);
  const bits = bitsText === undefined ? 32 : Number(bitsText);
  if (base === undefined || !Number.isInteger(bits) || bits < 0 || bits > 32) return undefined;
  return { base, bits };
}

const size = (c: Cidr): number => 2 ** (32 - c.bits);
const start = (c: Cidr): number => c.base - (c.base % size(c));

export function overlaps(a: string, b: string): boolean {
  const x = parseCidr(a);
  const y = parseCidr(b);
  if (!x || !y) return false;
  return start(x) < start(y) + size(y) && start(y) < start(x) + size(x);
}

// First choices mirror common cluster defaults; later ones are for machines whose routes take them.
const SERVICE_CANDIDATES = ['10.0.0.0/16', '10.96.0.0/16', '172.30.0.0/16', '192.168.224.0/20'];
const POD_CANDIDATES = ['10.244.0.0/24', '10.245.0.0/24', '172.31.0.0/24', '192.168.250.0/24'];
const NODE_CANDIDATES = ['10.243.0.1', '10.242.0.1', '172.29.0.1', '192.168.251.1'];

/**
 * Ranges for the node's network that overlap none of `routes` (the destinations of every route on
 * the machine, `default` excluded by the caller) nor each other.
 */
export function pickNodeNetwork(routes: readonly string[]): NodeNetwork {
  const taken = [...routes];
  const pick = (what: string, candidates: string[]): string => {
    const free = candidates.find((c) => !taken.some((r) => overlaps(c, r)));
    if (!free) {
      throw new Error(`controlplane: every candidate ${what} (${candidates.join(', ')}) overlaps a route on this machine (ip route show table all)`);
    }
    taken.push(free);
    return free;
  };
  return {
    serviceCidr: pick('Service range', SERVICE_CANDIDATES),
    podCidr: pick('pod range', POD_CANDIDATES),
    nodeIp: pick('node address', NODE_CANDIDATES),
  };
}

interface IpRoute {
  dst?: string;
  type?: string;
}

/** IPv4 destinations of every route in every table (`default` left out: it overlaps everything). */
export function routeDestinations(ipJson: string): string[] {
  const routes = JSON.parse(ipJson) as IpRoute[];
  return routes.map((r) => r.dst ?? '').filter((dst) => dst && dst !== 'default' && parseCidr(dst) !== undefined);
}

export function currentRoutes(): string[] {
  return routeDestinations(execFileSync('ip', ['-4', '-j', 'route', 'show', 'table', 'all'], { encoding: 'utf8' }) || '[]');
}

/** The first address of a range, e.g. the `kubernetes` Service's ClusterIP or the bridge's address. */
export function firstAddress(cidr: string): string {
  const c = parseCidr(cidr);
  if (!c) throw new Error(`controlplane: not an IPv4 range: ${cidr}`);
  const n = start(c) + 1;
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

export const run = (cmd: string, args: string[]): string => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** The veth pair with the node address; both ends up (a local address answers only on an up link). */
export function createNodeLink(net: NodeNetwork): void {
  run('ip', ['link', 'add', NODE_LINK, 'type', 'veth', 'peer', 'name', NODE_LINK_PEER]);
  run('ip', ['addr', 'add', `${net.nodeIp}/32`, 'dev', NODE_LINK]);
  run('ip', ['link', 'set', NODE_LINK_PEER, 'up']);
  run('ip', ['link', 'set', NODE_LINK, 'up']);
}

/**
 * The bridge plugin turns ip_forward on; this guard keeps forwarding to pod-to-pod traffic on the
 * bridge (Services between pods included): pods cannot reach off the machine and nothing else is
 * routed into them. When forwarding was off before start, nothing else may be forwarded either. A drop
 * in any forward hook is final, so kube-proxy's ACCEPT rules in iptables' FORWARD cannot undo it.
 */
export function installForwardGuard(forwardingWasOn: boolean): void {
  const rules = [
    `iifname "${POD_BRIDGE}" oifname "${POD_BRIDGE}" accept`,
    `iifname "${POD_BRIDGE}" drop`,
    `oifname "${POD_BRIDGE}" drop`,
    ...(forwardingWasOn ? [] : ['drop']),
  ];
  const script = [`table ip ${GUARD_TABLE} {`, '  chain forward {', '    type filter hook forward priority -10; policy accept;', ...rules.map((r) => `    ${r}`), '  }', '}'].join('\n');
  execFileSync('nft', ['-f', '-'], { input: script, stdio: ['pipe', 'ignore', 'pipe'] });
}

/**
 * CNI config: the bridge with the pods' gateway, host-local IPAM in the run's folder, routes to the
 * Service range and the node address only (no default route: nothing leaves the machine), no
 * masquerade; portmap for hostPort. Returns the conf folder.
 */
export function writeCniConfig(dir: string, net: NodeNetwork): string {
  const confDir = join(dir, 'cni', 'net.d');
  mkdirSync(confDir, { recursive: true });
  const conflist = {
    cniVersion: '1.0.0',
    name: CNI_NETWORK,
    plugins: [
      {
        type: 'bridge',
        bridge: POD_BRIDGE,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: net.podCidr }]],
          routes: [{ dst: net.serviceCidr }, { dst: `${net.nodeIp}/32` }],
          dataDir: join(dir, 'cni', 'ipam'),
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
  writeFileSync(join(confDir, '10-appkind.conflist'), JSON.stringify(conflist, null, 2));
  return confDir;
}
