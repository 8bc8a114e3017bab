// Helpers of the consumer tests: each installs the library from its `npm pack` tarball into a freshly
// made project outside the repository, as a user would, never from the source tree.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const ROOT = join(import.meta.dirname, '..', '..');
/** Things worth keeping between runs (generated projects, Go bindings); the key names what they depend on. */
export const CACHE = join(process.env.APPKIND_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'appkind'), 'consumers');

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command; never throws on a non-zero exit (callers assert on `code` and show the output). */
export async function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, {
      cwd, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string; message: string };
    return { code: typeof err.code === 'number' ? err.code : 1, stdout: err.stdout ?? '', stderr: `${err.stderr ?? ''}\n${err.message}` };
  }
}

/** Like run(), but fails with the command's output when it exits non-zero. */
export async function must(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const r = await run(command, args, cwd, env);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${r.code}\n--- stdout\n${r.stdout.slice(-6000)}\n--- stderr\n${r.stderr.slice(-6000)}`);
  return r.stdout;
}

/** A new empty directory under the system temp dir. */
export function freshDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `appkind-consumer-${prefix}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

let tarball: Promise<string> | undefined;

/** `npm pack` of the construct library (lib/ as built by `npm run build:lib`), once per test file. */
export function packLibrary(): Promise<string> {
  tarball ??= (async () => {
    const dir = freshDir('pack');
    await must('npm', ['pack', '--workspace=lib', '--pack-destination', dir, '--silent'], ROOT);
    const files = readdirSync(dir).filter((f) => f.endsWith('.tgz'));
    if (files.length !== 1) throw new Error(`npm pack wrote ${files.join(', ') || 'nothing'} to ${dir}`);
    return join(dir, files[0]!);
  })();
  return tarball;
}

/** Versions of packages installed at the root, for cache keys and for pinning consumer projects alike. */
export function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * A directory kept in the cache under `key`, made by `make` into a temp dir and renamed into place
 * only when complete, so an interrupted run never leaves a half-made entry.
 */
export async function cached(key: string, make: (dir: string) => Promise<void>): Promise<string> {
  const dir = join(CACHE, key);
  if (existsSync(dir)) return dir;
  mkdirSync(CACHE, { recursive: true });
  const tmp = mkdtempSync(join(CACHE, `.${key.replace(/\//g, '_')}-`));
  try {
    await make(tmp);
    mkdirSync(join(dir, '..'), { recursive: true });
    renameSync(tmp, dir);
  } catch (e) {
    removeDir(tmp);
    throw e;
  }
  return dir;
}

/** A copy of a cached directory (with its node_modules) to work in. */
export function copyOf(source: string, prefix: string): string {
  const dir = freshDir(prefix);
  cpSync(source, dir, { recursive: true, verbatimSymlinks: true });
  return dir;
}

/**
 * The packed library unpacked into `dir/package`, with the root's node_modules linked beside it so
 * that jsii-pacmak finds the assemblies of its dependencies (cdk8s, cdk8s-plus-27, constructs).
 */
export async function unpackLibrary(dir: string): Promise<string> {
  await must('tar', ['-xzf', await packLibrary(), '-C', dir], dir);
  const pkg = join(dir, 'package');
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'), 'dir');
  return pkg;
}

/** jsii-pacmak generating code only (no pip, twine or Go proxy involved) into `outdir/<target>`. */
export async function pacmak(target: 'go' | 'python' | 'java' | 'dotnet', outdir: string, packages: string[]): Promise<void> {
  await must(join(ROOT, 'node_modules', '.bin', 'jsii-pacmak'), ['--code-only', '--no-npmignore', '--targets', target, '--outdir', outdir, ...packages], outdir, QUIET_JSII);
}

/** Keeps the jsii tools' Node end-of-life banner out of the output. */
export const QUIET_JSII = { JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION: '1', JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION: '1' };
