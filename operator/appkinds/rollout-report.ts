// What an AppKind's status says of its kind's rollout to its apps (status.rollout and the
// RolloutStopped condition), paced: a moving rollout's counts at most every ROLLOUT_REFRESH_MS, its
// start, stop and end at once, and nothing once it settled (a restart counts the apps again silently).
import type { AppKind } from 'cdk8s-appkind';
import { rolloutCondition, RolloutSummary } from '../controller/waves.js';
import { canonical } from './status-writer.js';
import type { AppKindCondition, AppKindResource, AppKindRollout } from './types.js';

/** While its kind's rollout moves, status.rollout is written at most this often (its start, stop and end at once). */
const ROLLOUT_REFRESH_MS = 2000;
/** After a change of the served settings, how often and how long to look for the rollout starting, to write it at once. */
const ROLLOUT_START_POLL_MS = 250;
const ROLLOUT_START_MS = 10_000;

/** A rollout with apps in flight, waiting or failed, or stopped: not done. */
const going = (r: AppKindRollout) => r.inFlight > 0 || r.waiting > 0 || r.failed > 0 || r.stopped !== undefined;

export interface RolloutReportDeps {
  /** The rollout of a served kind's settings to its apps (Manager.rolloutSummary); without it, status shows none. */
  readonly rollout?: (kind: string) => RolloutSummary | undefined;
  /** CRs of a served kind in the cache (undefined before they are listed). */
  readonly resourceCount: (kind: string) => number | undefined;
  readonly now: () => Date;
  /** Now as metav1.Time has it, for lastTransitionTime. */
  readonly timestamp: () => string;
}

export interface RolloutReportOf {
  readonly status?: AppKindRollout;
  readonly condition?: AppKindCondition;
  /** Look again this soon: the rollout moves, or its start is awaited. */
  readonly refreshInMs?: number;
}

export class RolloutReport {
  /** When status.rollout of an AppKind was last given new counts (ms): a moving rollout's are paced. */
  private readonly written = new Map<string, number>();
  /** AppKinds whose served settings changed, until when their rollout is looked for (ms). */
  private readonly starting = new Map<string, number>();

  constructor(private readonly deps: RolloutReportDeps) {}

  /** The AppKind's served settings changed: its rollout is looked for soon, to be written as it starts. */
  changed(name: string): void {
    this.starting.set(name, this.deps.now().getTime() + ROLLOUT_START_MS);
  }

  /** The AppKind is gone or no longer served. */
  forget(name: string): void {
    this.written.delete(name);
    this.starting.delete(name);
  }

  /**
   * status.rollout and its RolloutStopped condition. The kind's rollout is written while it is not
   * done, as it finishes, and once every CR of the kind is counted in it; else the one written stays:
   * after a restart each app is counted again as it is reconciled, and numbers climbing back to what
   * status says already are no news worth a write.
   */
  of(ak: AppKindResource, kind: AppKind): RolloutReportOf {
    const name = ak.metadata!.name!;
    const nowMs = this.deps.now().getTime();
    const summary = this.deps.rollout?.(kind.kind);
    const stored = ak.status?.rollout;
    let status = stored;
    let refreshInMs: number | undefined;
    if (summary) {
      const { updated, inFlight, waiting, failed, failedApps, stopped } = summary;
      const now: AppKindRollout = { updated, inFlight, waiting, failed, failedApps, stopped };
      const counted = updated + inFlight + waiting + failed;
      const started = going(now) || counted === this.deps.resourceCount(kind.kind);
      const until = this.starting.get(name);
      if (until !== undefined && !started && nowMs < until) refreshInMs = ROLLOUT_START_POLL_MS;
      else this.starting.delete(name);
      if (started || (stored && going(stored) && counted > 0)) status = now;
      // Progress within a rollout that moves (not its start, stop or end) waits for its turn to be written.
      const progress = stored && going(stored) && going(now) && !!stored.stopped === !!now.stopped;
      const wait = (this.written.get(name) ?? -Infinity) + ROLLOUT_REFRESH_MS - nowMs;
      if (status !== stored && canonical(status) !== canonical(stored)) {
        if (progress && wait > 0) {
          status = stored;
          refreshInMs = Math.min(refreshInMs ?? wait, wait);
        } else {
          this.written.set(name, nowMs);
        }
      }
    }
    if (!status) return { refreshInMs };
    const moving = !status.stopped && (status.inFlight > 0 || status.waiting > 0);
    if (moving) refreshInMs = Math.min(refreshInMs ?? ROLLOUT_REFRESH_MS, ROLLOUT_REFRESH_MS);
    const { type, status: stopped, reason, message } = rolloutCondition(kind.kind, status);
    const before = ak.status?.conditions?.find((c) => c.type === type);
    const condition: AppKindCondition = {
      type,
      status: stopped,
      reason,
      message: message.slice(0, 32768),
      lastTransitionTime: before && before.status === stopped ? before.lastTransitionTime : this.deps.timestamp(),
      observedGeneration: ak.metadata?.generation,
    };
    return { status, condition, refreshInMs };
  }
}
