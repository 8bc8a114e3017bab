// The operator as the image runs it: one file bundled by esbuild (scripts/build-operator.ts).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildOperatorBundle, OPERATOR_EXTERNALS, type OperatorBundleInfo } from '../../scripts/build-operator.js';

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

/** Exit code, stdout and stderr of `node file ...args` (a non-zero exit is not thrown). */
async function node(file: string, args: string[], env: NodeJS.ProcessEnv, flags: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...flags, file, ...args], { env, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

describe('the operator bundle', () => {
  let dir: string;
  let file: string;
  let text: string;
  let info: OperatorBundleInfo;

  beforeAll(async () => {
    // Inside the checkout, so the externals resolve from its node_modules as they do in the image.
    mkdirSync(join(root, 'build'), { recursive: true });
    dir = mkdtempSync(join(root, 'build', 'operator-file-test-'));
    file = join(dir, 'main.js');
    info = await buildOperatorBundle(file);
    text = readFileSync(file, 'utf8');
  }, 60_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('imports nothing at run time but Node built-ins and client-node, when a kubeconfig needs it', () => {
    const builtins = new Set(builtinModules);
    const packages = info.imports.filter((s) => !s.startsWith('node:') && !builtins.has(s));
    // client-node is imported when a kubeconfig needs it; selfsigned is resolved by name for a child process.
    expect(packages).toEqual(['@kubernetes/client-node']);
    expect(OPERATOR_EXTERNALS).toEqual(expect.arrayContaining(packages));
    expect(text.includes('import.meta.resolve("selfsigned")')).toBe(true);
    // What it holds: the operator, the construct library and render()'s cdk8s stack, the settings' and metrics' packages.
    for (const input of ['operator/run.ts', 'operator/runtime/rest.ts', 'lib/build/app.js', 'node_modules/cdk8s-plus-27/lib/index.js', 'node_modules/cdk8s/lib/index.js', 'node_modules/ajv/dist/ajv.js', 'node_modules/prom-client/index.js']) {
      expect(info.inputs).toContain(input);
    }
    expect(info.inputs.some((i) => i.includes('node_modules/@kubernetes/client-node/') || i.includes('node_modules/selfsigned/'))).toBe(false);
  });

  it('holds no inline source map and no comments but the licences', () => {
    // Booleans, not the text: a failure must not print 1.4 MB.
    expect(/\/\/# sourceMappingURL=data:application/.test(text)).toBe(false);
    expect(text.includes('A small JSON client for the API server')).toBe(false); // a doc comment of operator/runtime/rest.ts
    expect(text.split('\n').length).toBeLessThan(2000);
  });

  it('runs: prints its flags, and names a missing kubeconfig after loading the whole program, without undici', async () => {
    const help = await node(file, ['--help'], { PATH: process.env.PATH });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: appkind-operator');
    expect(help.stdout).toContain('--workers');

    // At exit, the built-in modules Node loaded for it (process.moduleLoadList), on stderr.
    const listLoaded = 'data:text/javascript,process.on("exit",()=>process.stderr.write("\\nLOADED "+JSON.stringify(process.moduleLoadList)+"\\n"))';
    const missing = join(dir, 'no-such-kubeconfig');
    const failed = await node(file, [], { PATH: process.env.PATH, KUBECONFIG: missing, APPKIND_METRICS_SECURE: 'false' }, ['--import', listLoaded]);
    expect(failed.code).not.toBe(0);
    const line = JSON.parse(failed.stdout.trim().split('\n').pop()!) as { level: string; msg: string; error: { message: string } };
    expect(line).toMatchObject({ level: 'error', msg: 'operator failed to start' });
    expect(line.error.message).toContain(missing);
    // node:http through require() (operator/runtime/node-http.ts): Node's bundled undici is not loaded.
    const loaded = JSON.parse(/^LOADED (.*)$/m.exec(failed.stderr)![1]!) as string[];
    expect(loaded).toContain('NativeModule http');
    expect(loaded.filter((m) => m.includes('undici'))).toEqual([]);
  }, 60_000);
});
