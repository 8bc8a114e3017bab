/**
 * What both benchmarks do before starting the operator on a fresh control plane: the kind's CRD and
 * the bundle's RBAC (no operator Deployment: the bench runs the operator as a local process under its
 * ServiceAccount's identity), the CRs' namespace, and the operator's environment.
 */
import { type KubernetesObject } from '@kubernetes/client-node';
import { type ChildProcess, spawn } from 'node:child_process';
import { App, Chart } from 'cdk8s';
import { OperatorBundle } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { crdObjects } from 'appkind-operator/kinds';
import { RestClient } from 'appkind-operator/runtime';
import { applyManifests } from '../tools/controlplane/apply.js';
import { type ControlPlane } from '../tools/controlplane/controlplane.js';
import { freePort } from '../tools/controlplane/ports.js';
import { httpGet, waitFor } from '../tools/controlplane/readiness.js';
import { buildOperatorBundle } from '../scripts/build-operator.js';

export const NS = 'bench';
export const OPERATOR_NS = 'appkind-system';
export const kind = SAMPLE_KIND;
/**
 * The Node options the operator runs with, as the image sets them (Dockerfile, ENV NODE_OPTIONS) and
 * `npm run operator` passes them (package.json): V8's young generation at most 2 x 4 MiB.
 */
export const OPERATOR_NODE_OPTIONS = '--max-semi-space-size=4';

/**
 * Builds the operator as the image runs it (build/operator/main.js, one file bundled by esbuild:
 * scripts/build-operator.ts) and returns its path; tsx would add its own memory to the figures.
 */
export async function buildOperator(): Promise<string> {
  await buildOperatorBundle();
  return OPERATOR_MAIN;
}

/** The operator's entry point as the image runs it (`npm run build`). */
export const OPERATOR_MAIN = new URL('../build/operator/main.js', import.meta.url).pathname;

export interface OperatorSetup {
  readonly rest: RestClient;
  /** Metrics and health port of the operator process. */
  readonly port: number;
  /** The operator's environment: its ServiceAccount's kubeconfig, the port, APPKIND_LOG_LEVEL=warn. */
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Resolves once kube-controller-manager's garbage collector watches the kind's CRs, as it long has in
 * a cluster whose CRD was installed before its apps. It picks up a new resource type at its next
 * discovery sync (every 30 s); until then every child owned by a CR sends it to the API server for
 * the owner (hundreds of GETs of CRs at N=1000, measured), which would be charged to the operator's
 * run. Probe: a CR deleted in the foreground keeps its foregroundDeletion finalizer until the
 * garbage collector, watching the kind, removes it. No operator runs yet, so the probe has no children.
 */
async function garbageCollectorWatches(rest: RestClient): Promise<void> {
  const probe = { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name: 'bench-gc-probe', namespace: NS }, spec: { size: 0 } };
  const started = performance.now();
  await rest.apply(probe, 'bench');
  const path = await rest.path(probe.apiVersion, probe.kind, NS, probe.metadata.name);
  await rest.request('DELETE', path, { body: { propagationPolicy: 'Foreground' } });
  await waitFor(`the garbage collector watching ${kind.plural}`, async () => !(await rest.get(probe)), { timeoutMs: 120_000 });
  process.stderr.write(`bench: the garbage collector watches ${kind.plural} (probe gone after ${Math.round((performance.now() - started) / 100) / 10} s)\n`);
}

/**
 * The kind's CRD and the operator's bundle (its Deployment left out) on `cp`. `admitted`: images the
 * bundle's admission policy lets the operator's Deployments run besides the kind's own (the rollout
 * phase's new image: during a rollout both the old and the new image must be admitted).
 */
export async function setUpOperator(cp: ControlPlane, admitted: string[] = []): Promise<OperatorSetup> {
  const kc = cp.kubeConfig();
  const rest = new RestClient(kc);
  const chart = new Chart(new App(), 'bundle');
  const allowedImages = [...(kind.allowedImages ?? []), ...admitted];
  new OperatorBundle(chart, 'op', { kinds: [allowedImages.length ? { ...kind, allowedImages } : kind], namespace: OPERATOR_NS, crds: false });
  await applyManifests(kc, [...crdObjects([kind]), ...(chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment')]);
  await rest.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, 'bench');
  await garbageCollectorWatches(rest);
  const kubeconfig = await cp.serviceAccountKubeconfig(OPERATOR_NS, 'appkind-operator');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig, APPKIND_METRICS_PORT: String(port), APPKIND_HEALTH_PORT: String(port), APPKIND_METRICS_SECURE: 'false', APPKIND_LOG_LEVEL: 'warn', NODE_OPTIONS: OPERATOR_NODE_OPTIONS };
  return { rest, port, env };
}

/** A compiled operator running as a local process on the bench's control plane. */
export interface LocalOperator {
  readonly child: ChildProcess;
  /** Sends SIGTERM; resolves with its exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawns the compiled operator `main` with Node `flags` in `setup`'s environment, its output passed
 * through; resolves once its /readyz answers 200 (stopped again if it never does).
 */
export async function spawnOperator(main: string, flags: string[], { port, env }: OperatorSetup): Promise<LocalOperator> {
  const child = spawn(process.execPath, [...flags, main], { cwd: new URL('..', import.meta.url).pathname, env, stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const stop = () => {
    child.kill('SIGTERM');
    return exited;
  };
  try {
    await waitFor('operator ready', async () => (await httpGet(`http://127.0.0.1:${port}/readyz`).catch(() => ({ status: 0 }))).status === 200, {
      timeoutMs: 120_000,
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { child, stop };
}
