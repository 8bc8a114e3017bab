// Runs the operator as its own process, authenticated as a ServiceAccount whose RBAC comes from the
// OperatorBundle construct, exactly as an in-cluster install would be, and reads its JSON logs.
import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { ChildProcess, spawn } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { AppKind, OperatorBundle } from 'cdk8s-appkind';
import { crdObjects } from '../../operator/kinds/crd-yaml.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { RestClient } from '../../operator/runtime/rest.js';
import type { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { createTestNamespace, readSharedAuditLog, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';

const root = join(import.meta.dirname, '..', '..');
export const OPERATOR_SA = 'appkind-operator';

export interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly key?: string;
  readonly [field: string]: unknown;
}

/**
 * Reviews are `create` requests that persist nothing: the API server answers a TokenReview or a
 * SubjectAccessReview and stores no object. The operator makes them to authorize /metrics scrapes
 * (operator/runtime/metrics-auth.ts, cached for minutes), so they are not counted as writes.
 */
const REVIEWS = new Set(['tokenreviews', 'subjectaccessreviews']);

/** The write requests (`verb URI`) the operator of namespace `ns` sent after `since` (ISO time), from the audit log; reviews left out. */
export async function operatorWritesSince(ns: string, since: string): Promise<string[]> {
  return (await readSharedAuditLog())
    .filter((e) => e.user.username === `system:serviceaccount:${ns}:${OPERATOR_SA}` &&
      ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb) && e.stageTimestamp > since &&
      !REVIEWS.has(e.objectRef?.resource ?? ''))
    .map((e) => `${e.verb} ${e.requestURI}`);
}

/** Nothing written by the operator of namespace `ns` for `ms` after things settled. */
export async function expectNoOperatorWrites(ns: string, ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, 3_000)); // let the last write land in the log
  const since = new Date().toISOString();
  await new Promise((r) => setTimeout(r, ms));
  if ((await operatorWritesSince(ns, since)).length > 0) throw new Error(`the operator wrote in steady state: ${(await operatorWritesSince(ns, since)).join(', ')}`);
}

/** Installs the CRDs of the kinds (idempotent: several test files share the cluster). */
export async function installCrds(kc: KubeConfig, kinds: AppKind[]): Promise<void> {
  await applyManifests(kc, crdObjects(kinds));
}

/**
 * The bundle's ServiceAccount and RBAC for watching one namespace (the operator Deployment left out).
 * Not its admission policies, nor the ClusterRoleBinding of its metrics reviews: they are cluster-scoped
 * and named after the operator, so test files sharing the cluster would replace each other's
 * (admission-policy.test.ts and metrics-auth.test.ts install them under a name of their own).
 */
export async function installOperatorIdentity(kc: KubeConfig, kinds: AppKind[], namespace: string): Promise<void> {
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds, namespace, createNamespace: false, crds: false, watchNamespaces: [namespace], admissionPolicy: false });
  const objects = (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment' && o.kind !== 'ClusterRoleBinding');
  await applyManifests(kc, objects);
}

/**
 * On a control plane of a test's own: the whole bundle but the operator Deployment (the kinds' CRDs and
 * the AppKind API's, RBAC with its cluster-wide bindings, the admission policies) for an operator in
 * and watching `namespace`, AppKinds allowed the API groups `kindGroups`.
 */
export async function installOperatorBundle(kc: KubeConfig, kinds: AppKind[], namespace: string, kindGroups: string[]): Promise<void> {
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds, namespace, createNamespace: false, watchNamespaces: [namespace], kindGroups });
  await applyManifests(kc, (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment'));
}

/**
 * The rights of a cluster-wide install whose AppKinds may declare kinds in `kindGroups`, for the
 * operator of `namespace` (it still watches that namespace alone): CRDs in those groups, AppKinds, and
 * the groups' CRs in every namespace (a storage migration lists and writes back all of them). The
 * bundle's ClusterRoles are copied under names of the namespace and bound to its ServiceAccount, since
 * the bundle's own names are shared by every test file on the cluster.
 */
export async function installAppKindRights(kc: KubeConfig, kinds: AppKind[], namespace: string, kindGroups: string[]): Promise<void> {
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds, namespace, createNamespace: false, crds: false, admissionPolicy: false, kindGroups });
  const objects = chart.toJson() as (KubernetesObject & { roleRef?: { name: string } })[];
  const bound = new Set(objects.filter((o) => o.kind === 'ClusterRoleBinding').map((b) => b.roleRef!.name));
  const copies = objects.filter((o) => o.kind === 'ClusterRole' && bound.has(o.metadata!.name!)).flatMap((role) => {
    const name = `${namespace}-${role.metadata!.name!}`;
    return [
      { ...role, metadata: { ...role.metadata, name } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name: OPERATOR_SA, namespace }],
      },
    ];
  });
  await applyManifests(kc, copies);
}

/** The label that gives an AppKind to the test file whose namespace it names: that file's operator serves it. */
export const TEST_NAMESPACE_LABEL = 'appkind.io/test-namespace';

/** Labels of an AppKind served by the operator of namespace `ns` (with servesAppKindsOf(ns)). */
export const appKindLabels = (ns: string): Record<string, string> => ({ [TEST_NAMESPACE_LABEL]: ns });

/** An operator's env to serve the AppKinds labelled appKindLabels(ns) and no other test file's. */
export const servesAppKindsOf = (ns: string): Record<string, string> => ({ APPKIND_APPKIND_SELECTOR: `${TEST_NAMESPACE_LABEL}=${ns}` });

/** Whether `kubeconfig` is one of the shared control plane's (sharedServiceAccountKubeconfig writes them into its folder). */
const onSharedControlPlane = (kubeconfig: string | undefined): boolean => {
  const dir = process.env.APPKIND_TEST_CONTROLPLANE_DIR;
  return !!dir && !!kubeconfig && kubeconfig.startsWith(`${dir}/`);
};

/** The admin's clients and a namespace an operator may serve. */
export interface OperatorNamespace {
  readonly kc: KubeConfig;
  readonly rest: RestClient;
  readonly ns: string;
}

/** What an operator test works with: the admin's clients, its own namespace and an operator serving it. */
export interface OperatorTest extends OperatorNamespace {
  readonly operator: OperatorProcess;
}

/**
 * A fresh namespace (`prefix`-...) with the kinds' CRDs and the bundle's ServiceAccount and RBAC for
 * it, for a test that starts its operator itself (later, or more than once).
 */
export async function prepareOperatorNamespace(prefix: string, kinds: AppKind[]): Promise<OperatorNamespace> {
  const kc = sharedCluster().kubeConfig;
  const ns = await createTestNamespace(kc, prefix);
  await installCrds(kc, kinds);
  await installOperatorIdentity(kc, kinds, ns);
  return { kc, rest: new RestClient(kc), ns };
}

/** prepareOperatorNamespace(), and an operator process serving it as its ServiceAccount with `env`. */
export async function startOperatorTest(prefix: string, kinds: AppKind[], env: Record<string, string> = {}): Promise<OperatorTest> {
  const prepared = await prepareOperatorNamespace(prefix, kinds);
  return { ...prepared, operator: await OperatorProcess.start(prepared.ns, env) };
}

/**
 * On a control plane of a test's own: the kinds' CRDs, the bundle's ServiceAccount and RBAC for
 * `namespace`, and an operator process serving it as that ServiceAccount with `env`.
 */
export async function startOperatorOn(cp: Pick<ControlPlane, 'kubeConfig' | 'serviceAccountKubeconfig'>, namespace: string, kinds: AppKind[], env: Record<string, string>): Promise<OperatorProcess> {
  const kc = cp.kubeConfig();
  await installCrds(kc, kinds);
  await installOperatorIdentity(kc, kinds, namespace);
  const kubeconfig = await cp.serviceAccountKubeconfig(namespace, OPERATOR_SA);
  return OperatorProcess.spawn({ kubeconfig, env: { APPKIND_WATCH_NAMESPACE: namespace, ...env } });
}

export class OperatorProcess {
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  private readonly exit: Promise<number | null>;

  private constructor(readonly child: ChildProcess) {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        try {
          this.logs.push(JSON.parse(line) as LogLine);
        } catch {
          this.stderr.push(`non-JSON stdout: ${line}`);
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString('utf8')));
    // 'close', not 'exit': by then stdout is drained, so the last log lines ("stopped") are in `logs`.
    this.exit = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  }

  /** Starts `operator/main.ts` as a ServiceAccount of `namespace` with the given environment. */
  static async start(namespace: string, env: Record<string, string>): Promise<OperatorProcess> {
    const kubeconfig = await sharedServiceAccountKubeconfig(namespace, OPERATOR_SA);
    return OperatorProcess.spawn({ kubeconfig, env: { APPKIND_WATCH_NAMESPACE: namespace, ...env } });
  }

  /**
   * Starts `operator/main.ts` with only `kubeconfig` as credentials (the parent's environment is not
   * inherited) and resolves once a log line matches `until` (default: caches synced, which a standby
   * replica reaches too; "operator starting" for a process whose caches cannot sync yet).
   */
  static async spawn(opts: {
    /** Credentials; leave out to have the operator load its in-cluster config. */
    kubeconfig?: string;
    env: Record<string, string>;
    until?: (line: LogLine) => boolean;
    timeoutMs?: number;
    /** A command the operator's `node` command line is appended to (e.g. a mount-namespace wrapper). */
    prefix?: string[];
    /** The whole command line instead of the operator's sources under tsx (e.g. `podman run ... IMAGE`). */
    command?: string[];
  }): Promise<OperatorProcess> {
    const argv = opts.command ?? [...(opts.prefix ?? []), process.execPath, '--import', 'tsx', join(root, 'operator', 'main.ts')];
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: root,
      env: {
        PATH: process.env.PATH, HOME: process.env.HOME, ...(opts.kubeconfig ? { KUBECONFIG: opts.kubeconfig } : {}),
        // Plain HTTP /metrics on loopback, so tests read the metrics without a token of their own (and
        // without the TokenReview a scrape costs); metrics-auth.test.ts sets APPKIND_METRICS_SECURE=true.
        APPKIND_METRICS_PORT: '0', APPKIND_HEALTH_PORT: '0', APPKIND_METRICS_SECURE: 'false', APPKIND_LOG_LEVEL: 'debug',
        // Test files run their operators side by side on the shared control plane, where AppKinds are
        // cluster-wide: there an operator serves none unless its test names its own (servesAppKindsOf).
        // On a control plane of a test's own it keeps an install's default, every AppKind.
        ...(onSharedControlPlane(opts.kubeconfig) ? { APPKIND_APPKIND_SELECTOR: 'none' } : {}),
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const op = new OperatorProcess(child);
    try {
      await op.waitForLog(opts.until ?? ((l) => l.msg === 'workers started' || l.msg === 'caches synced'), opts.timeoutMs ?? 60_000);
    } catch (e) {
      child.kill('SIGKILL');
      throw e;
    }
    return op;
  }

  /** Resolves with the first log line matching, failing after timeoutMs with the process output. */
  async waitForLog(match: (line: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const found = this.logs.find(match);
      if (found) return found;
      if (this.exited) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`operator log line not seen (exit code ${this.child.exitCode}); stderr:\n${this.stderr.join('')}\nlast logs:\n${this.logs.slice(-20).map((l) => JSON.stringify(l)).join('\n')}`);
  }

  /** Port of /metrics (and /healthz, /readyz when both use port 0 they differ; see `healthPort`). */
  get ports(): { metrics?: number; health?: number } {
    const start = this.logs.find((l) => l.msg === 'operator starting');
    return { metrics: start?.metricsPort as number | undefined, health: start?.healthPort as number | undefined };
  }

  /** Milliseconds since the epoch of a line's `ts`. */
  static timeOf(line: LogLine): number {
    return Date.parse(line.ts as string);
  }

  /** GET on the operator's HTTP port (one port serves /metrics, /healthz and /readyz when both are 0). */
  async http(path: '/metrics' | '/healthz' | '/readyz'): Promise<{ status: number; body: string }> {
    const port = path === '/metrics' ? this.ports.metrics : this.ports.health;
    if (!port) throw new Error(`operator has no port for ${path} (no "operator starting" line yet)`);
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, body: await res.text() };
  }

  /** Sum of the samples of a metric whose labels include `labels`, from /metrics. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    return metricValue((await this.http('/metrics')).body, name, labels);
  }

  /** Whether the process has exited (by itself or by a signal). */
  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Resolves with the exit code once the process has exited (and its output is drained). */
  exitCode(): Promise<number | null> {
    return this.exit;
  }

  /** Sends a signal and resolves with the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (!this.exited) this.child.kill(signal);
    return this.exit;
  }
}

/** Sum of the samples of `name` in a Prometheus text exposition whose labels include `labels` (0 if none). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/**
 * GET over HTTPS with `token` as the bearer token, as a scraper sends it; the operator's self-signed
 * certificate is not verified, and each request has a connection of its own.
 */
export function httpsGet(host: string, port: number, path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host, port, path, method: 'GET', agent: false, rejectUnauthorized: false, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
