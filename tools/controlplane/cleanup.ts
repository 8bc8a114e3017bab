// Stops every live control plane when this process ends: on normal exit (synchronously, so only
// SIGKILL and rm are possible) and on SIGINT/SIGTERM (a graceful async stop, then the default
// action of the signal). A parent killed outright is covered by the watchdog instead.

export interface Stoppable {
  stop(): Promise<void>;
  /** Must not wait: called from process 'exit'. */
  killSync(): void;
}

const live = new Set<Stoppable>();
let installed = false;

export function track(item: Stoppable): void {
  installHandlers();
  live.add(item);
}

export function untrack(item: Stoppable): void {
  live.delete(item);
}

function installHandlers(): void {
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    for (const item of live) item.killSync();
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const handler = (): void => {
      process.off(signal, handler);
      void Promise.allSettled([...live].map((item) => item.stop())).then(() => {
        // If nobody else handles the signal, die of it as the default action would have.
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    };
    process.on(signal, handler);
  }
}
