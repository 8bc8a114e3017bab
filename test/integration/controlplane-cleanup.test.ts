// `npm start` end to end, as a separate process: one `export KUBECONFIG=` line when ready, its CRDs
// established, and no leftover process (control plane or operator), port or data after SIGTERM or even
// after SIGKILL; also when only the npm process of `npm start` gets the signal, as from a supervisor,
// a CI runner or `timeout`.
import { describe, expect, test } from '@jest/globals';
import { ApiextensionsV1Api, KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './cluster.js';
import { processesMentioning } from './controlplane-processes.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Started {
  child: ChildProcess;
  kubeconfigPath: string;
  dir: string;
  stdoutLines: string[];
}

/**
 * Runs `command` and resolves once it prints the export line. Default: tools/start.ts in one node
 * process (no tsx CLI wrapper, so SIGKILL hits the real parent). `detached`: a process group of its
 * own, so a signal reaches that process alone.
 */
function startTool(command = [process.execPath, '--import', 'tsx', join(repoRoot, 'tools/start.ts')], detached = false): Promise<Started> {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  let stdout = '';
  let stderr = '';
  return new Promise((resolveStarted, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // `npm start` prints its own "> <package> start" banner on stdout first.
      const match = /^export KUBECONFIG=(.+)$/m.exec(stdout);
      if (match) {
        const kubeconfigPath = match[1];
        resolveStarted({ child, kubeconfigPath, dir: dirname(kubeconfigPath), stdoutLines: stdout.trimEnd().split('\n') });
      }
    });
    child.on('exit', (code) => reject(new Error(`${command.join(' ')} exited (${code}) before ready:\n${stderr}`)));
  });
}

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolveListening) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolveListening(true)));
    socket.once('error', () => resolveListening(false));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolveExit) => child.on('exit', (code) => resolveExit(code)));
}

async function expectNothingLeft(dir: string): Promise<void> {
  await eventually(`no process or data left for ${dir}`, async () => processesMentioning(dir).length === 0 && !existsSync(dir), 15_000);
}

describe('npm start (tools/start.ts)', () => {
  test('prints one export line when ready, applies crd/, cleans up on SIGTERM', async () => {
    const started = await startTool();
    try {
      expect(started.stdoutLines).toEqual([`export KUBECONFIG=${started.kubeconfigPath}`]);
      expect(started.kubeconfigPath.startsWith('/')).toBe(true);
      const kc = new KubeConfig();
      kc.loadFromFile(started.kubeconfigPath);
      const crds = (await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition()).items;
      expect(crds.length).toBeGreaterThan(0);
      for (const crd of crds) {
        expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
      }
      expect(processesMentioning(started.dir).length).toBeGreaterThanOrEqual(3);
    } finally {
      started.child.kill('SIGTERM');
    }
    expect(await exited(started.child)).toBe(0);
    await expectNothingLeft(started.dir);
  });

  test('a SIGKILLed parent leaves nothing behind (watchdog)', async () => {
    const started = await startTool();
    expect(processesMentioning(started.dir).length).toBeGreaterThanOrEqual(3);

    started.child.kill('SIGKILL');
    await exited(started.child);

    await expectNothingLeft(started.dir);
  });

  // npm passes SIGINT and SIGTERM to its script's process (the script execs node, so no `sh -c` is in
  // between to die and orphan it); on SIGKILL npm passes nothing, and start.ts sees its parent gone.
  test.each(['SIGTERM', 'SIGINT', 'SIGKILL'] as const)('%s to the npm process alone: npm start stops everything it started', async (signal) => {
    const started = await startTool(['npm', 'start'], true);
    const kc = new KubeConfig();
    kc.loadFromFile(started.kubeconfigPath);
    const apiserverPort = Number(new URL(kc.getCurrentCluster()!.server).port);
    expect(await listening(apiserverPort)).toBe(true);
    // The control plane's components and the operator (KUBECONFIG names the folder).
    expect(processesMentioning(started.dir).length).toBeGreaterThanOrEqual(4);
    started.child.kill(signal);
    await exited(started.child);
    await expectNothingLeft(started.dir);
    expect(await listening(apiserverPort)).toBe(false);
  });
});
