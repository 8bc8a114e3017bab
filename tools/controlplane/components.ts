// Command lines of the control-plane components. Everything binds to loopback; nothing is exposed.
import { join } from 'node:path';

export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  kwok: number;
}

export const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';
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
}

export function apiserverArgs(ports: Ports, files: ApiserverFiles): string[] {
  const args = [
    `--etcd-servers=${etcdUrl(ports)}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${ports.apiserver}`,
    // Self-signed serving cert (with a CA) written once into cert-dir and reused on restart.
    `--cert-dir=${files.certDir}`,
    `--token-auth-file=${files.tokenFile}`,
    '--authorization-mode=Node,RBAC',
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${files.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${files.serviceAccountPrivateKey}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    `--service-node-port-range=${NODE_PORT_RANGE}`,
    '--profiling=false',
  ];
  if (files.auditPolicy && files.auditLog) {
    args.push(
      `--audit-policy-file=${files.auditPolicy}`,
      `--audit-log-path=${files.auditLog}`,
      '--audit-log-format=json',
      // Written before the response is sent, so a test can read its own request right away.
      '--audit-log-mode=blocking',
    );
  }
  return args;
}

export const CONTROLLERS = [
  'deployment',
  'replicaset',
  'garbagecollector',
  'serviceaccount',
  'serviceaccount-token',
  'namespace',
  'endpointslice',
  'root-ca-cert-publisher',
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
  ];
}

export function schedulerArgs(kubeconfig: string): string[] {
  return [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--secure-port=0'];
}

export function kwokArgs(kubeconfig: string, ports: Ports): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    '--manage-all-nodes=false',
    `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=${KWOK_NODE_ANNOTATION_VALUE}`,
    '--node-ip=127.0.0.1',
    `--server-address=127.0.0.1:${ports.kwok}`,
  ];
}
