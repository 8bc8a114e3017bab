// Finds the control-plane binaries: explicit assets first (envtest convention), then the build cache,
// then a build from the pinned Go modules (tools/controlplane/build.sh).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REQUIRED_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const;
/** The real node's binaries (`ControlPlane.start({ realNode: true })`), optional like kube-scheduler and kwok. */
export const NODE_BINARIES = [
  'kubelet',
  'kube-proxy',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'crictl',
  'pause',
  'bridge',
  'host-local',
  'loopback',
  'portmap',
] as const;
export const OPTIONAL_BINARIES = ['kube-scheduler', 'kwok', ...NODE_BINARIES] as const;
export type RequiredBinary = (typeof REQUIRED_BINARIES)[number];
export type NodeBinary = (typeof NODE_BINARIES)[number];
export type OptionalBinary = (typeof OPTIONAL_BINARIES)[number];
export type BinaryName = RequiredBinary | OptionalBinary;

export type Binaries = {
  etcd: string;
  'kube-apiserver': string;
  'kube-controller-manager': string;
  /** Absent when it could not be found or built: pods then stay Pending. */
  'kube-scheduler'?: string;
  kwok?: string;
  /** Where the binaries came from ('env' or the cache folder), for diagnostics. */
  source: string;
} & Partial<Record<NodeBinary, string>>;

const here = dirname(fileURLToPath(import.meta.url));
const buildScript = join(here, 'build.sh');

/** `kube-apiserver` -> `TEST_ASSET_KUBE_APISERVER` (controller-runtime envtest naming). */
export function assetEnvName(name: BinaryName): string {
  return `TEST_ASSET_${name.toUpperCase().replace(/-/g, '_')}`;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** TEST_ASSET_<NAME> wins over KUBEBUILDER_ASSETS/<name>; a set but broken TEST_ASSET_ is an error. */
function fromEnv(name: BinaryName, env: NodeJS.ProcessEnv): string | undefined {
  const explicit = env[assetEnvName(name)];
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`controlplane: ${assetEnvName(name)}=${explicit} is not an executable file`);
    return explicit;
  }
  const folder = env.KUBEBUILDER_ASSETS;
  if (folder && isExecutable(join(folder, name))) return join(folder, name);
  return undefined;
}

/** Same folder build.sh computes: keyed by the k8s version and a hash of the pinned module sums. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const files = ['k8s/go.sum', 'k8s/cmd/etcd/main.go', 'node/go.sum', 'node/cmd/pause/main.go', 'build.sh'].map((f) => readFileSync(join(here, f)));
  const key = createHash('sha256').update(Buffer.concat(files)).digest('hex').slice(0, 12);
  const goMod = readFileSync(join(here, 'k8s/go.mod'), 'utf8');
  const version = /k8s\.io\/kubernetes (v\S+)/.exec(goMod)?.[1] ?? 'unknown';
  const base = env.APPKIND_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'appkind');
  return join(base, 'controlplane', `${version}-${key}`);
}

function collect(lookup: (name: BinaryName) => string | undefined, source: string): Binaries | undefined {
  const [etcd, apiserver, kcm] = REQUIRED_BINARIES.map(lookup);
  if (!etcd || !apiserver || !kcm) return undefined;
  const result: Binaries = { etcd, 'kube-apiserver': apiserver, 'kube-controller-manager': kcm, source };
  for (const name of OPTIONAL_BINARIES) {
    const path = lookup(name);
    if (path) result[name] = path;
  }
  return result;
}

/** An explicit asset for that binary, else the file in `folder` if it is there. */
function lookupIn(folder: string, env: NodeJS.ProcessEnv): (name: BinaryName) => string | undefined {
  return (name) => fromEnv(name, env) ?? (isExecutable(join(folder, name)) ? join(folder, name) : undefined);
}

/** build.sh marks a finished run, so a binary that failed to build is not retried on every start. */
function cacheComplete(dir: string): boolean {
  return existsSync(join(dir, '.complete'));
}

function hasGo(): boolean {
  return !spawnSync('go', ['version'], { stdio: 'ignore' }).error;
}

function noBinariesMessage(cache: string): string {
  return [
    'controlplane: no control-plane binaries and no Go toolchain to build them.',
    `  Install Go >= 1.26 (https://go.dev/doc/install) so they are built once into ${cache},`,
    '  or set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver and kube-controller-manager',
    '  (optionally kube-scheduler and kwok), or TEST_ASSET_<NAME> per binary.',
  ].join('\n');
}

/**
 * Runs build.sh; the last stdout line is the cache folder. On a terminal its stderr goes straight to
 * it, so the progress bar works; otherwise each stderr line goes to `log` (a line every ~15 s).
 */
function runBuild(log: (line: string) => void, tty: boolean, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [buildScript], { env, stdio: ['ignore', 'pipe', tty ? 'inherit' : 'pipe'] });
    let stdout = '';
    let stderrTail = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stderrTail = (stderrTail + text).slice(-4000);
      for (const line of text.split('\n')) if (line.trim()) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const lines = stdout.trim().split('\n');
      if (code === 0 && lines.length > 0) resolve(lines[lines.length - 1].trim());
      else reject(new Error(`controlplane: ${buildScript} failed (exit ${code})${tty ? ' (its output is above)' : `:\n${stderrTail}`}`));
    });
  });
}

export interface ResolveOptions {
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  /** Let a build write straight to this process's stderr (default: when that is a terminal). */
  tty?: boolean;
}

export async function resolveBinaries(opts: ResolveOptions = {}): Promise<Binaries> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const explicit = collect((name) => fromEnv(name, env), 'env');
  if (explicit) return explicit;
  const cache = cacheDir(env);
  const cached = cacheComplete(cache) ? collect(lookupIn(cache, env), cache) : undefined;
  if (cached) return cached;
  if (!hasGo()) throw new Error(noBinariesMessage(cache));
  const built = await runBuild(log, opts.tty ?? process.stderr.isTTY === true, env);
  const result = collect(lookupIn(built, env), built);
  if (!result) throw new Error(`controlplane: build.sh finished but ${built} lacks ${REQUIRED_BINARIES.join(', ')}`);
  return result;
}
