// The real node's kubelet: a KubeletConfiguration for this machine (cgroup v1 with cgroupfs,
// containerd in the run's folder, no image GC, a resolv.conf with no DNS server) and its flags.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const NODE_NAME = 'appkind-node';
/** The identity the API server's static token file gives it; the Node authorizer accepts it. */
export const KUBELET_USER = { name: `system:node:${NODE_NAME}`, groups: ['system:nodes'] };

export interface KubeletFiles {
  dir: string;
  kubeconfig: string;
  containerdSocket: string;
  nodeIp: string;
  port: number;
  healthzPort: number;
}

export function kubeletConfiguration(f: KubeletFiles): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // These machines have cgroup v1 (hybrid) and no systemd cgroup manager.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    containerRuntimeEndpoint: `unix://${f.containerdSocket}`,
    // Serve only on the node address; the API server reaches it there for logs and exec. It sends no
    // client certificate here, so the kubelet API takes anonymous requests (the address is the harness's own link).
    address: f.nodeIp,
    port: f.port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: f.healthzPort,
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    registerNode: true,
    // Pods get no DNS server: no name lookups leave the machine (in-cluster config uses the Service IP).
    resolvConf: join(f.dir, 'resolv.conf'),
    podLogsDir: join(f.dir, 'pod-logs'),
    volumePluginDir: join(f.dir, 'volume-plugins'),
    // Images are loaded by hand (no registry): never garbage-collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    // A busy shared disk must not evict the test's pods.
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    failSwapOn: false,
    maxPods: 110,
  };
}

export function writeKubeletFiles(f: KubeletFiles): string {
  writeFileSync(join(f.dir, 'resolv.conf'), '# appkind real node: no name server, nothing leaves the machine\noptions ndots:1\n');
  const path = join(f.dir, 'kubelet.yaml');
  writeFileSync(path, stringify(kubeletConfiguration(f)));
  return path;
}

export function kubeletArgs(f: KubeletFiles, configPath: string): string[] {
  return [
    `--config=${configPath}`,
    `--kubeconfig=${f.kubeconfig}`,
    `--root-dir=${join(f.dir, 'kubelet')}`,
    `--cert-dir=${join(f.dir, 'kubelet', 'pki')}`,
    `--hostname-override=${NODE_NAME}`,
    `--node-ip=${f.nodeIp}`,
    '--v=1',
  ];
}
