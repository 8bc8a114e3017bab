// Test-file side of the shared control plane that global-setup.ts starts once per jest run.
import { CoreV1Api, KubeConfig, type KubernetesObject, type V1Deployment } from '@kubernetes/client-node';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readAuditLogFile, type AuditEvent } from '../../tools/controlplane/audit.js';
import { NODE_PORT_RANGE } from '../../tools/controlplane/components.js';
import type { RestClient } from '../../operator/runtime/rest.js';
import { waitFor } from '../../tools/controlplane/readiness.js';
import { writeServiceAccountKubeconfig } from '../../tools/controlplane/serviceaccount.js';

export type { AuditEvent } from '../../tools/controlplane/audit.js';

export interface SharedCluster {
  /** Admin (system:masters) KubeConfig, freshly loaded. */
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  server: string;
  auditLogPath?: string;
  /** kube-scheduler + kwok run: pods become Running/Ready on a fake node. */
  hasScheduler: boolean;
  /** The control plane's temp folder (removed at the end of the run). */
  dir: string;
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run integration tests through jest's "integration" project (global-setup.ts)`);
  return value;
}

export function sharedCluster(): SharedCluster {
  const kubeconfigPath = requiredEnv('APPKIND_TEST_KUBECONFIG');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const auditLogPath = process.env.APPKIND_TEST_AUDIT_LOG || undefined;
  return {
    kubeConfig,
    kubeconfigPath,
    server: kubeConfig.getCurrentCluster()?.server ?? '',
    auditLogPath,
    hasScheduler: process.env.APPKIND_TEST_HAS_SCHEDULER === '1',
    dir: requiredEnv('APPKIND_TEST_CONTROLPLANE_DIR'),
  };
}

/** Audit events of the shared control plane so far (written before each response is sent). */
export function readSharedAuditLog(): Promise<AuditEvent[]> {
  return readAuditLogFile(requiredEnv('APPKIND_TEST_AUDIT_LOG'));
}

/** Kubeconfig acting as the ServiceAccount (TokenRequest token) against the shared cluster. */
export async function sharedServiceAccountKubeconfig(namespace: string, name: string): Promise<string> {
  const cluster = sharedCluster();
  const path = join(cluster.dir, `sa-${namespace}-${name}-${randomBytes(3).toString('hex')}.kubeconfig`);
  await writeServiceAccountKubeconfig(cluster.kubeConfig, namespace, name, path);
  return path;
}

/** A fresh namespace with a unique name, so test files sharing the cluster do not collide. */
export async function createTestNamespace(kc: KubeConfig, prefix = 'test'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Polls until `check` returns true (exceptions count as "not yet"); fails after `timeoutMs`. */
export function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  return waitFor(what, check, { timeoutMs, intervalMs: 250 });
}

/**
 * NodePorts free right now in the band the API server keeps for fixed ports: since Kubernetes 1.27 the
 * allocator hands out random ports from the upper band of the range and takes the lower band only when
 * the upper one is full, so a free port there stays free unless another test asks for it by number.
 * Picked at random so test files sharing the cluster rarely ask for the same one.
 */
export async function freeStaticNodePorts(kc: KubeConfig, count: number): Promise<number[]> {
  const [min, max] = NODE_PORT_RANGE.split('-').map(Number) as [number, number];
  const size = max - min + 1;
  const band = Math.min(Math.max(16, Math.floor(size / 32)), 128);
  const services = await kc.makeApiClient(CoreV1Api).listServiceForAllNamespaces();
  const used = new Set(services.items.flatMap((s) => (s.spec?.ports ?? []).map((p) => p.nodePort)));
  const free = Array.from({ length: band }, (_, i) => min + i).filter((p) => !used.has(p));
  if (free.length < count) throw new Error(`only ${free.length} free NodePorts in ${min}-${min + band - 1}, need ${count}`);
  for (let i = free.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [free[i], free[j]] = [free[j]!, free[i]!];
  }
  return free.slice(0, count);
}

/** A custom resource of an app kind, by name (a reference for get/delete), with `spec` when given. */
export function crObject(kind: AppKind, namespace: string, name: string, spec?: Record<string, unknown>): KubernetesObject & { spec?: Record<string, unknown> } {
  return { apiVersion: AppKindCrd.apiVersionOf(kind), kind: kind.kind, metadata: { name, namespace }, ...(spec ? { spec } : {}) };
}

/** Whether the CR `cr` reports `size` nodes and Degraded False: its spec applied, and nothing wrong found. */
export async function crConverged(rest: RestClient, cr: KubernetesObject, size: number): Promise<boolean> {
  const status = (await rest.get<KubernetesObject & { status?: { nodes?: string[]; conditions?: { type: string; status: string }[] } }>(cr))?.status;
  return status?.nodes?.length === size && status.conditions?.find((c) => c.type === 'Degraded')?.status === 'False';
}

/**
 * A Deployment named `name` that no CR owns (someone else's, with none of our labels), scaled to 0:
 * a CR whose Deployment would have this name must neither adopt nor overwrite it.
 */
export function foreignDeployment(namespace: string, name: string): V1Deployment & KubernetesObject {
  const app = name.replace(/-deployment$/, '');
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace },
    spec: {
      replicas: 0, selector: { matchLabels: { app } },
      template: { metadata: { labels: { app } }, spec: { containers: [{ name: 'c', image: FOREIGN_IMAGE }] } },
    },
  };
}

/** The image of foreignDeployment()'s Deployments. */
export const FOREIGN_IMAGE = 'example.com/theirs:1';

/**
 * Waits until nothing of an install is left: none of `objects`, no Deployment, Service or pod in the
 * apps' `namespace`, no ClusterRole of the project; fails naming what is still there.
 */
export async function nothingLeft(what: string, rest: RestClient, objects: KubernetesObject[], namespace: string, timeoutMs = 240_000): Promise<void> {
  const left = async () => {
    const found: string[] = [];
    for (const obj of objects) if (await rest.get(obj)) found.push(`${obj.kind} ${obj.metadata!.name}`);
    for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['v1', 'Pod']] as const) {
      const items = (await rest.list<KubernetesObject>(apiVersion, kind, namespace)).items;
      found.push(...items.map((o) => `${kind} ${namespace}/${o.metadata!.name}`));
    }
    const roles = (await rest.list<KubernetesObject>('rbac.authorization.k8s.io/v1', 'ClusterRole', undefined, 'app.kubernetes.io/part-of=cdk8s-appkind')).items;
    found.push(...roles.map((r) => `ClusterRole ${r.metadata!.name}`));
    return found;
  };
  await eventually(what, async () => (await left()).length === 0, timeoutMs).catch(async (e: Error) => {
    throw new Error(`${e.message}; left: ${(await left()).join(', ')}`);
  });
}
