// The real node leaves the machine as it found it: links, network namespaces, iptables/nftables,
// mounts, sysctls, cgroups and host paths compared before start and after stop, after a pod ran and
// answered on a localhost NodePort; a run that was SIGKILLed (`npm start -- --real-node`) is
// cleaned up by the next start; and SIGTERM to the npm process alone cleans up at once. Needs root
// and Linux (the real node's preconditions).
import { describe, expect, test } from '@jest/globals';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { leftoverHostState, STATE_DIR } from '../../tools/controlplane/node/host-state.js';
import { acquireNodeLock } from '../../tools/controlplane/node/lock.js';
import { NODE_LINK, POD_BRIDGE } from '../../tools/controlplane/node/network.js';
import { loadEchoStandIn } from '../../tools/echo-image.js';
import { eventually } from './cluster.js';
import { processesMentioning } from './controlplane-processes.js';
import { hostSnapshot, snapshotDifferences } from './host-snapshot.js';
import { getLocal, runEchoPod } from './real-node-pods.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const log = (line: string): void => void process.stderr.write(`${line}\n`);
const links = (): string[] => hostSnapshot().links;

describe('real node: host state', () => {
  test('start, a pod answering on a localhost NodePort, stop: the host is as before', async () => {
    const before = hostSnapshot();
    const cp = await ControlPlane.start({ realNode: true, log });
    let during: string[] = [];
    try {
      await loadEchoStandIn(cp, log);
      const nodePort = await runEchoPod(cp.kubeConfig(), 'default');
      await eventually('the echo pod answers on 127.0.0.1:<nodePort>', async () => (await getLocal(nodePort, '/api/echo?a=b')).status === 200, 60_000);
      // The snapshot sees what the node made (so "no difference" after stop means something).
      during = snapshotDifferences(before, hostSnapshot());
    } finally {
      await cp.stop();
    }
    expect(during).toEqual(expect.arrayContaining([`links: added ${NODE_LINK}`, `links: added ${POD_BRIDGE}`]));
    expect(during.some((d) => d.startsWith('iptables: added') && d.includes('KUBE-NODEPORTS'))).toBe(true);
    expect(during.some((d) => d.startsWith('mounts: added'))).toBe(true);
    expect(during.some((d) => d.startsWith('cgroups: added') && d.endsWith('/kubepods'))).toBe(true);
    expect(snapshotDifferences(before, hostSnapshot())).toEqual([]);
    expect(leftoverHostState()).toBeUndefined();
  }, 300_000);

  test('npm start -- --real-node SIGKILLed with a pod running: the next start cleans up after it', async () => {
    const before = hostSnapshot();
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'tools/start.ts'), '--real-node'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const kubeconfigPath = await exportLine(child);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    await runEchoPod(kc, 'default');
    const nodeDir = leftoverHostState()?.nodeDir ?? '';
    expect(nodeDir).toMatch(/^\/tmp\/appkind-node-/);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // The watchdog kills the components' process groups; the pod's shim and containers, the link,
    // the rules and mounts stay until the next start.
    await eventually('the state file outlives the killed run', async () => existsSync(join(STATE_DIR, 'state.json')), 5_000);
    expect(links()).toContain(NODE_LINK);
    expect(processesMentioning(nodeDir).length).toBeGreaterThan(0);

    const lines: string[] = [];
    const cp = await ControlPlane.start({ realNode: true, log: (line) => (lines.push(line), log(line)) });
    try {
      expect(lines.some((l) => l.includes('cleaning up after a real node that did not stop') && l.includes(nodeDir))).toBe(true);
      expect(existsSync(nodeDir)).toBe(false);
      expect(processesMentioning(nodeDir)).toEqual([]);
      // A fresh node works after the cleanup.
      const core = cp.kubeConfig().makeApiClient(CoreV1Api);
      expect((await core.listNode()).items.map((n) => n.metadata?.name)).toEqual([cp.realNode?.name]);
    } finally {
      await cp.stop();
    }
    expect(snapshotDifferences(before, hostSnapshot())).toEqual([]);
  }, 400_000);

  test('npm start -- --real-node, SIGTERM to the npm process alone with a pod running: the host is as before', async () => {
    // The host as it is with no real node running (another run's node would be gone after ours).
    const lock = await acquireNodeLock(log, 600_000);
    const before = hostSnapshot();
    lock.release();
    // A process group of its own, so the signal reaches npm alone (as from a supervisor or `timeout`).
    const npm = spawn('npm', ['start', '--', '--real-node'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, NODE_OPTIONS: '' } });
    const kc = new KubeConfig();
    kc.loadFromFile(await exportLine(npm));
    await runEchoPod(kc, 'default');
    const nodeDir = leftoverHostState()?.nodeDir ?? '';
    expect(nodeDir).toMatch(/^\/tmp\/appkind-node-/);
    expect(links()).toContain(NODE_LINK);

    // npm's own stderr (the start's progress lines), for a failure.
    npm.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    npm.kill('SIGTERM');
    expect(await new Promise((r) => npm.once('exit', r))).toBe(0);
    expect(processesMentioning(nodeDir)).toEqual([]);
    expect(existsSync(nodeDir)).toBe(false);
    expect(leftoverHostState()).toBeUndefined();
    expect(snapshotDifferences(before, hostSnapshot())).toEqual([]);
  }, 400_000);
});

/** Resolves with the kubeconfig path of the one `export KUBECONFIG=` line start.ts prints when ready. */
function exportLine(child: ChildProcess): Promise<string> {
  let stdout = '';
  let stderr = '';
  return new Promise((resolveLine, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^export KUBECONFIG=(.+)$/m.exec(stdout);
      if (match) resolveLine(match[1]);
    });
    child.on('exit', (code) => reject(new Error(`start.ts --real-node exited (${code}) before ready:\n${stderr.slice(-3000)}\n${readTail(stderr)}`)));
  });
}

function readTail(stderr: string): string {
  const logs = /log: (\S+)/.exec(stderr)?.[1];
  return logs && existsSync(logs) ? readFileSync(logs, 'utf8').slice(-2000) : '';
}
