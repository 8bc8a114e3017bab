// The status readers GitOps tools run, applied to a CR as the API server answers it: kstatus (the
// program tools/kstatus/build.sh builds on sigs.k8s.io/cli-utils) and Argo CD's health check
// (docs/argocd/health.lua, run by Debian's lua5.4 the way Argo CD runs it: `obj` a Lua table).
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { requireFirstUse } from './integration/first-use.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const HEALTH_LUA = join(root, 'docs', 'argocd', 'health.lua');

export interface KStatus {
  readonly status: 'InProgress' | 'Failed' | 'Current' | 'Terminating' | 'NotFound' | 'Unknown';
  readonly message: string;
}

export interface ArgoHealth {
  readonly status: 'Healthy' | 'Progressing' | 'Degraded' | 'Suspended' | 'Missing' | 'Unknown';
  readonly message: string;
}

/** The kstatus program, built on first use (a `go build`; cached under ~/.cache/appkind/kstatus/). */
export function kstatusBinary(): string {
  // Global setup builds it on first use (first-use.ts): this finds it, or says why it is not there.
  requireFirstUse('kstatus');
  const out = execFileSync('bash', [join(root, 'tools', 'kstatus', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').at(-1)!;
}

/** What kstatus computes for each object, in order (one process for all). */
export function kstatus(binary: string, ...objects: object[]): KStatus[] {
  const run = spawnSync(binary, [], { input: objects.map((o) => JSON.stringify(o)).join('\n'), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${binary} exited with ${run.status}: ${run.stderr}`);
  return run.stdout.trim().split('\n').map((l) => JSON.parse(l) as KStatus);
}

/** A JSON value as a Lua expression; null is nil, as in Argo CD's conversion. */
export function luaValue(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'boolean' || typeof value === 'number') return String(value);
  if (typeof value === 'string') {
    // Decimal escapes for every byte but plain ASCII: no Lua quoting rule to get wrong.
    const bytes = [...Buffer.from(value, 'utf8')];
    return `"${bytes.map((b) => (b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c ? String.fromCharCode(b) : `\\${b}`)).join('')}"`;
  }
  if (Array.isArray(value)) return `{${value.map(luaValue).join(', ')}}`;
  return `{${Object.entries(value as Record<string, unknown>).map(([k, v]) => `[${luaValue(k)}] = ${luaValue(v)}`).join(', ')}}`;
}


/** Argo CD's verdict on each object: docs/argocd/health.lua with `obj` set, as Argo CD calls it. */
export function argoHealth(...objects: object[]): ArgoHealth[] {
  if (spawnSync('lua5.4', ['-v'], { encoding: 'utf8' }).status !== 0) throw new Error('lua5.4 is not installed, which runs Argo CD\'s health check here: apt-get install lua5.4');
  const program = objects
    .map((o) => `obj = ${luaValue(o)}\nlocal hs = dofile(${luaValue(HEALTH_LUA)})\nprint(hs.status .. "\\t" .. (hs.message or ""))`)
    .map((chunk) => `do\n${chunk}\nend`)
    .join('\n');
  const run = spawnSync('lua5.4', ['-'], { input: program, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`lua5.4 ${HEALTH_LUA} failed (${run.status}): ${run.stderr}`);
  return run.stdout.trimEnd().split('\n').map((l) => {
    const [status, ...message] = l.split('\t');
    return { status: status as ArgoHealth['status'], message: message.join('\t') };
  });
}

/** The helm binary tools/helm/build.sh builds (it says where without building). */
export function helmBinary(): string {
  const path = execFileSync('bash', [join(root, 'tools', 'helm', 'build.sh'), '--print-path'], { encoding: 'utf8' }).trim();
  if (!existsSync(path)) {
    // Global setup builds it on first use (first-use.ts); this says why it could not.
    requireFirstUse('helm');
    throw new Error(`helm is not built (no ${path}): run \`npm run helm:build\` to see why`);
  }
  return path;
}

/** A chart holding `obj`, as a user would package an app, in a new folder added to `made` (to remove). */
export function chartHolding(made: string[], obj: { apiVersion: string; kind: string; metadata: { name: string }; spec?: unknown }): string {
  const dir = mkdtempSync(join(tmpdir(), `appkind-chart-${obj.metadata.name}-`));
  made.push(dir);
  mkdirSync(join(dir, 'templates'));
  writeFileSync(join(dir, 'Chart.yaml'), `apiVersion: v2\nname: ${obj.metadata.name}\nversion: 0.1.0\n`);
  writeFileSync(join(dir, 'templates', 'app.yaml'), `${JSON.stringify(obj)}\n`);
  return dir;
}

/** helm as a user runs it, in a config of its own, against `kubeconfig` and `namespace`: its exit code and output. */
export async function runHelm(kubeconfig: string, namespace: string, args: string[]): Promise<{ code: number; output: string }> {
  const home = mkdtempSync(join(tmpdir(), 'appkind-helm-home-'));
  const env = { ...process.env, HELM_CONFIG_HOME: join(home, 'config'), HELM_CACHE_HOME: join(home, 'cache'), HELM_DATA_HOME: join(home, 'data') };
  try {
    const { stdout, stderr } = await promisify(execFile)(helmBinary(), [...args, '--kubeconfig', kubeconfig, '-n', namespace], { env });
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (e) {
    const { code, stdout, stderr } = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof code === 'number' ? code : -1, output: `${stdout ?? ''}${stderr ?? ''}` };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
