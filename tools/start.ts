// `npm start`: a real control plane on loopback, the CRDs of the configured kinds (the six
// walkthrough variables, APPKIND_CONFIG, or the sample kind) and of the AppKind API, and the operator
// serving them and every AppKind applied.
// `npm start -- --real-node`: a real node (containerd, kubelet, kube-proxy) instead of kwok's fake
// one, with the echo stand-in for the sample kind's image loaded (root and Linux; see
// tools/controlplane/README.md), and metrics-server for HorizontalPodAutoscalers (docs/autoscaling.md).
// Prints exactly one line on stdout, `export KUBECONFIG=<path>`, once ready (diagnostics and the
// operator's JSON logs go to stderr) and runs until SIGINT/SIGTERM, then stops everything.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { crdObjects } from 'appkind-operator/kinds';
import { ConfigError, loadAppKinds } from 'appkind-operator/kinds';
import { prefixed } from 'appkind-operator/settings';
import { AppKindApiCrd, type AppKind } from 'cdk8s-appkind';
import { App, Chart } from 'cdk8s';
import type { KubernetesObject } from '@kubernetes/client-node';
import { applyManifests } from './controlplane/apply.js';
import { loadEchoStandIn } from './echo-image.js';
import { ControlPlane, killWithThisProcess, RealNodeUnavailableError } from './controlplane/controlplane.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const logToStderr = (line: string): void => void process.stderr.write(`${line}\n`);

export interface StartLocalOptions {
  /** Default: APPKIND_AUDIT_LOG=1 */
  auditLog?: boolean;
  /** Kinds whose CRDs are installed. Default: the configured kinds (loadAppKinds) */
  kinds?: AppKind[];
  log?: (line: string) => void;
  /** A real node instead of kwok's fake node, with metrics-server. Default false. */
  realNode?: boolean;
}

/** The AppKind API's CRD: AppKinds applied to the local control plane are served. */
function appKindApiCrd(): KubernetesObject {
  const chart = new Chart(new App(), 'appkind-api');
  new AppKindApiCrd(chart, 'api');
  return chart.toJson()[0] as KubernetesObject;
}

/** Control plane + the kinds' CRDs and the AppKind API's CRD applied (Established). The caller owns stop(). */
export async function startLocal(opts: StartLocalOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? logToStderr;
  const kinds = opts.kinds ?? loadAppKinds(process.env);
  // The real node also runs metrics-server, so `kubectl top` and HorizontalPodAutoscalers work (docs/autoscaling.md).
  const cp = await ControlPlane.start({ auditLog: opts.auditLog ?? process.env.APPKIND_AUDIT_LOG === '1', log, realNode: opts.realNode, metricsServer: opts.realNode });
  try {
    await applyManifests(cp.kubeConfig(), [...crdObjects(kinds), appKindApiCrd()]);
    log(`controlplane: installed CRDs for ${kinds.map((k) => `${k.kind}.${k.group}`).join(', ')} and the AppKind API (${AppKindApiCrd.CRD_NAME})`);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  return cp;
}

function freePortsUnlessSet(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of ['METRICS_PORT', 'HEALTH_PORT'] as const) if (!out[name] && !out[prefixed(name)]) out[prefixed(name)] = '0';
  return out;
}

/**
 * The operator as `npm run operator` runs it, against the local control plane; its JSON logs go to
 * stderr. Resolves once it reconciles (its "workers started" line).
 */
function startOperator(kubeconfigPath: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'operator', 'main.ts')], {
    cwd: repoRoot,
    // Free ports unless set (an unprefixed METRICS_PORT/HEALTH_PORT is read as the APPKIND_ one, deprecated).
    env: { ...freePortsUnlessSet(process.env), KUBECONFIG: kubeconfigPath },
    stdio: ['ignore', 'pipe', process.stderr],
  });
  // Dies with us even on SIGKILL, like the control plane's own processes.
  killWithThisProcess(child);
  return new Promise((resolveStarted, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      process.stderr.write(`${line}\n`);
      if (line.includes('"msg":"workers started"')) resolveStarted(child);
    });
    child.on('exit', (code, signal) => {
      if (!stopping) logToStderr(`operator: exited (code ${code}, signal ${signal}); the control plane keeps running`);
      reject(new Error(`operator exited before it started (code ${code}); see its log lines above`));
    });
  });
}
let stopping = false;

async function stopOperator(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  await exited;
}

function untilSignal(): Promise<NodeJS.Signals> {
  // A pending promise alone does not keep Node alive; the timer does until a signal arrives.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  return new Promise((resolveSignal) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      clearInterval(keepAlive);
      resolveSignal(signal);
    };
    // Kept installed (not `once`): a later Ctrl+C must not kill us mid-stop with the default action.
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

const USAGE = 'usage: npm start [-- --real-node]';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const unknown = args.filter((arg) => arg !== '--real-node');
  if (unknown.length) throw new ConfigError(`unknown argument ${unknown.join(' ')}; ${USAGE}`);
  const realNode = args.includes('--real-node');
  const stopped = untilSignal();
  const kinds = loadAppKinds(process.env);
  const cp = await startLocal({ kinds, realNode });
  let operator: ChildProcess;
  try {
    if (realNode) await loadEchoStandIn(cp, logToStderr);
    operator = await startOperator(cp.kubeconfigPath);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  if (cp.auditLogPath) logToStderr(`controlplane: audit log ${cp.auditLogPath}`);
  logToStderr(`controlplane: ${cp.realNode ? `pods run on the real node ${cp.realNode.name} (${cp.realNode.address})` : cp.hasScheduler ? 'pods run on fake node kwok-node-0' : 'no scheduler: pods stay Pending'}`);
  process.stdout.write(`export KUBECONFIG=${cp.kubeconfigPath}\n`);
  const signal = await stopped;
  logToStderr(`controlplane: ${signal}, stopping`);
  stopping = true;
  await stopOperator(operator);
  await cp.stop();
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      const known = err instanceof ConfigError || err instanceof RealNodeUnavailableError;
      logToStderr(known ? `npm start: ${err.message}` : err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exit(1);
    },
  );
}
