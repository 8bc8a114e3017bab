// What the integration tests' global setup builds on first use, and what a machine that cannot build
// it is told. No build runs here: each case's PATH lacks the tools (or Go), so it ends before any compile.
import { afterEach, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestPathPatterns } from '@jest/pattern';
import { buildFirstUse, missingFor, selectedTestFiles, usersOf } from '../integration/first-use.js';

const root = join(import.meta.dirname, '..', '..');
const integration = join(root, 'test', 'integration');
const testFiles = readdirSync(integration).filter((f) => f.endsWith('.test.ts')).map((f) => join(integration, f));
const made: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'appkind-first-use-'));
  made.push(dir);
  return dir;
};

afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('first use', () => {
  it('finds the test files that use each build: helm for the chart and helm --wait, kstatus for the GitOps clients, metrics-server for autoscaling, the images for the real node and the release', () => {
    const names = (files: string[]): string[] => files.map((f) => f.slice(integration.length + 1)).sort();
    expect(names(usersOf('helm', testFiles))).toEqual(['gitops.test.ts', 'helm.test.ts', 'real-node-helm.test.ts']);
    expect(names(usersOf('kstatus', testFiles))).toEqual(['gitops.test.ts']);
    expect(names(usersOf('operator image', testFiles))).toEqual(expect.arrayContaining(['helm.test.ts', 'operator-image.test.ts', 'real-node-operator.test.ts', 'release.test.ts']));
    expect(names(usersOf('echo image', testFiles))).toEqual(expect.arrayContaining(['real-node-walkthrough.test.ts', 'real-node-cleanup.test.ts']));
    expect(names(usersOf('metrics-server', testFiles))).toEqual(['real-node-autoscaling.test.ts']);
    expect(usersOf('helm', [join(integration, 'walkthrough.test.ts')])).toEqual([]);
  });

  it('reads the test files a run selected from jest\'s path patterns, all of them without any', () => {
    const selected = (patterns: string[]): string[] => selectedTestFiles({ rootDir: root, testPathPatterns: new TestPathPatterns(patterns) });
    expect(selected(['test/integration/helm.test.ts'])).toEqual([join(integration, 'helm.test.ts')]);
    expect(selected(['real-node-'])).toEqual(expect.arrayContaining([join(integration, 'real-node-cleanup.test.ts'), join(integration, 'real-node-operator.test.ts')]));
    expect(selected(['test/unit/'])).toEqual([]);
    expect(selected([]).sort()).toEqual(testFiles.sort());
  });

  it('names every missing command in one line with the apt-get command that installs them, and Go apart', () => {
    const bare = { ...process.env, PATH: tempDir() };
    expect(missingFor('operator image', bare)).toBe(
      'the operator image cannot be built here: podman, buildah, runc, debootstrap not found; apt-get install podman buildah runc debootstrap, then run the tests again',
    );
    expect(missingFor('echo image', bare)).toBe(
      "the echo app's image cannot be built here: go, buildah, runc not found; apt-get install buildah runc, and install Go >= 1.26 (https://go.dev/doc/install), then run the tests again",
    );
    expect(missingFor('helm', bare)).toBe('helm cannot be built here: go not found; install Go >= 1.26 (https://go.dev/doc/install), then run the tests again');
  });

  it('global setup builds nothing a machine cannot build, says which tests will fail, and leaves an empty cache empty', async () => {
    const cache = tempDir();
    const lines: string[] = [];
    await buildFirstUse([join(integration, 'helm.test.ts'), join(integration, 'walkthrough.test.ts')], (l) => lines.push(l), { ...process.env, PATH: tempDir(), APPKIND_CACHE_DIR: cache });
    expect(lines.filter((l) => l.startsWith('helm '))).toEqual([`${missingFor('helm', { PATH: '' })} (1 test file(s) will fail on it)`]);
    expect(readdirSync(cache)).toEqual([]);
  });

  it('helm on an empty cache without Go: build.sh names the fix, and --print-path points into APPKIND_CACHE_DIR', () => {
    const cache = tempDir();
    // A PATH with the commands build.sh runs before it looks for Go, and no Go.
    const bin = tempDir();
    for (const command of ['bash', 'dirname', 'cat', 'sha256sum', 'cut', 'awk', 'mkdir', 'flock']) {
      symlinkSync(execFileSync('/bin/sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim(), join(bin, command));
    }
    const env = { ...process.env, APPKIND_CACHE_DIR: cache, PATH: bin };
    const script = join(root, 'tools', 'helm', 'build.sh');
    const where = spawnSync(join(bin, 'bash'), [script, '--print-path'], { env, encoding: 'utf8' }).stdout.trim();
    expect(where.startsWith(join(cache, 'helm') + '/')).toBe(true);
    const run = spawnSync(join(bin, 'bash'), [script], { env, encoding: 'utf8' });
    expect(run.status).toBe(3);
    expect(run.stderr).toContain('helm: no Go toolchain found. Install Go >= 1.26');
    expect(existsSync(where)).toBe(false);
  });
});
