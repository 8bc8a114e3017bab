// Command lines of the control-plane components. Everything binds to loopback; nothing is exposed.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FRONT_PROXY_CLIENT, type FrontProxyFiles } from './front-proxy.js';

export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  kwok: number;
}

// A /16 holds 65k Services: every app CR owns one, and a /24 (~250) ran out in benchmarks.
export const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/16';
export const NODE_PORT_RANGE = '30000-32767';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
/** Annotation kwok is told to manage; the fake node carries it. */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';
export const KWOK_NODE_ANNOTATION_VALUE = 'fake';

export const etcdUrl = (ports: Ports): string => `http://127.0.0.1:${ports.etcdClient}`;

export function etcdArgs(dir: string, ports: Ports): string[] {
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  return [
    '--name=appkind',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl(ports)}`,
    `--advertise-client-urls=${etcdUrl(ports)}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=appkind=${peer}`,
    // Test data is thrown away; fsync only costs time.
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}

export interface ApiserverFiles {
  certDir: string;
  tokenFile: string;
  serviceAccountPublicKey: string;
  serviceAccountPrivateKey: string;
  auditPolicy?: string;
  auditLog?: string;
  /** `--service-node-port-range`; default NODE_PORT_RANGE (2768 ports, one per NodePort Service). */
  nodePortRange?: string;
  /** Serve /debug/pprof. Default false. */
  profiling?: boolean;
  /** `--watch-cache`. Default true. */
  watchCache?: boolean;
  /** A real node runs: bind and advertise its address, keep the `kubernetes` Service's endpoints. */
  realNode?: { address: string; serviceCidr: string };
  /** The aggregation layer proxies to extension API servers (metrics-server) with this client certificate. */
  frontProxy?: FrontProxyFiles;
}

export function apiserverArgs(ports: Ports, files: ApiserverFiles): string[] {
  // Recent API servers refuse a loopback address in the `kubernetes` Service's endpoints. On the kwok
  // node nothing in-cluster needs them (there are no real pods), so they are not maintained; pods on a
  // real node reach the API server through that Service at the node's address (the self-signed
  // serving certificate names the advertise address and the Service's ClusterIP).
  const node = files.realNode;
  const args = [
    `--etcd-servers=${etcdUrl(ports)}`,
    `--bind-address=${node?.address ?? '127.0.0.1'}`,
    `--advertise-address=${node?.address ?? '127.0.0.1'}`,
    `--endpoint-reconciler-type=${node ? 'lease' : 'none'}`,
    `--secure-port=${ports.apiserver}`,
    // Self-signed serving cert (with a CA) written once into cert-dir and reused on restart.
    `--cert-dir=${files.certDir}`,
    `--token-auth-file=${files.tokenFile}`,
    '--authorization-mode=Node,RBAC',
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${files.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${files.serviceAccountPrivateKey}`,
    `--service-cluster-ip-range=${node?.serviceCidr ?? SERVICE_CLUSTER_IP_RANGE}`,
    `--service-node-port-range=${files.nodePortRange ?? NODE_PORT_RANGE}`,
    `--profiling=${files.profiling ?? false}`,
    // That plugin gives every new Node a not-ready NoSchedule taint which only the node-lifecycle
    // controller removes; we run no such controller, and kwok's fake node is Ready by construction.
    '--disable-admission-plugins=TaintNodesByCondition',
  ];
  // Logs, exec and port-forward go to the kubelet at the node's address: its name `appkind-node`
  // resolves nowhere, and a lookup would leave the machine for its name server.
  if (node) args.push('--kubelet-preferred-address-types=InternalIP');
  if (files.watchCache === false) args.push('--watch-cache=false');
  if (files.frontProxy) {
    args.push(
      `--requestheader-client-ca-file=${files.frontProxy.caFile}`,
      `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${files.frontProxy.certFile}`,
      `--proxy-client-key-file=${files.frontProxy.keyFile}`,
      // Dial the APIService's endpoint (metrics-server on the node address), not its Service's ClusterIP.
      '--enable-aggregator-routing=true',
    );
  }
  if (files.auditPolicy && files.auditLog) {
    args.push(
      `--audit-policy-file=${files.auditPolicy}`,
      `--audit-log-path=${files.auditLog}`,
      '--audit-log-format=json',
      // Written before the response is sent, so a test can read its own request right away.
      '--audit-log-mode=blocking',
      // Never rotated: 0 means lumberjack's default of 100 MB, past which the first events move to a
      // backup file readAuditLog does not read (the N=2500 bench lost the Go reference's create phase so).
      '--audit-log-maxsize=1000000',
    );
  }
  return args;
}

// kube-controller-manager's current names (the short forms without `-controller` are old aliases).
export const CONTROLLERS = [
  'deployment-controller',
  'replicaset-controller',
  'garbage-collector-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'endpointslice-controller',
  // Fills the aggregated ClusterRoles (admin, edit, view) that RoleBindings commonly point at.
  'clusterrole-aggregation-controller',
  // Computes each ResourceQuota's status (hard and used). The API server's ResourceQuota admission
  // plugin (on by default) refuses requests over a quota only once that status exists; without this
  // controller a quota of `pods: 1` admits every pod.
  'resourcequota-controller',
  // Scales what a HorizontalPodAutoscaler targets (an app kind's CR through its scale subresource); it
  // finds CPU figures only where metrics-server runs (the real node, docs/autoscaling.md).
  'horizontal-pod-autoscaler-controller',
];

export function controllerManagerArgs(kubeconfig: string, serviceAccountPrivateKey: string, caFile: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--controllers=${CONTROLLERS.join(',')}`,
    '--use-service-account-credentials=false',
    '--leader-elect=false',
    '--secure-port=0',
    `--service-account-private-key-file=${serviceAccountPrivateKey}`,
    `--root-ca-file=${caFile}`,
    // Benchmarks create hundreds of objects; the default 20 QPS would be the bottleneck.
    '--kube-api-qps=200',
    '--kube-api-burst=400',
    // Every 5 s instead of 15 s, so an autoscaling test sees its HPA act sooner (costs nothing without HPAs).
    '--horizontal-pod-autoscaler-sync-period=5s',
  ];
}

export function schedulerArgs(kubeconfig: string): string[] {
  return [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--secure-port=0'];
}

/** kwok has no built-in lifecycle: the stages come from this file (copied from kwok v0.8.0). */
export const KWOK_STAGES = join(dirname(fileURLToPath(import.meta.url)), 'kwok', 'stages.yaml');

export function kwokArgs(kubeconfig: string, ports: Ports): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    // Also keeps a ~/.kwok/kwok.yaml on the machine from changing the behaviour.
    `--config=${KWOK_STAGES}`,
    '--manage-all-nodes=false',
    `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=${KWOK_NODE_ANNOTATION_VALUE}`,
    '--node-ip=127.0.0.1',
    // Pod IPs are only status values here; keep them apart from the Service range for clarity.
    '--cidr=10.244.0.0/16',
    // Heartbeat through a Lease instead of rewriting Node status: less load on a small machine.
    '--node-lease-duration-seconds=40',
    `--server-address=127.0.0.1:${ports.kwok}`,
  ];
}
