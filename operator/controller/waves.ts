// A kind's change reaching its running apps in waves: per kind, which apps roll to the new pod template
// now (at most maxConcurrent), which wait their turn, which failed and stopped the rollout. The
// reconciler asks for a turn when a kind-level change would roll an app and reports what it saw after.
import { createHash } from 'node:crypto';
import { AppKind, RolloutOptions } from 'cdk8s-appkind';

export const DEFAULT_MAX_CONCURRENT = '10%';
export const DEFAULT_PROGRESS_DEADLINE_SECONDS = 300;

/** Condition reasons of an app waiting for its kind's rollout (Progressing=True). */
export const WaveReason = {
  Waiting: 'WaitingForKindRollout',
  Stopped: 'KindRolloutStopped',
} as const;

/** Where one app of a kind stands in the kind's rollout. */
export type WaveState = 'updated' | 'inFlight' | 'waiting' | 'failed';

/** What the kind's status (AppKind) and metrics show of its rollout. */
export interface RolloutSummary {
  /** The kind settings being rolled out: a short hash of them (rollout settings left out). */
  readonly template: string;
  /** Apps at the new pod template (rolled by a wave, changed by their own spec, or never affected). */
  readonly updated: number;
  /** Apps of the current wave, rolling and not Ready yet. */
  readonly inFlight: number;
  /** Apps whose pod template the change would change, waiting for a turn (or for a fix, once stopped). */
  readonly waiting: number;
  /** Apps of a wave that did not become Ready at the new template. */
  readonly failed: number;
  /** The failed apps, `namespace/name (reason)`. */
  readonly failedApps: string[];
  /** Why the rollout stopped; absent while it goes on (or is done). */
  readonly stopped?: string;
}

/** What the reconciler saw of an app it let roll or hold, after applying and computing its status. */
export interface AppOutcome {
  /** The live Deployment holds the new pod template. */
  readonly atTarget: boolean;
  /** The CR is Ready (at the template it holds). */
  readonly ready: boolean;
  /**
   * Why the pods of its turn (since `since`, ms since the epoch) cannot start (a kubelet failure, pods
   * refused at admission), if they cannot: a failure of the template before, not gone yet, is not its.
   */
  readonly failure?: (since: number) => string | undefined;
}

/** A kind's settings that make its pod template: a change of `rollout` alone rolls nothing. */
function templateSettings(kind: AppKind): AppKind {
  return { ...kind, rollout: undefined };
}

function revisionOf(kind: AppKind): string {
  return createHash('sha256')
    .update(JSON.stringify(templateSettings(kind)))
    .digest('hex')
    .slice(0, 10);
}

/** `maxConcurrent` of `total` apps: a number, or a percentage rounded down, at least 1. */
export function maxConcurrentOf(rollout: RolloutOptions | undefined, total: number): number {
  const value = rollout?.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  const percent = /^([0-9]+)%$/.exec(value);
  const n = percent ? Math.floor((total * Number(percent[1])) / 100) : Number(value);
  return Math.max(1, Number.isFinite(n) ? n : 1);
}

interface AppEntry {
  state: WaveState;
  /** When it was let roll (inFlight): its deadline counts from here. */
  since?: number;
  reason?: string;
}

/** One kind's rollout of its current settings. */
class KindRollout {
  readonly apps = new Map<string, AppEntry>();
  stopped?: string;

  constructor(
    public settings: AppKind,
    /** The settings before the change being rolled: what held apps still run. */
    readonly previous: AppKind | undefined,
  ) {}

  get template(): string {
    return revisionOf(this.settings);
  }

  count(state: WaveState): number {
    let n = 0;
    for (const e of this.apps.values()) if (e.state === state) n++;
    return n;
  }
}

/** The answer to an app whose pod template a kind-level change would change. */
export type Turn = 'roll' | 'wait';

export interface KindWavesOptions {
  /** How many CRs a kind has now (the base of a percentage). */
  readonly total: (kind: string) => number;
  /** Apps to reconcile again: their turn came, or the rollout stopped (their condition says so). */
  readonly wake: (keys: string[]) => void;
  /** The rollout of `kind` stopped, and why (the failed apps named): told once per stop. */
  readonly stopped?: (kind: string, reason: string) => void;
  readonly now?: () => number;
}

/**
 * The rollouts of every served kind. Kept in memory by the reconciler: a restart forgets the previous
 * settings and the failures, so a change still in progress restarts its waves (held apps keep the
 * template their Deployment holds; a stopped rollout's first wave fails again and stops it again).
 */
export class KindWaves {
  private readonly kinds = new Map<string, KindRollout>();
  private readonly now: () => number;

  constructor(private readonly opts: KindWavesOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** The kind's settings changed: a new rollout from `before` to `after`, unless only `rollout` changed. */
  kindChanged(before: AppKind, after: AppKind): void {
    const current = this.kinds.get(after.kind);
    if (current && revisionOf(before) === revisionOf(after)) {
      current.settings = after;
      this.wakeFreeSlots(after.kind, current);
      return;
    }
    const waiting = current ? [...current.apps].filter(([, e]) => e.state !== 'updated').map(([k]) => k) : [];
    this.kinds.set(after.kind, new KindRollout(after, before));
    // Apps held or failed by the rollout before: the new one decides for them.
    if (waiting.length) this.opts.wake(waiting);
  }

  /** The kind is no longer served. */
  kindRemoved(kind: string): void {
    this.kinds.delete(kind);
  }

  /** The settings the apps not rolled yet were rendered with, when this process saw the change. */
  previous(kind: string): AppKind | undefined {
    return this.kinds.get(kind)?.previous;
  }

  /**
   * `key`'s pod template would change by a kind-level change: roll now (a free slot, or already
   * let roll by this rollout), or wait (the wave is full, or the rollout stopped).
   */
  turn(kind: AppKind, key: string): Turn {
    const rollout = this.rolloutOf(kind);
    // Settings the rollout is not of (a reconcile begun before a change): the app keeps its template.
    if (rollout.settings !== kind) return 'wait';
    const entry = rollout.apps.get(key);
    if (entry && entry.state !== 'waiting') return 'roll';
    if (!rollout.stopped && rollout.count('inFlight') < maxConcurrentOf(rollout.settings.rollout, this.opts.total(kind.kind))) {
      rollout.apps.set(key, { state: 'inFlight', since: this.now() });
      return 'roll';
    }
    if (!entry) rollout.apps.set(key, { state: 'waiting' });
    return 'wait';
  }

  /** Whether `key` waits for its kind's rollout, and why (a condition reason and message). */
  waitingReason(kind: AppKind, key: string): { reason: string; message: string } | undefined {
    const rollout = this.kinds.get(kind.kind);
    if (rollout?.apps.get(key)?.state !== 'waiting') return undefined;
    if (rollout.stopped)
      return {
        reason: WaveReason.Stopped,
        message: `the ${kind.kind} rollout stopped: ${rollout.stopped}; this app keeps its pod template until the kind changes again`,
      };
    const max = rollout.settings.rollout?.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
    return {
      reason: WaveReason.Waiting,
      message: `the ${kind.kind} settings changed; this app waits its turn (at most ${max} of the kind's apps roll at once)`,
    };
  }

  /**
   * What the reconciler saw of `key` after applying; returns how long until its deadline when it is
   * in flight and not Ready yet (reconcile it again then), else undefined.
   */
  observe(kind: AppKind, key: string, outcome: AppOutcome): { deadlineInMs?: number; failed?: string } {
    const rollout = this.rolloutOf(kind);
    // A reconcile that began with the kind's settings before a change saw the template before it.
    if (rollout.settings !== kind) return {};
    const entry = rollout.apps.get(key);
    if (!outcome.atTarget) return {};
    if (entry?.state !== 'inFlight') {
      // At the new template by its own change, or never affected; a failed app that recovered counts too.
      if (entry?.state !== 'failed' || outcome.ready) rollout.apps.set(key, { state: 'updated' });
      // A woken app that needs no turn any more (its own edit got there first) passes its turn on.
      if (entry?.state === 'waiting') this.wakeFreeSlots(kind.kind, rollout);
      return {};
    }
    if (outcome.ready) {
      rollout.apps.set(key, { state: 'updated' });
      this.wakeFreeSlots(kind.kind, rollout);
      return {};
    }
    const deadlineMs = (rollout.settings.rollout?.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_SECONDS) * 1000;
    const left = entry.since! + deadlineMs - this.now();
    const reason = outcome.failure?.(entry.since!) ?? (left <= 0 ? `not Ready within ${deadlineMs / 1000} s` : undefined);
    if (!reason) return { deadlineInMs: left };
    rollout.apps.set(key, { state: 'failed', reason });
    const first = !rollout.stopped;
    this.stop(rollout);
    if (first) this.opts.stopped?.(kind.kind, rollout.stopped!);
    return { failed: reason };
  }

  /** `key` is gone: its slot, if it had one, goes to the next app. */
  forget(kind: string, key: string): void {
    const rollout = this.kinds.get(kind);
    if (!rollout?.apps.delete(key)) return;
    this.wakeFreeSlots(kind, rollout);
  }

  /** The kind's rollout as its status and metrics show it. */
  summary(kind: AppKind): RolloutSummary {
    const rollout = this.kinds.get(kind.kind);
    if (!rollout) return { template: revisionOf(kind), updated: 0, inFlight: 0, waiting: 0, failed: 0, failedApps: [] };
    return {
      template: rollout.template,
      updated: rollout.count('updated'),
      inFlight: rollout.count('inFlight'),
      waiting: rollout.count('waiting'),
      failed: rollout.count('failed'),
      failedApps: failedAppsOf(rollout),
      ...(rollout.stopped ? { stopped: rollout.stopped } : {}),
    };
  }

  /** Every served kind's summary that this process has seen apps of. */
  summaries(): { kind: string; summary: RolloutSummary }[] {
    return [...this.kinds.values()].map((r) => ({ kind: r.settings.kind, summary: this.summary(r.settings) }));
  }

  private rolloutOf(kind: AppKind): KindRollout {
    let rollout = this.kinds.get(kind.kind);
    // The kind as served at start: its apps' templates may differ by the operator's own rendering.
    if (!rollout) this.kinds.set(kind.kind, (rollout = new KindRollout(kind, undefined)));
    return rollout;
  }

  private stop(rollout: KindRollout): void {
    const first = !rollout.stopped;
    rollout.stopped = `${failedAppsOf(rollout).join(', ')} did not become Ready at the new pod template; fix or revert the kind's settings`;
    // The waiting apps' condition says the rollout stopped (once, at the stop; none per tick).
    if (first) this.opts.wake([...rollout.apps].filter(([, e]) => e.state === 'waiting').map(([k]) => k));
  }

  private wakeFreeSlots(kind: string, rollout: KindRollout): void {
    if (rollout.stopped) return;
    const free = maxConcurrentOf(rollout.settings.rollout, this.opts.total(kind)) - rollout.count('inFlight');
    if (free <= 0) return;
    const next = [...rollout.apps].filter(([, e]) => e.state === 'waiting').slice(0, free);
    if (next.length) this.opts.wake(next.map(([k]) => k));
  }
}

/** `namespace/name (reason)` of each failed app; a key is `Kind/namespace/name`. */
function failedAppsOf(rollout: KindRollout): string[] {
  return [...rollout.apps]
    .filter(([, e]) => e.state === 'failed')
    .map(([key, e]) => `${key.split('/').slice(1).join('/')} (${e.reason})`)
    .sort();
}

/**
 * The kind's condition of its rollout, for the status of the kind (AppKind) beside its summary:
 * `RolloutStopped` True with the failed apps named while a failing wave holds the rollout, else False.
 * Its message has no counts, so it changes only when the rollout stops or starts again.
 */
export function rolloutCondition(
  kind: string,
  summary: RolloutSummary,
): { type: 'RolloutStopped'; status: 'True' | 'False'; reason: string; message: string } {
  if (summary.stopped)
    return {
      type: 'RolloutStopped',
      status: 'True',
      reason: WaveReason.Stopped,
      message: `the ${kind} rollout stopped: ${summary.stopped}`,
    };
  return { type: 'RolloutStopped', status: 'False', reason: 'RollingInWaves', message: `changes of ${kind} roll out in waves` };
}
