// The shape of the benchmark's results (bench/results.json): what a run measures, apart from the tables made of it.

/** `verb resource[/subresource]` -> requests. */
export type RequestCounts = Record<string, number>;

export interface FloorRun {
  readonly createSeconds: number;
  readonly scaleSeconds: number;
  /** Every Deployment re-applied with the kind's new image, until all rolled out. */
  readonly rolloutSeconds?: number;
  /** kube-apiserver CPU from the first create until every app is scaled and ready. */
  readonly apiserverCpuSeconds: number;
  /**
   * CPU seconds over the same window of every process of the run: each control-plane component,
   * the operator (none in the floor's run), the bench itself, and their total.
   */
  readonly cpuSecondsByProcess?: Record<string, number>;
  /** When the bench's last request of the phase was answered (the rest is waiting for convergence). */
  readonly sentSeconds?: { readonly create: number; readonly scale: number };
  readonly requests: { readonly create: RequestCounts; readonly scale: RequestCounts; readonly rollout?: RequestCounts };
  /** Writes to the API server per app in each phase, by every client (writesPerApp). */
  readonly writesPerApp?: WritesPerApp;
}

export interface WritesPerApp { readonly create: number; readonly scale: number; readonly rollout?: number }

export interface OperatorRun extends FloorRun {
  /** Operator CPU over the same window as apiserverCpuSeconds. */
  readonly cpuSeconds: number;
  /** The operator's /metrics over create and scale: reconciles, their mean time, the mean wait in the work queue, the most keys queued (sampled each second). */
  readonly queue?: { readonly reconciles: number; readonly reconcileMsMean: number; readonly queueWaitMsMean: number; readonly mostQueued: number };
  /** The same over the edits (without the sampled depth): what an edit's latency was spent on. */
  readonly editsQueue?: { readonly reconciles: number; readonly reconcileMsMean: number; readonly queueWaitMsMean: number };
  /** Operator CPU from cache sync to the end of the steady state (edits included). */
  readonly cpuTotalSeconds: number;
  readonly rssMiB: { readonly idle: number; readonly afterRun: number; readonly peak: number };
  /** V8 heap in use after the steady state (nodejs_heap_size_used_bytes). */
  readonly heapUsedMiB?: number;
  readonly editLatencyMs: { readonly count: number; readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  readonly statusPatchesPerCr: { readonly create: number; readonly scale: number; readonly rollout?: number };
  readonly steadyState: { readonly seconds: number; readonly writes: number; readonly reconciles: number };
  /**
   * The operator restarted with a new default image in the kind's settings: from the restart until
   * every CR shows the rollout (Ready back to True after the restart) and runs the new image.
   */
  readonly rollout?: {
    readonly seconds: number; readonly image: string; readonly operatorCpuSeconds: number; readonly apiserverCpuSeconds: number;
    /** The most Deployments rolling at once (at the new image, not every replica updated and ready), from their status every 200 ms. */
    readonly mostRolling?: number;
    /** With --waves: the kind's rollout.maxConcurrent, and the most apps in flight the operator's /metrics showed (sampled each second). */
    readonly maxConcurrent?: string; readonly mostInFlight?: number;
  };
  /** From the operator process's spawn until /readyz passed (every cache synced). */
  readonly startSeconds?: number;
  /** Restarted on the N converged CRs: from spawn until every CR was checked, and its writes meanwhile (Leases left out). */
  readonly restart?: Restart;
  /** --unrelated: the Deployments and Services of no CR created before the operator started, and how long that took. */
  readonly unrelated?: { readonly count: number; readonly createdSeconds: number };
  readonly exitCode?: number | null;
}

/**
 * The controller-runtime (Go) reference operator (bench/go-operator/, `--go`), measured like the
 * operator on its own fresh control plane: create and scale, its cost and its requests.
 */
export interface GoOperatorRun {
  readonly createSeconds: number;
  readonly scaleSeconds: number;
  /** kube-apiserver CPU from the first create until every CR is scaled and converged. */
  readonly apiserverCpuSeconds: number;
  /** The Go operator's CPU over the same window. */
  readonly cpuSeconds: number;
  /** Every process's CPU over the same window, as FloorRun's. */
  readonly cpuSecondsByProcess?: Record<string, number>;
  readonly rssMiB: { readonly idle: number; readonly peak: number };
  readonly requests: { readonly create: RequestCounts; readonly scale: RequestCounts };
  readonly writesPerApp?: WritesPerApp;
  readonly statusPatchesPerCr: { readonly create: number; readonly scale: number };
  /** The CR whose Deployment and Service were checked to be render()'s, field by field. */
  readonly sameChildrenAs: string;
  readonly workers: number;
  /** Restarted on the N converged CRs, timed as the operator's restart. */
  readonly restart?: Restart;
}

/**
 * An operator restarted on N converged CRs: seconds from its spawn until its caches
 * were synced and every CR checked (controller_runtime_reconcile_total >= N, work queue empty), and
 * the writes it made meanwhile.
 */
export interface Restart { readonly seconds: number; readonly writes: number }

/** The settings one bench command ran with. */
export interface BenchSettings {
  readonly size: number;
  readonly concurrency: number;
  readonly edits: number;
  readonly steadySeconds: number;
  /** --repeat K: each N run K times (absent: once). */
  readonly repeat?: number;
  /** The kind's new default image the operator is restarted with for the rollout phase; none when skipped. */
  readonly rolloutImage?: string;
  /** With --waves: the kind's rollout.maxConcurrent in the rollout phase (without it, 100%: every app at once). */
  readonly rolloutMaxConcurrent?: string;
  readonly operator: { readonly workers: number; readonly statusIntervalMs: number };
  /** --unrelated K: the operator also ran with K unrelated Deployments and K Services in other namespaces. */
  readonly unrelated?: number;
}

export interface BenchRun {
  readonly n: number;
  /** When and how this N was run (runs of several commands are kept side by side, one per N). */
  readonly date: string;
  readonly command: string;
  /** `git describe --always --dirty` of the code measured. */
  readonly commit: string;
  readonly settings: BenchSettings;
  /** 1-, 5- and 15-minute load averages before the floor and after the operator run. */
  readonly loadAverage: { readonly start: number[]; readonly after: number[] };
  readonly floor: FloorRun;
  /** The CR floor (absent with --no-cr-floor): a plain client doing what any CR-based operator must. */
  readonly crFloor?: FloorRun;
  readonly operator: OperatorRun;
  /** With --go: the Go reference operator, after the operator. */
  readonly goOperator?: GoOperatorRun;
  /** With --unrelated K: the operator's run again (no rollout) with K unrelated Deployments and Services. */
  readonly withUnrelated?: OperatorRun;
  /** With --repeat K (K > 1): every repetition, oldest first; floor, operator and ratios above are the last one's. */
  readonly repetitions?: Repetition[];
  /** With --repeat K (K > 1): the median and range of each ratio over the repetitions. */
  readonly medians?: RatioMedians;
  /** operator / floor of the same run; `go`: Go operator / the same floor. */
  readonly ratios: {
    readonly create: number; readonly scale: number; readonly rollout?: number; readonly apiserverCpu: number;
    /** CPU of every process of the run (control plane, operator, bench) over create and scale. */
    readonly allCpu?: number;
    readonly go?: { readonly create: number; readonly scale: number; readonly apiserverCpu: number; readonly allCpu?: number };
    /** operator / CR floor of the same run. */
    readonly crFloor?: { readonly create: number; readonly scale: number; readonly apiserverCpu: number; readonly allCpu?: number };
    /** With --unrelated: the operator's run with the unrelated objects over the run without (same code, same N). */
    readonly unrelated?: {
      readonly rssIdle: number; readonly rssPeak: number; readonly cpu: number; readonly start: number;
      readonly editP50: number; readonly editP99: number; readonly create: number; readonly scale: number;
    };
  };
}

/** One repetition of an N (`--repeat K`): its own floor and operator figures and ratios. */
export interface Repetition {
  readonly date: string;
  readonly loadAverage: { readonly start: number[]; readonly after: number[] };
  readonly floor: { readonly createSeconds: number; readonly scaleSeconds: number; readonly rolloutSeconds?: number; readonly apiserverCpuSeconds: number };
  readonly operator: {
    readonly createSeconds: number; readonly scaleSeconds: number; readonly rolloutSeconds?: number; readonly apiserverCpuSeconds: number;
    readonly cpuSeconds: number; readonly editP99Ms: number; readonly statusPatchesPerCrScaled: number;
    /** Writes and reconciles in the steady state. */
    readonly steadyState?: { readonly writes: number; readonly reconciles: number };
    readonly rssMiB?: { readonly idle: number; readonly peak: number };
    readonly restart?: Restart;
  };
  readonly crFloor?: { readonly createSeconds: number; readonly scaleSeconds: number; readonly apiserverCpuSeconds: number };
  readonly goOperator?: {
    readonly createSeconds: number; readonly scaleSeconds: number; readonly apiserverCpuSeconds: number;
    readonly rssMiB?: { readonly idle: number; readonly peak: number }; readonly restart?: Restart;
  };
  /** With --unrelated: the operator's run with the unrelated objects. */
  readonly withUnrelated?: { readonly startSeconds?: number; readonly rssMiB: { readonly idle: number; readonly peak: number }; readonly cpuSeconds: number; readonly editP99Ms: number };
  readonly ratios: BenchRun['ratios'];
}

/** The median of each ratio over an N's repetitions, and their range. */
export interface RatioMedians {
  readonly runs: number;
  readonly create: Spread; readonly scale: Spread; readonly rollout?: Spread; readonly apiserverCpu: Spread; readonly allCpu?: Spread;
  readonly go?: { readonly create: Spread; readonly scale: Spread; readonly apiserverCpu: Spread; readonly allCpu?: Spread };
  /** operator / CR floor. */
  readonly crFloor?: { readonly create: Spread; readonly scale: Spread; readonly apiserverCpu: Spread; readonly allCpu?: Spread };
  /** With --unrelated: with / without the unrelated objects. */
  readonly unrelated?: { readonly rssIdle: Spread; readonly rssPeak: Spread; readonly cpu: Spread; readonly start: Spread; readonly editP99: Spread };
}
export interface Spread { readonly median: number; readonly min: number; readonly max: number }

export interface BenchResults {
  /** The last write. */
  readonly date: string;
  readonly machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string; kubernetes: string };
  /** One per N, the latest run of each. */
  readonly runs: BenchRun[];
  /** `--waves` runs, one per N, the latest of each: the rollout phase in the kind's waves. */
  readonly wavesRuns?: BenchRun[];
}
