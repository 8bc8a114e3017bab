// One real node per machine (containerd's /run paths, the node's links and iptables chains): a flock
// on /run/appkind-realnode/lock, held by a tiny child that exits when this process's pipe closes, so
// the lock is released even when this process is SIGKILLed. kwok control planes take no lock.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { STATE_DIR } from './host-state.js';

const LOCK_FILE = join(STATE_DIR, 'lock');
const OWNER_FILE = join(STATE_DIR, 'owner');
// Prints a line once it holds the lock, then lives until its stdin (our pipe) closes.
const HOLDER = "process.stdout.write('locked\\n'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));";

export interface NodeLock {
  release(): void;
}

function owner(): string {
  try {
    return readFileSync(OWNER_FILE, 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

/**
 * Takes the machine-wide lock; when another run holds it, logs who and waits up to `timeoutMs`, then
 * fails naming the holder.
 */
export function acquireNodeLock(log: (line: string) => void, timeoutMs: number): Promise<NodeLock> {
  mkdirSync(STATE_DIR, { recursive: true });
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const args = ['-w', String(Math.max(1, Math.round(timeoutMs / 1000))), '-E', '75', LOCK_FILE, process.execPath, '-e', HOLDER];
  const child: ChildProcess = spawn('flock', args, { stdio: ['pipe', 'pipe', 'inherit'], env, detached: true });
  const waiting = setTimeout(() => log(`controlplane: another real node runs on this machine (${owner()}); waiting for it to stop (up to ${Math.round(timeoutMs / 1000)}s)`), 500);
  return new Promise((resolve, reject) => {
    const done = (): void => clearTimeout(waiting);
    child.on('error', (err) => {
      done();
      reject(new Error(`controlplane: cannot run flock for the real node's lock (${err.message}); apt-get install util-linux`));
    });
    child.on('exit', (code) => {
      done();
      reject(new Error(code === 75
        ? `controlplane: another real node still runs on this machine (${owner()}) after ${Math.round(timeoutMs / 1000)}s; only one can run at a time (stop it, or use the kwok default)`
        : `controlplane: the real node's lock holder exited (code ${code})`));
    });
    child.stdout?.once('data', () => {
      done();
      child.removeAllListeners('exit');
      writeFileSync(OWNER_FILE, `pid ${process.pid}, ${process.argv.slice(1).join(' ').slice(0, 200)}, since ${new Date().toISOString()}`);
      // The pipe must not keep this process alive; its closing is what releases the lock.
      if (child.stdin instanceof Socket) child.stdin.unref();
      if (child.stdout instanceof Socket) child.stdout.unref();
      child.unref();
      resolve({ release: () => child.stdin?.end() });
    });
  });
}
