// One control-plane process: spawned in its own process group (so signals reach any children it
// forks), output appended to a log file, registered with the watchdog, stoppable and restartable.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { unwatchProcessGroup, watchProcessGroup } from './watchdog.js';

export type ComponentName =
  | 'etcd'
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kwok'
  | 'containerd'
  | 'kubelet'
  | 'kube-proxy'
  | 'metrics-server';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class Component {
  private child?: ChildProcess;
  private exitPromise?: Promise<ExitInfo>;
  /** Set once the current process has exited; a stop() we asked for does not count as a failure. */
  exitInfo?: ExitInfo;

  constructor(
    readonly name: ComponentName,
    private readonly binary: string,
    private readonly args: readonly string[],
    readonly logPath: string,
    /** Extra environment on top of this process's. */
    private readonly env?: NodeJS.ProcessEnv,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.exitInfo === undefined;
  }

  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  start(): void {
    if (this.running) throw new Error(`controlplane: ${this.name} is already running`);
    const log = openSync(this.logPath, 'a');
    try {
      this.exitInfo = undefined;
      const env = this.env ? { ...process.env, ...this.env } : undefined;
      const child = spawn(this.binary, this.args, { stdio: ['ignore', log, log], detached: true, env });
      this.child = child;
      this.exitPromise = new Promise((resolve) => {
        child.on('error', () => resolve(this.markExited(child, { code: null, signal: null })));
        child.on('exit', (code, signal) => resolve(this.markExited(child, { code, signal })));
      });
      if (child.pid !== undefined) watchProcessGroup(child.pid);
    } finally {
      closeSync(log); // the child holds its own copy of the descriptor
    }
  }

  private markExited(child: ChildProcess, info: ExitInfo): ExitInfo {
    if (this.child === child) this.exitInfo = info;
    if (child.pid !== undefined) unwatchProcessGroup(child.pid);
    return info;
  }

  /** SIGTERM the group, then SIGKILL after `graceMs`. Resolves once the process is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || !this.exitPromise || this.exitInfo) return;
    this.signalGroup(child, 'SIGTERM');
    const timer = setTimeout(() => this.signalGroup(child, 'SIGKILL'), graceMs);
    try {
      await this.exitPromise;
    } finally {
      clearTimeout(timer);
    }
    // Reap anything the component forked that outlived it.
    this.signalGroup(child, 'SIGKILL');
  }

  /** For synchronous exit handlers: no waiting possible, so kill outright. */
  killSync(): void {
    if (this.child && !this.exitInfo) this.signalGroup(this.child, 'SIGKILL');
  }

  private signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  }

  /** Last lines of the log, for error messages. */
  logTail(lines = 25): string {
    try {
      return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log written)';
    }
  }

  /** "exited (code 1)"; the caller adds the component's name. */
  describeExit(): string {
    if (!this.exitInfo) return 'is running';
    const { code, signal } = this.exitInfo;
    return `exited (${signal ? `signal ${signal}` : `code ${code}`})`;
  }
}
