// build.sh's cheap paths, run for real: the cache folder it prints, and its lock. The full build
// (15+ minutes) is not run here; this drives the script with a cache that a stand-in "other build"
// holds and completes.
import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../../tools/controlplane/binaries.js';

const script = join(process.cwd(), 'tools/controlplane/build.sh');
const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempCache(): string {
  const dir = mkdtempSync(join(tmpdir(), 'appkind-build-test-'));
  temps.push(dir);
  return dir;
}

interface Run {
  pid: number;
  /** What it has written to stderr so far. */
  stderr: () => string;
  exited: () => boolean;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Run {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let exited = false;
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => {
      exited = true;
      resolve({ code, stdout, stderr });
    }),
  );
  return { pid: child.pid ?? -1, stderr: () => stderr, exited: () => exited, done };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('build.sh', () => {
  it('--print-cache-dir prints the folder binaries.ts looks in (same key, same version)', () => {
    const base = tempCache();
    const env = { ...process.env, APPKIND_CACHE_DIR: base };
    const r = spawnSync('bash', [script, '--print-cache-dir'], { env, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(cacheDir(env));
    expect(r.stdout.trim()).toMatch(new RegExp(`^${base}/controlplane/v1\\.\\d+\\.\\d+-[0-9a-f]{12}$`));
    expect(readdirSync(base)).toEqual([]); // only prints: creates nothing
  });

  it('waits for a build that holds the lock, says so with its pid, then reuses its result', async () => {
    if (spawnSync('flock', ['--version'], { stdio: 'ignore' }).error) throw new Error('flock not found: apt-get install util-linux');
    const base = tempCache();
    const env = { ...process.env, APPKIND_CACHE_DIR: base };
    const dir = cacheDir(env);
    mkdirSync(dir, { recursive: true });
    const gate = join(base, 'release');
    // The "other build": takes the lock as build.sh does, writes its pid, "builds" the binaries
    // (stand-in files), and only finishes once the test has seen build.sh waiting.
    const holderScript = [
      `exec 9<>"${dir}/.lock"`,
      'flock 9',
      `echo $$ >"${dir}/.lock"`,
      `touch "${base}/locked"`,
      `while [ ! -e "${gate}" ]; do sleep 0.05; done`,
      `for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do printf '#!/bin/sh\\n' >"${dir}/$b"; chmod +x "${dir}/$b"; done`,
      `touch "${dir}/.complete"`,
    ].join('\n');
    const holder = run('bash', ['-c', holderScript], env);
    await until(() => existsSync(join(base, 'locked')), 'the stand-in build to take the lock');

    const waiter = run('bash', [script], env);
    await until(() => waiter.stderr().includes('waiting') || waiter.exited(), 'build.sh to wait');
    expect(waiter.stderr()).toContain(`controlplane: another build of ${dir} is in progress (pid ${holder.pid}); waiting`);
    expect(waiter.exited()).toBe(false);
    expect(holder.exited()).toBe(false);

    writeFileSync(gate, '');
    const h = await holder.done;
    const w = await waiter.done;
    expect(h.code).toBe(0);
    expect(w.code).toBe(0);
    expect(w.stderr).toContain(`controlplane: the other build finished; reusing ${dir}`);
    expect(w.stderr).not.toContain('building'); // it reused the result, it did not build again
    expect(w.stdout.trim().split('\n').pop()).toBe(dir);
  });
});
