import { AppStatus } from './status.js';

/**
 * When to write a CR's status. The first status, a new observedGeneration, Ready or Degraded
 * flipping and a new refusal reason are written at once; changes in between (one more pod listed,
 * one more ready) are coalesced and written at most once per interval, counted from the last write,
 * which is the start of the rollout. The final status is never delayed: it flips Ready.
 */
export class StatusPacer {
  private readonly lastWrite = new Map<string, number>();

  constructor(private readonly intervalMs: number, private readonly now: () => number = Date.now) {}

  /** 0 to write now, else how long to wait before this change may be written. */
  delayMs(key: string, current: Partial<AppStatus> | undefined, next: AppStatus): number {
    if (this.intervalMs <= 0 || urgent(current, next)) return 0;
    const last = this.lastWrite.get(key);
    if (last === undefined) return 0; // not written by this process: no rollout to pace
    return Math.max(0, last + this.intervalMs - this.now());
  }

  wrote(key: string): void {
    this.lastWrite.set(key, this.now());
  }

  forget(key: string): void {
    this.lastWrite.delete(key);
  }
}

/** Condition reasons of an ordinary rollout in progress; any other new reason (a refusal) is news. */
const ROLLOUT_REASONS = new Set(['ReplicasNotReady', 'DeploymentMissing', 'RollingOut', 'RolloutComplete']);

/** A change a user or a tool waits for: never held back. */
export function urgent(current: Partial<AppStatus> | undefined, next: AppStatus): boolean {
  if (!current?.conditions?.length || current.observedGeneration !== next.observedGeneration) return true;
  if (current.nodePort !== next.nodePort || current.selector !== next.selector) return true;
  for (const c of next.conditions) {
    const before = current.conditions.find((p) => p.type === c.type);
    // Progressing turning False while Ready is still False is rollout progress: Ready's flip follows.
    if (!before || (before.status !== c.status && c.type !== 'Progressing')) return true;
    if (before.reason !== c.reason && !ROLLOUT_REASONS.has(c.reason)) return true;
    if (c.type === 'Degraded' && before.message !== c.message) return true;
  }
  return false;
}
