// Test-file side of the shared control plane that global-setup.ts starts once per jest run.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readAuditLogFile, type AuditEvent } from '../../tools/controlplane/audit.js';
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
