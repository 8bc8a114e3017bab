// The one wait of the runtime: timers that never keep the process alive, ended at once by an abort.

/** Waits `ms`; an abort ends the wait at once, rejecting with the signal's reason. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }, ms).unref();
    function aborted(): void {
      clearTimeout(timer);
      reject(abortError(signal!));
    }
    if (signal?.aborted) aborted();
    else signal?.addEventListener('abort', aborted, { once: true });
  });
}

/** What a wait or request given up through its signal rejects with. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(`request aborted${reason === undefined ? '' : `: ${String(reason)}`}`);
}
