// The controller-runtime (Go) reference operator of `npm run bench -- --go` (bench/go-operator/):
// built once per source hash into ~/.cache/appkind/go-operator/<hash>/, started as its own process,
// and checked to apply the very objects render() gives.
import { type KubernetesObject } from '@kubernetes/client-node';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type AppKind } from 'cdk8s-appkind';
import { render, type AppResource, type KubeObject } from 'appkind-operator/kinds';
import { APPLY_PATCH, type RestClient } from 'appkind-operator/runtime';
import { httpGet, waitFor } from '../tools/controlplane/readiness.js';

const source = join(import.meta.dirname, 'go-operator');
/** Its server-side apply field manager (the binary's default). */
export const GO_FIELD_MANAGER = 'appkind-go-operator';

/** Where the binary for these sources lives: a hash of go.mod, go.sum and every .go file. */
export function goOperatorPath(env: NodeJS.ProcessEnv = process.env): string {
  const files = readdirSync(source).filter((f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go')).sort();
  const hash = createHash('sha256');
  for (const f of files) hash.update(`${f}\0`).update(readFileSync(join(source, f))).update('\0');
  const base = env.APPKIND_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'appkind');
  return join(base, 'go-operator', hash.digest('hex').slice(0, 12), 'go-operator');
}

/** The cached binary, built first when these sources have none yet (needs Go >= 1.26 only then). */
export function goOperatorBinary(log: (line: string) => void): string {
  const binary = goOperatorPath();
  if (existsSync(binary)) return binary;
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).error) {
    throw new Error(`bench --go: no Go toolchain to build ${source} into ${binary}; install Go >= 1.26 or drop --go`);
  }
  const dir = join(binary, '..');
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.partial-${process.pid}`;
  log(`bench: building the Go reference operator into ${binary}`);
  const built = spawnSync('go', ['build', '-trimpath', '-o', partial, '.'], {
    cwd: source, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' },
  });
  if (built.status !== 0) {
    rmSync(partial, { force: true });
    throw new Error(`bench --go: go build in ${source} failed (exit ${built.status})`);
  }
  // A rename is atomic: a concurrent run sees no binary or a whole one.
  renameSync(partial, binary);
  return binary;
}

export interface GoOperatorProcess {
  readonly pid: number;
  readonly metricsPort: number;
  stop(): Promise<number | null>;
}

/** Starts the Go operator for `kind` with the environment's KUBECONFIG; resolves once /readyz passes (caches synced). */
export async function startGoOperator(binary: string, kind: AppKind, env: NodeJS.ProcessEnv, ports: { metrics: number; health: number }): Promise<GoOperatorProcess> {
  const args = [
    `--group=${kind.group}`, `--version=${kind.version}`, `--kind=${kind.kind}`, `--plural=${kind.plural}`,
    `--image=${kind.image}`, `--port=${kind.port}`, `--app-name=${kind.appName ?? kind.kind.toLowerCase()}`,
    `--metrics-bind-address=127.0.0.1:${ports.metrics}`, `--health-probe-bind-address=127.0.0.1:${ports.health}`,
    '--workers=4', `--field-manager=${GO_FIELD_MANAGER}`, '--zap-log-level=error',
  ];
  const child = spawn(binary, args, { env, stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const stop = async () => {
    child.kill('SIGTERM');
    return exited;
  };
  try {
    let ready = false;
    await Promise.race([
      waitFor('Go operator ready', async () => (await httpGet(`http://127.0.0.1:${ports.health}/readyz`).catch(() => ({ status: 0 }))).status === 200, { timeoutMs: 120_000 })
        .finally(() => (ready = true)),
      exited.then((code) => {
        if (!ready) throw new Error(`bench --go: the Go operator exited with ${code} before it was ready (its output is above)`);
      }),
    ]);
  } catch (e) {
    await stop();
    throw e;
  }
  return { pid: child.pid!, metricsPort: ports.metrics, stop };
}

type Json = unknown;

/**
 * Paths where `want` (every field it has) differs from `have`; arrays must match element by element.
 * `zeroIsAbsent`: `want` is rendered, `have` the API server's answer, which leaves out a 0, false or
 * "" that a non-pointer field of a Go object holds (minReadySeconds: 0, hostNetwork: false).
 */
function subsetDiff(want: Json, have: Json, path: string, out: string[], zeroIsAbsent = false): void {
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    if (have === null || typeof have !== 'object' || Array.isArray(have)) {
      out.push(`${path}: ${JSON.stringify(have)} instead of an object`);
      return;
    }
    for (const [k, v] of Object.entries(want)) subsetDiff(v, (have as Record<string, Json>)[k], `${path}.${k}`, out, zeroIsAbsent);
  } else if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) {
      out.push(`${path}: ${JSON.stringify(have)} instead of ${JSON.stringify(want)}`);
      return;
    }
    want.forEach((v, i) => subsetDiff(v, have[i], `${path}[${i}]`, out, zeroIsAbsent));
  } else if (want !== have && !(zeroIsAbsent && have === undefined && (want === 0 || want === false || want === ''))) {
    out.push(`${path}: ${JSON.stringify(have)} instead of ${JSON.stringify(want)}`);
  }
}

/** Paths where two objects differ in either direction. */
function diff(a: Json, b: Json, path: string): string[] {
  const out: string[] = [];
  subsetDiff(a, b, path, out);
  subsetDiff(b, a, path, out);
  return [...new Set(out)];
}

const objectPath = (o: KubeObject) =>
  `${o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`}/namespaces/${o.metadata.namespace}/${o.kind.toLowerCase()}s/${o.metadata.name}`;

/**
 * Throws unless the Go operator's children of `cr` are the objects render() gives (with the CR as
 * controller owner), field by field, both ways:
 * - every field render() sets (spec, labels, ownerReferences) has that value in the live object;
 * - nothing else is the Go operator's: render()'s object server-side applied as a dry run under the
 *   Go operator's field manager changes nothing (a field the Go operator set that render() lacks
 *   would be released, and one with another value changed), in spec, labels or ownerReferences.
 */
export async function checkSameChildren(rest: RestClient, kind: AppKind, cr: AppResource & KubernetesObject): Promise<void> {
  const owner = { apiVersion: cr.apiVersion, kind: cr.kind, name: cr.metadata.name, uid: cr.metadata.uid!, controller: true, blockOwnerDeletion: true };
  const problems: string[] = [];
  for (const rendered of render(kind, cr)) {
    const want = { ...rendered, metadata: { ...rendered.metadata, namespace: cr.metadata.namespace, ownerReferences: [owner] } } as KubeObject;
    const name = `${want.kind} ${want.metadata.namespace}/${want.metadata.name}`;
    const live = await rest.request<Record<string, Json> & { metadata: Record<string, Json> }>('GET', objectPath(want));
    const compared = (o: { metadata: Record<string, Json>; spec?: Json }) => ({ labels: o.metadata.labels, ownerReferences: o.metadata.ownerReferences, spec: o.spec });
    const rest_ = (o: Record<string, Json>) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'metadata' && k !== 'apiVersion' && k !== 'kind'));
    const sub: string[] = [];
    subsetDiff({ labels: want.metadata.labels, ownerReferences: [owner], ...rest_(want) }, { labels: live.metadata.labels, ownerReferences: live.metadata.ownerReferences, ...rest_(live) }, name, sub, true);
    problems.push(...sub);
    const dryRun = await rest.request<Record<string, Json> & { metadata: Record<string, Json> }>('PATCH', objectPath(want), {
      body: want, contentType: APPLY_PATCH, query: { fieldManager: GO_FIELD_MANAGER, force: true, dryRun: 'All' },
    });
    problems.push(...diff(compared(live), compared(dryRun), `${name} (render() applied as the Go operator, dry run)`));
    if (!(live.metadata.managedFields as { manager?: string }[] | undefined)?.some((m) => m.manager === GO_FIELD_MANAGER)) {
      problems.push(`${name}: not applied by ${GO_FIELD_MANAGER}`);
    }
  }
  if (problems.length > 0) {
    throw new Error(`bench --go: the Go operator's children of ${cr.metadata.name} are not the objects render() gives, so the comparison would not be fair:\n  ${problems.join('\n  ')}`);
  }
}
