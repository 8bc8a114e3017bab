// The operator of an older commit, for the upgrade test: that commit's lib/src and operator/ (git
// archive) bundled by esbuild into one file, as `npm run build` bundles this checkout's, with this
// checkout's node_modules. Refused, naming the package, when the commit resolved a dependency to
// another version, since the older operator would then run on code it never had. The commit is the
// newest before HEAD that changed the rendering's golden: the last change an upgrade must roll.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Plugin } from 'esbuild';
import { buildOperatorBundle } from '../../scripts/build-operator.js';

const root = join(import.meta.dirname, '..', '..');

/** The rendering's golden: the commits that changed it are the ones an upgrade from them rolls apps. */
export const GOLDEN_PATH = 'test/golden/render.yaml';

function git(args: string[]): string {
  return execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Fails with the fix when `commit` is not in this checkout's history (a shallow clone, or no git at all). */
function requireCommit(commit: string): void {
  try {
    git(['rev-parse', '--git-dir']);
  } catch {
    throw new Error(`${root} is not a git checkout: the upgrade test builds the operator of commit ${commit} from the history; run it in a clone of the repository`);
  }
  try {
    git(['cat-file', '-e', `${commit}^{commit}`]);
  } catch {
    const shallow = git(['rev-parse', '--is-shallow-repository']).trim() === 'true';
    const fix = shallow ? 'a shallow clone: run `git fetch --unshallow` (or clone without --depth)' : 'fetch main\'s history (`git fetch origin main`)';
    throw new Error(`commit ${commit}, the older operator of the upgrade test, is not in this clone's history; ${fix} and run the test again`);
  }
}

/** The version package-lock.json resolves `name` to, at `commit` or (no commit) in this checkout. */
function lockedVersion(name: string, commit?: string): string | undefined {
  const text = commit ? git(['show', `${commit}:package-lock.json`]) : readFileSync(join(root, 'package-lock.json'), 'utf8');
  const lock = JSON.parse(text) as { packages: Record<string, { version?: string }> };
  return lock.packages[`node_modules/${name}`]?.version;
}

/** Fails naming the package when the commit's operator or library resolved a dependency to another version than this checkout. */
function requireSameDependencies(commit: string): void {
  const operatorDeps = Object.keys((JSON.parse(git(['show', `${commit}:operator/package.json`])) as { dependencies: Record<string, string> }).dependencies);
  const libDeps = Object.keys((JSON.parse(git(['show', `${commit}:lib/package.json`])) as { peerDependencies: Record<string, string> }).peerDependencies);
  for (const name of new Set([...operatorDeps, ...libDeps].filter((n) => n !== 'cdk8s-appkind'))) {
    const [then, now] = [lockedVersion(name, commit), lockedVersion(name)];
    if (then !== now) {
      throw new Error(
        `the older operator (commit ${commit}) resolved ${name} to ${then ?? 'nothing'}, this checkout to ${now ?? 'nothing'}: ` +
          'it is built with this checkout\'s node_modules, so choose a commit of main with the same dependencies (OLDER_FALLBACK in test/integration/upgrade.test.ts)',
      );
    }
  }
}

/** Resolves the workspace's own packages to the commit's copies instead of this checkout's. */
function olderWorkspace(dir: string): Plugin {
  const exportsOf = JSON.parse(readFileSync(join(dir, 'operator', 'package.json'), 'utf8')) as { exports: Record<string, string> };
  return {
    name: 'older-workspace',
    setup(b) {
      // The library is imported as its jsii build (index, build/<file>.js); its sources are the same modules.
      b.onResolve({ filter: /^cdk8s-appkind(\/|$)/ }, (args) => {
        const sub = args.path.slice('cdk8s-appkind'.length).replace(/^\/build\//, '/').replace(/\.js$/, '');
        return { path: join(dir, 'lib', 'src', `${sub || '/index'}.ts`) };
      });
      b.onResolve({ filter: /^appkind-operator(\/|$)/ }, (args) => {
        const target = exportsOf.exports[`.${args.path.slice('appkind-operator'.length)}`];
        if (!target) return { errors: [{ text: `the older operator/package.json exports no ${args.path}` }] };
        return { path: join(dir, 'operator', target) };
      });
    },
  };
}

/**
 * Builds the operator of `commit` into `dir` and returns the command line that runs it. `dir` gets
 * the commit's lib/src and operator/, a link to this checkout's node_modules (for the packages the
 * bundle leaves out) and main.mjs.
 */
export async function buildOlderOperator(commit: string, dir: string): Promise<string[]> {
  requireCommit(commit);
  requireSameDependencies(commit);
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git -C "$1" archive --format=tar "$2" lib/src operator | tar -x -C "$3"`, 'sh', root, commit, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  const outfile = join(dir, 'main.mjs');
  const { inputs } = await buildOperatorBundle(outfile, { main: join(dir, 'operator', 'main.ts'), plugins: [olderWorkspace(dir)] });
  // Through the node_modules link, a missed import of the workspace's packages would bundle this checkout's code.
  const ours = inputs.map((i) => resolve(i)).filter((i) => [join(root, 'lib'), join(root, 'operator')].some((d) => i.startsWith(`${d}/`)));
  if (ours.length > 0) throw new Error(`the older operator's bundle holds this checkout's ${ours.join(', ')}: resolve its import to the commit's copy in older-operator.ts`);
  return [process.execPath, outfile];
}

/** Fails with the fix when this checkout has no history to choose from: no git, or a shallow clone (its oldest commit looks as if it added every file). */
function requireHistory(): void {
  try {
    git(['rev-parse', '--git-dir']);
  } catch {
    throw new Error(`${root} is not a git checkout: the upgrade test builds an older commit's operator from the history; run it in a clone of the repository`);
  }
  if (git(['rev-parse', '--is-shallow-repository']).trim() === 'true') {
    throw new Error(`${root} is a shallow clone: the upgrade test chooses its older operator from main's history; run \`git fetch --unshallow\` (or clone without --depth) and run the test again`);
  }
}

/** An older commit's operator, built. */
export interface OlderOperator {
  readonly commit: string;
  /** The command line that runs it. */
  readonly command: string[];
  /** The commit's test/golden/render.yaml; undefined for a fallback commit from before the golden. */
  readonly golden?: string;
}

/**
 * Builds, in `dir`, the operator of the newest commit before HEAD that changed test/golden/render.yaml.
 * A commit of other dependencies, whose operator does not build, or that `refusal` refuses (naming
 * why) is skipped with the reason logged; `fallback` when none qualifies.
 */
export async function newestOlderOperator(dir: string, fallback: string, refusal: (commit: string) => string | undefined): Promise<OlderOperator> {
  requireHistory();
  const head = git(['rev-parse', 'HEAD']).trim();
  const candidates = git(['log', '--format=%H', 'HEAD', '--', GOLDEN_PATH]).split('\n').filter((c) => c !== '' && c !== head);
  for (const commit of candidates) {
    try {
      const golden = fileAt(commit, GOLDEN_PATH);
      const refused = golden === undefined ? `it has no ${GOLDEN_PATH}` : refusal(commit);
      if (refused) throw new Error(refused);
      return { commit, command: await buildOlderOperator(commit, join(dir, commit.slice(0, 12))), golden };
    } catch (e) {
      console.log(`upgrade test: skipping ${commit.slice(0, 7)}, which changed ${GOLDEN_PATH}: ${(e as Error).message}`);
    }
  }
  console.log(`upgrade test: no commit that changed ${GOLDEN_PATH} qualifies (${candidates.length} tried); using the fallback ${fallback.slice(0, 7)}`);
  return { commit: fallback, command: await buildOlderOperator(fallback, join(dir, fallback.slice(0, 12))) };
}

/** The text of `path` at `commit`, or undefined when the commit has no such file. */
export function fileAt(commit: string, path: string): string | undefined {
  try {
    return git(['show', `${commit}:${path}`]);
  } catch {
    return undefined;
  }
}
