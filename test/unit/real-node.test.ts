// The real node's pure parts: address ranges that avoid the machine's routes, image names as the
// kubelet normalizes them, and the settings this machine needs in the generated configs and flags.
import { describe, expect, it } from '@jest/globals';
import { apiserverArgs, type Ports } from '../../tools/controlplane/components.js';
import { containerdConfig } from '../../tools/controlplane/node/containerd.js';
import { kubeProxyArgs } from '../../tools/controlplane/node/kube-proxy.js';
import { kubeletConfiguration } from '../../tools/controlplane/node/kubelet.js';
import { normalizeImageName } from '../../tools/controlplane/node/images.js';
import { realNodeProblems, RealNodeUnavailableError } from '../../tools/controlplane/node/preconditions.js';
import { firstAddress, overlaps, pickNodeNetwork, routeDestinations } from '../../tools/controlplane/node/network.js';

describe('node network ranges', () => {
  it('detects overlapping ranges and addresses, and none across disjoint ones', () => {
    expect(overlaps('10.0.0.0/16', '10.0.5.0/24')).toBe(true);
    expect(overlaps('10.0.5.7', '10.0.0.0/16')).toBe(true);
    expect(overlaps('10.0.0.0/16', '10.1.0.0/16')).toBe(false);
    expect(overlaps('0.0.0.0/0', '192.168.1.1')).toBe(true);
  });

  it('takes the first candidates on a machine with only its uplink routes', () => {
    const net = pickNodeNetwork(['192.0.2.0/24', '127.0.0.0/8', '192.0.2.2']);
    expect(net).toEqual({ serviceCidr: '10.0.0.0/16', podCidr: '10.244.0.0/24', nodeIp: '10.243.0.1' });
  });

  it('moves every range off a route that covers the first choices', () => {
    const net = pickNodeNetwork(['10.0.0.0/8']);
    for (const range of [net.serviceCidr, net.podCidr, net.nodeIp]) expect(overlaps(range, '10.0.0.0/8')).toBe(false);
    expect(overlaps(net.serviceCidr, net.podCidr)).toBe(false);
  });

  it('fails naming the ranges when every candidate is taken', () => {
    expect(() => pickNodeNetwork(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'])).toThrow(/every candidate Service range .* overlaps a route/);
  });

  it('reads route destinations from ip -j, leaving out default and IPv6', () => {
    const json = JSON.stringify([{ dst: 'default', gateway: '192.0.2.1' }, { dst: '192.0.2.0/24' }, { dst: '127.0.0.1', type: 'local' }, { dst: 'fe80::/64' }]);
    expect(routeDestinations(json)).toEqual(['192.0.2.0/24', '127.0.0.1']);
  });

  it('gives the first address of a range (the kubernetes Service, the bridge)', () => {
    expect(firstAddress('10.0.0.0/16')).toBe('10.0.0.1');
    expect(firstAddress('10.244.0.0/24')).toBe('10.244.0.1');
  });
});

describe('image names on the node', () => {
  it('normalizes as the kubelet and containerd do', () => {
    expect(normalizeImageName('takeyan/flask:0.0.3')).toBe('docker.io/takeyan/flask:0.0.3');
    expect(normalizeImageName('nginx')).toBe('docker.io/library/nginx:latest');
    expect(normalizeImageName('localhost/appkind-operator:0.1.0')).toBe('localhost/appkind-operator:0.1.0');
    expect(normalizeImageName('registry.example.com:5000/a/b')).toBe('registry.example.com:5000/a/b:latest');
  });
});

describe('node component settings', () => {
  const ports: Ports = { etcdClient: 1, etcdPeer: 2, apiserver: 3, kwok: 4 };
  const files = { certDir: '/c', tokenFile: '/t', serviceAccountPublicKey: '/p', serviceAccountPrivateKey: '/k' };

  it('the API server binds and advertises the node address and keeps the kubernetes endpoints with a real node', () => {
    const args = apiserverArgs(ports, { ...files, realNode: { address: '10.243.0.1', serviceCidr: '10.96.0.0/16' } });
    expect(args).toEqual(expect.arrayContaining(['--bind-address=10.243.0.1', '--advertise-address=10.243.0.1', '--endpoint-reconciler-type=lease', '--service-cluster-ip-range=10.96.0.0/16']));
    // kubectl logs/exec reach the kubelet at the node's address, with no name lookup.
    expect(args).toContain('--kubelet-preferred-address-types=InternalIP');
  });

  it('the API server stays on loopback without endpoints by default (kwok)', () => {
    expect(apiserverArgs(ports, files)).toEqual(expect.arrayContaining(['--bind-address=127.0.0.1', '--endpoint-reconciler-type=none', '--service-cluster-ip-range=10.0.0.0/16']));
    expect(apiserverArgs(ports, files).some((a) => a.startsWith('--kubelet-preferred-address-types'))).toBe(false);
  });

  it('the audit log, when asked for, is one file that is never rotated (lumberjack rotates at 100 MB by default)', () => {
    const args = apiserverArgs(ports, { ...files, auditPolicy: '/a/policy.yaml', auditLog: '/a/audit.log' });
    expect(args).toEqual(expect.arrayContaining(['--audit-log-path=/a/audit.log', '--audit-log-mode=blocking']));
    const maxsize = args.find((a) => a.startsWith('--audit-log-maxsize='));
    expect(Number(maxsize?.split('=')[1])).toBeGreaterThanOrEqual(100_000);
    expect(apiserverArgs(ports, files).some((a) => a.startsWith('--audit-log'))).toBe(false);
  });

  it('containerd restricts oom_score_adj, pins the sandbox image and keeps netns in its state folder', () => {
    const toml = containerdConfig({ dir: '/n', cniBinDir: '/n/cni/bin', cniConfDir: '/n/cni/net.d', runc: '/usr/sbin/runc', sandboxImage: 'localhost/appkind/pause:abc', snapshotter: 'overlayfs' });
    expect(toml).toMatch(/restrict_oom_score_adj = true/);
    expect(toml).toMatch(/sandbox = "localhost\/appkind\/pause:abc"/);
    expect(toml).toMatch(/netns_mounts_under_state_dir = true/);
    expect(toml).toMatch(/SystemdCgroup = false/);
    expect(toml).toMatch(/BinaryName = "\/usr\/sbin\/runc"/);
    expect(toml).toMatch(/Root = "\/n\/runc"/);
  });

  it('the kubelet runs on cgroup v1 with cgroupfs, never collects images and uses the harness resolv.conf', () => {
    const config = kubeletConfiguration({ dir: '/n', kubeconfig: '/k', containerdSocket: '/n/c.sock', nodeIp: '10.243.0.1', port: 1, healthzPort: 2 });
    expect(config).toMatchObject({ failCgroupV1: false, cgroupDriver: 'cgroupfs', imageGCHighThresholdPercent: 100, serializeImagePulls: false, registerNode: true, resolvConf: '/n/resolv.conf', address: '10.243.0.1' });
  });

  it('kube-proxy serves NodePorts on loopback and the node address and leaves conntrack alone', () => {
    const args = kubeProxyArgs({ kubeconfig: '/k', nodeIp: '10.243.0.1', podCidr: '10.244.0.0/24', healthzPort: 1, metricsPort: 2 });
    expect(args).toEqual(expect.arrayContaining(['--proxy-mode=iptables', '--nodeport-addresses=127.0.0.0/8,10.243.0.1/32', '--conntrack-max-per-core=0', '--conntrack-tcp-timeout-established=0']));
  });
});

describe('real node preconditions', () => {
  it('names every node binary that is missing and how to build it', () => {
    const problems = realNodeProblems({ etcd: '/e', 'kube-apiserver': '/a', 'kube-controller-manager': '/c', source: 'test' });
    const binaries = problems.find((p) => p.startsWith('binaries not built'));
    expect(binaries).toMatch(/kubelet, kube-proxy, containerd, containerd-shim-runc-v2, ctr, crictl, pause, bridge, host-local, loopback, portmap/);
    expect(binaries).toMatch(/bash tools\/controlplane\/build\.sh/);
    expect(problems).toContain('kube-scheduler not built (bash tools/controlplane/build.sh)');
  });

  it('says what is missing, how to fix it and that kwok needs none of it', () => {
    const message = new RealNodeUnavailableError(['missing runc, nft: apt-get install runc nftables']).message;
    expect(message).toContain('the real node cannot start here');
    expect(message).toContain('  - missing runc, nft: apt-get install runc nftables');
    expect(message).toContain('without --real-node');
  });
});
