// What the integration tests build on first use besides the control plane (ControlPlane.start builds
// that): helm, metrics-server, kstatus, the echo app's image and the operator image. Global setup builds those the selected
// test files use before any test starts, so no first build runs inside a test's timeout; each build is
// cached outside the repository under a lock, so later runs only find the cache. Where the machine
// lacks what a build needs, nothing is built and the tests that use it fail at once, naming what is
// missing and the command that installs it.
import type { GlobalConfig } from 'jest';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const GO = 'Go >= 1.26 (https://go.dev/doc/install)';

interface FirstUse {
  /** Its name in messages. */
  readonly what: string;
  /** Commands its build needs, each with the Debian package that has it (Go is not packaged new enough). */
  readonly needs: Readonly<Record<string, string>>;
  /** A test file whose source matches uses it. */
  readonly usedBy: RegExp;
  /** The build (a cached result makes it return at once); relative to the repository. */
  readonly build: readonly string[];
  /** What one first build costs here, for the progress lines. */
  readonly firstBuild: string;
}

export const FIRST_USE = {
  helm: {
    what: 'helm',
    needs: { go: GO },
    usedBy: /\b(helmBinary|runHelm)\(/,
    build: ['bash', 'tools/helm/build.sh'],
    firstBuild: 'one go build of helm.sh/helm/v4, about 10 minutes on 2 cores',
  },
  'metrics-server': {
    what: 'metrics-server',
    needs: { go: GO },
    usedBy: /\bmetricsServer: true\b/,
    build: ['bash', 'tools/metrics-server/build.sh'],
    firstBuild: 'one go build of sigs.k8s.io/metrics-server, minutes on 2 cores',
  },
  kstatus: {
    what: 'kstatus (sigs.k8s.io/cli-utils)',
    needs: { go: GO },
    usedBy: /\bkstatusBinary\(/,
    build: ['bash', 'tools/kstatus/build.sh'],
    firstBuild: 'one go build of a small program on sigs.k8s.io/cli-utils, a few minutes on 2 cores',
  },
  'echo image': {
    what: "the echo app's image",
    needs: { go: GO, buildah: 'buildah', runc: 'runc' },
    usedBy: /\b(loadEchoStandIn|echoImageArchive)\(/,
    build: ['bash', 'examples/echo/build.sh'],
    firstBuild: 'a go build and buildah, about a minute',
  },
  // The tests (and `npm run release` in them) build their own tags from the same layers, which this
  // leaves cached, so their builds only tag them.
  'operator image': {
    what: 'the operator image',
    needs: { podman: 'podman', buildah: 'buildah', runc: 'runc', debootstrap: 'debootstrap' },
    usedBy: /\bbuildOperatorImage\(|'run', '-s', 'release'/,
    build: ['bash', 'tools/image/build.sh', 'localhost/appkind-operator:first-use'],
    firstBuild: 'a Debian base image, npm ci and the compile step, about 10 minutes on 2 cores',
  },
} as const satisfies Record<string, FirstUse>;
export type FirstUseName = keyof typeof FIRST_USE;

const onPath = (command: string, env: NodeJS.ProcessEnv): boolean => spawnSync('/bin/sh', ['-c', `command -v ${command}`], { stdio: 'ignore', env }).status === 0;

/** Why `name` cannot be built on this machine, in one line with the fix; undefined when it can. */
export function missingFor(name: FirstUseName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const missing = Object.entries(FIRST_USE[name].needs as Record<string, string>).filter(([command]) => !onPath(command, env));
  if (!missing.length) return undefined;
  const packages = missing.filter(([command]) => command !== 'go').map(([, pkg]) => pkg);
  const fixes = [
    ...(packages.length ? [`apt-get install ${packages.join(' ')}`] : []),
    ...(missing.some(([command]) => command === 'go') ? [`install ${GO}`] : []),
  ];
  return `${FIRST_USE[name].what} cannot be built here: ${missing.map(([command]) => command).join(', ')} not found; ${fixes.join(', and ')}, then run the tests again`;
}

/** The environment variable by which global setup tells the tests that a build failed (jest workers inherit it). */
const failedVar = (name: FirstUseName): string => `APPKIND_TEST_FIRST_USE_FAILED_${name.toUpperCase().replace(/\W/g, '_')}`;

/** In a test: throws the one message that says why `name` is not there (a missing tool, or a failed build). */
export function requireFirstUse(name: FirstUseName): void {
  const missing = missingFor(name);
  if (missing) throw new Error(missing);
  const failed = process.env[failedVar(name)];
  if (failed) throw new Error(`${FIRST_USE[name].what} failed to build in the tests' global setup (${failed}); its output is above the test results, or run \`${FIRST_USE[name].build.join(' ')}\``);
}

/** The integration test files a jest run selected (all of them without path patterns). */
export function selectedTestFiles(globalConfig: Pick<GlobalConfig, 'rootDir' | 'testPathPatterns'>): string[] {
  const files = readdirSync(import.meta.dirname, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(import.meta.dirname, f));
  const patterns = globalConfig.testPathPatterns;
  if (!patterns.isSet()) return files;
  const selected = patterns.toExecutor({ rootDir: globalConfig.rootDir });
  return files.filter((f) => selected.isMatch(f));
}

/** The test files among `files` that use `name`. */
export function usersOf(name: FirstUseName, files: readonly string[]): string[] {
  return files.filter((file) => FIRST_USE[name].usedBy.test(readFileSync(file, 'utf8')));
}

/** Runs the build with its output to `log`; while it runs, a line every 15 s says it still does. */
function runBuild(name: FirstUseName, log: (line: string) => void, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const { build, firstBuild } = FIRST_USE[name];
  const started = Date.now();
  const child = spawn(build[0]!, build.slice(1), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env });
  let last = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) log(`${name}: ${(last = line)}`);
    });
  }
  const ticker = setInterval(() => log(`${name}: building, ${Math.round((Date.now() - started) / 1000)} s so far (from an empty cache: ${firstBuild})`), 15_000);
  return new Promise((resolve) => {
    child.on('error', (err) => (clearInterval(ticker), resolve(err.message)));
    child.on('exit', (code, signal) => {
      clearInterval(ticker);
      resolve(code === 0 ? undefined : `${build.join(' ')} exited with ${signal ?? code}${last ? `: ${last}` : ''}`);
    });
  });
}

/**
 * In global setup: builds, one after another, what the given test files use and this machine can
 * build. A failed build is logged and left to the tests that use it, which fail naming it.
 */
export async function buildFirstUse(files: readonly string[], log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  for (const name of Object.keys(FIRST_USE) as FirstUseName[]) {
    const users = usersOf(name, files);
    if (!users.length) continue;
    const missing = missingFor(name, env);
    if (missing) {
      log(`${missing} (${users.length} test file(s) will fail on it)`);
      continue;
    }
    const failed = await runBuild(name, log, env);
    if (failed) {
      process.env[failedVar(name)] = failed;
      log(`${name}: the build failed: ${failed}`);
    }
  }
}
