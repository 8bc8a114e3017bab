// A tiny separate process that kills our children and removes our temp data if this process dies
// without running its exit handlers (SIGKILL, OOM, a crashed jest worker). It learns about children
// over a pipe; when the pipe closes (we died, or exited) it kills whatever is still registered.
import { spawn, type ChildProcess } from 'node:child_process';
import { Socket } from 'node:net';

// Plain CommonJS run with `node -e`, so it needs neither tsx nor a build step.
const script = `
const { rmSync } = require('node:fs');
const groups = new Set(); // pids, and process groups as negative ids
const dirs = new Set();
let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf('\\n')) >= 0) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    const space = line.indexOf(' ');
    const op = line.slice(0, space);
    const arg = line.slice(space + 1);
    if (op === '+pgid') groups.add(-Number(arg));
    else if (op === '-pgid') groups.delete(-Number(arg));
    else if (op === '+pid') groups.add(Number(arg));
    else if (op === '-pid') groups.delete(Number(arg));
    else if (op === '+dir') dirs.add(arg);
    else if (op === '-dir') dirs.delete(arg);
  }
});
process.stdin.on('end', () => {
  // Negative ids are process groups.
  for (const id of groups) { try { process.kill(id, 'SIGKILL'); } catch {} }
  // Give the kernel a moment to release the killed processes' open files before removing them.
  setTimeout(() => {
    for (const dir of dirs) { try { rmSync(dir, { recursive: true, force: true }); } catch {} }
    process.exit(0);
  }, 500);
});
`;

let watchdog: ChildProcess | undefined;

function ensureWatchdog(): ChildProcess {
  if (watchdog?.stdin?.writable) return watchdog;
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // tsx/jest loader flags are not needed and only slow it down
  watchdog = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'ignore', 'ignore'], detached: true, env });
  watchdog.unref();
  // The pipe must not keep this process alive; it only exists to be closed by our death.
  if (watchdog.stdin instanceof Socket) watchdog.stdin.unref();
  watchdog.stdin?.on('error', () => undefined);
  return watchdog;
}

function send(line: string): void {
  ensureWatchdog().stdin?.write(`${line}\n`);
}

/** The child was spawned `detached`, so its pid is its process group id. */
export const watchProcessGroup = (pgid: number): void => send(`+pgid ${pgid}`);
export const unwatchProcessGroup = (pgid: number): void => send(`-pgid ${pgid}`);

/**
 * Makes a child process die with this one even if this one is SIGKILLed (e.g. the operator that
 * `npm start` runs next to the control plane). Forgotten again once the child exits by itself.
 */
export function killWithThisProcess(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  send(`+pid ${pid}`);
  child.once('exit', () => send(`-pid ${pid}`));
}
export const watchDir = (dir: string): void => send(`+dir ${dir}`);
export const unwatchDir = (dir: string): void => send(`-dir ${dir}`);
