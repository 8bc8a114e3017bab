// When a CR's status is written: at once when something a user acts on changed, else coalesced.
import { AppStatus, ROLLOUT_REASONS } from './status.js';

/**
 * When to write a CR's status. Ready or Degraded flipping, a new refusal reason, a new NodePort and
 * a settled app's pods changing are written at once; changes in between (one more pod listed, one
 * more ready) are coalesced and written at most once per interval, counted from the last write,
 * which is the start of the rollout; each further progress write of the same rollout waits twice as
 * long (up to MAX_PROGRESS_INTERVAL_MS), so a long rollout of many CRs does not turn into a steady
 * stream of status writes.
 *
 * The first status of a rollout is coalesced with its end: a new CR's first status, and the status
 * of a new generation (an edit) whose rollout is ordinary, wait up to the interval, counted from
 * when this process first wanted to write them. A rollout that completes within the interval gets
 * a single status write, Ready=True of the new generation, instead of two (the generation at once,
 * then Ready): a mass edit of N CRs saves N CR writes and 2N watch events. Meanwhile the CR shows
 * its previous status, whose `observedGeneration` (and each condition's) says it is stale, which is
 * what `kubectl wait --for=condition=Ready` checks; a CR without status is not Ready to it either.
 * The final status is never delayed: it flips Ready.
 *
 * The interval is what one user watching one rollout needs; a change to many CRs at once (a new
 * default image, a mass edit) needs no such write per CR: each CR's stale `observedGeneration` already
 * tells kstatus and `kubectl wait` it is in progress, and the fleet's progress is the kind's to show
 * (the AppKind's status.rollout, the metrics). So the waits stretch with the number of rollouts whose
 * first status waits: about PROGRESS_WRITES_PER_INTERVAL progress writes per interval in all, however
 * many CRs roll, instead of one per CR when the rollouts outlast the interval, which is when the API
 * server is busiest. A lone slow rollout still shows within the interval.
 */
export class StatusPacer {
  private readonly lastWrite = new Map<string, { at: number; progress: number }>();
  /** CRs whose rollout's first status waits: when it was first computed (a further edit meanwhile does not restart the wait). */
  private readonly firstWanted = new Map<string, number>();

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** 0 to write now, else how long to wait before this change may be written (`isUrgent`: see urgent()). */
  delayMs(key: string, current: Partial<AppStatus> | undefined, next: AppStatus, isUrgent = urgent(current, next)): number {
    if (this.intervalMs <= 0) return 0;
    if (!current?.conditions?.length || ordinaryNewGeneration(current, next)) {
      if (news(next)) return 0;
      let since = this.firstWanted.get(key);
      if (since === undefined) this.firstWanted.set(key, (since = this.now()));
      return Math.max(0, since + this.intervalMs * this.stretch() - this.now());
    }
    this.firstWanted.delete(key);
    if (isUrgent) return 0;
    const last = this.lastWrite.get(key);
    if (last === undefined) return 0; // not written by this process: no rollout to pace
    return Math.max(0, last.at + this.progressInterval(last.progress) * this.stretch() - this.now());
  }

  /** The CR's status is already what it would write: no rollout status of it waits. */
  upToDate(key: string): void {
    this.firstWanted.delete(key);
  }

  /** How much longer than the interval waits are: 1 while few rollouts wait, more when many do. */
  private stretch(): number {
    return Math.max(1, this.firstWanted.size / PROGRESS_WRITES_PER_INTERVAL);
  }

  /** The interval before the next progress write, after `progress` of them in this rollout. */
  private progressInterval(progress: number): number {
    return Math.min(this.intervalMs * 2 ** progress, Math.max(this.intervalMs, MAX_PROGRESS_INTERVAL_MS));
  }

  /** A status was written; `wasUrgent` (a new generation, a flip) starts a new rollout's pacing. */
  wrote(key: string, wasUrgent = true): void {
    const progress = wasUrgent ? 0 : (this.lastWrite.get(key)?.progress ?? -1) + 1;
    this.lastWrite.set(key, { at: this.now(), progress });
    this.firstWanted.delete(key);
  }

  forget(key: string): void {
    this.lastWrite.delete(key);
    this.firstWanted.delete(key);
  }
}

/** About how many progress writes all rollouts at once get per interval (see StatusPacer). */
export const PROGRESS_WRITES_PER_INTERVAL = 10;

/** Progress writes of one rollout are spaced out up to this (or the interval, if longer), times the stretch. */
export const MAX_PROGRESS_INTERVAL_MS = 600_000;

/**
 * A first status worth writing at once: Ready, Degraded, Stalled, or a refusal instead of ordinary
 * progress. (Reconciling carries Ready's reason: it adds no news.)
 */
function news(next: AppStatus): boolean {
  return next.conditions.some(
    (c) =>
      (c.type === 'Ready' && c.status === 'True') ||
      (c.type === 'Degraded' && c.status === 'True') ||
      c.type === 'Stalled' ||
      (c.type !== 'Degraded' && !ROLLOUT_REASONS.has(c.reason)),
  );
}

/**
 * A new generation whose status is only the start of an ordinary rollout: no failure before or now,
 * no refusal, the same NodePort and selector (those are written at once). Its first status may wait
 * for the rollout's end, as a new CR's does.
 */
function ordinaryNewGeneration(current: Partial<AppStatus>, next: AppStatus): boolean {
  if (current.observedGeneration === next.observedGeneration) return false;
  if (current.nodePort !== next.nodePort || current.selector !== next.selector) return false;
  return !current.conditions?.some((c) => c.type === 'Degraded' && c.status === 'True');
}

/** A change a user or a tool waits for: never held back. */
export function urgent(current: Partial<AppStatus> | undefined, next: AppStatus): boolean {
  if (!current?.conditions?.length || current.observedGeneration !== next.observedGeneration) return true;
  if (current.nodePort !== next.nodePort || current.selector !== next.selector) return true;
  // Stalled coming or going is news; Reconciling follows Ready and Stalled, so it is never news itself
  // (nor is its absence from a status an earlier operator wrote).
  if (current.conditions.some((c) => c.type === 'Stalled') !== next.conditions.some((c) => c.type === 'Stalled')) return true;
  for (const c of next.conditions) {
    if (c.type === 'Reconciling') continue;
    const before = current.conditions.find((p) => p.type === c.type);
    // Progressing turning False while Ready is still False is rollout progress: Ready's flip follows.
    if (!before || (before.status !== c.status && c.type !== 'Progressing')) return true;
    if (before.reason !== c.reason && !ROLLOUT_REASONS.has(c.reason)) return true;
    if (c.type === 'Degraded' && before.message !== c.message) return true;
  }
  // A settled app's status is true to the cluster at once: pacing is for rollouts in progress. (Ready
  // can be written before the pod cache has seen the last pod come or go; the list catching up after
  // it is not progress to hold back.)
  if (
    next.conditions.some((c) => c.type === 'Ready' && c.status === 'True') &&
    (next.readyReplicas !== current.readyReplicas || next.replicas !== current.replicas || !sameList(next.nodes, current.nodes))
  )
    return true;
  return false;
}

const sameList = (a: readonly string[], b: readonly string[] | undefined): boolean =>
  a.length === (b?.length ?? -1) && a.every((x, i) => x === b![i]);
