// `npm start`: a real control plane on loopback with the project's CRDs applied, ready for kubectl.
// Prints exactly one line on stdout, `export KUBECONFIG=<path>`, once ready (diagnostics go to
// stderr) and runs until SIGINT/SIGTERM, then stops everything and removes its temp data.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { applyManifests, readManifestDir } from './controlplane/apply.js';
import { ControlPlane } from './controlplane/controlplane.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const logToStderr = (line: string): void => void process.stderr.write(`${line}\n`);

export interface StartLocalOptions {
  /** Default: APPKIND_AUDIT_LOG=1 */
  auditLog?: boolean;
  /** Folder of YAML manifests to apply (CRDs first). Default: <repo>/crd */
  manifestDir?: string;
  log?: (line: string) => void;
}

/** Control plane + every manifest in crd/ applied (CRDs Established). The caller owns stop(). */
export async function startLocal(opts: StartLocalOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? logToStderr;
  const cp = await ControlPlane.start({ auditLog: opts.auditLog ?? process.env.APPKIND_AUDIT_LOG === '1', log });
  try {
    const objects = readManifestDir(opts.manifestDir ?? join(repoRoot, 'crd'));
    await applyManifests(cp.kubeConfig(), objects);
    log(`controlplane: applied ${objects.length} object(s) from crd/`);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  return cp;
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

async function main(): Promise<void> {
  const stopped = untilSignal();
  const cp = await startLocal();
  // operator: started here once operator/ exists
  if (cp.auditLogPath) logToStderr(`controlplane: audit log ${cp.auditLogPath}`);
  logToStderr(`controlplane: ${cp.hasScheduler ? 'pods run on fake node kwok-node-0' : 'no scheduler: pods stay Pending'}`);
  process.stdout.write(`export KUBECONFIG=${cp.kubeconfigPath}\n`);
  const signal = await stopped;
  logToStderr(`controlplane: ${signal}, stopping`);
  await cp.stop();
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      logToStderr(err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exit(1);
    },
  );
}
