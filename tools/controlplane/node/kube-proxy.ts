// kube-proxy for the real node: iptables mode (nftables mode has no localhost NodePorts), NodePorts on
// loopback and the node address only, the host's conntrack sysctls left alone.
import { NODE_NAME } from './kubelet.js';

/** Bound to `system:node-proxier` by RBAC's bootstrap policy. */
export const KUBE_PROXY_USER = { name: 'system:kube-proxy', groups: [] as string[] };

export interface KubeProxyFlags {
  kubeconfig: string;
  nodeIp: string;
  podCidr: string;
  healthzPort: number;
  metricsPort: number;
}

export function kubeProxyArgs(f: KubeProxyFlags): string[] {
  return [
    `--kubeconfig=${f.kubeconfig}`,
    `--hostname-override=${NODE_NAME}`,
    '--proxy-mode=iptables',
    `--cluster-cidr=${f.podCidr}`,
    `--nodeport-addresses=127.0.0.0/8,${f.nodeIp}/32`,
    // Leave the host's conntrack sysctls as they are.
    '--conntrack-max-per-core=0',
    '--conntrack-min=0',
    '--conntrack-tcp-timeout-established=0',
    '--conntrack-tcp-timeout-close-wait=0',
    '--oom-score-adj=0',
    `--healthz-bind-address=127.0.0.1:${f.healthzPort}`,
    `--metrics-bind-address=127.0.0.1:${f.metricsPort}`,
    '--v=1',
  ];
}
