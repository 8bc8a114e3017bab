// `npm run build` (after tsc): the operator as one file, build/operator/main.js, bundled by esbuild
// from operator/main.ts with the dependencies it imports at start (cdk8s, cdk8s-plus-27, constructs,
// the construct library, ajv, yaml, pino, prom-client).
//
// Why: the operator's idle RSS (docs/benchmark.md, memory by phase). Loaded as ~460 separate modules, Node keeps a module record,
// a CommonJS wrapper and the whole source text of each (V8 compiles functions lazily from it); one
// file without comments or indentation holds the same code in less. Names are kept (keepNames and no
// identifier minification), so stack traces and constructor names read as in the sources.
//
// Left out of the bundle and loaded from node_modules only when needed:
// - @kubernetes/client-node: only for exec or auth-provider plugins, proxies and the like
//   (operator/runtime/kubeconfig.ts imports it then);
// - selfsigned: run in a short-lived child process that resolves it by name
//   (operator/runtime/serving-cert.ts).
import { build, type Plugin } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const OPERATOR_EXTERNALS = ['@kubernetes/client-node', 'selfsigned'];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface OperatorBundleInfo {
  /** Size of the file. */
  readonly bytes: number;
  /** What the file imports at run time that is not in it: Node's built-ins and the packages above. */
  readonly imports: string[];
  /** The source files in it (paths relative to the checkout). */
  readonly inputs: string[];
}

/**
 * Bundles the operator into `outfile` (default build/operator/main.js): this checkout's, or another
 * copy's `main.ts` whose imports `plugins` resolve (the upgrade test's older operator).
 */
export async function buildOperatorBundle(
  outfile = join(root, 'build', 'operator', 'main.js'),
  opts: { main?: string; plugins?: Plugin[] } = {},
): Promise<OperatorBundleInfo> {
  const result = await build({
    entryPoints: [opts.main ?? join(root, 'operator', 'main.ts')],
    plugins: opts.plugins ?? [],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    external: OPERATOR_EXTERNALS,
    // CommonJS dependencies call require() for Node's built-ins; an ES module has no require of its own.
    banner: { js: "import { createRequire as __appkindCreateRequire } from 'node:module'; const require = __appkindCreateRequire(import.meta.url);" },
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    legalComments: 'eof',
    sourcemap: false,
    metafile: true,
    logLevel: 'warning',
    tsconfig: join(root, 'tsconfig.json'),
  });
  const outputs = Object.values(result.metafile.outputs);
  return {
    bytes: outputs.reduce((sum, o) => sum + o.bytes, 0),
    imports: [...new Set(outputs.flatMap((o) => o.imports.map((i) => i.path)))].sort(),
    inputs: Object.keys(result.metafile.inputs).sort(),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { bytes, inputs } = await buildOperatorBundle();
  process.stdout.write(`build/operator/main.js: ${(bytes / 1024 / 1024).toFixed(2)} MiB, ${inputs.length} source files\n`);
}
