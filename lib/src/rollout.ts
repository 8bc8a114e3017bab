/**
 * How a change of the kind (its settings, or the operator's own rendering) reaches the kind's running
 * apps: in waves of at most `maxConcurrent` apps, each wave started once the one before is Ready at the
 * new pod template. A change of one CR's own spec, and a new CR, go at once; so does every scale change.
 */
export interface RolloutOptions {
  /**
   * Most apps of the kind rolling to a new pod template at once: a number (`"5"`) or a percentage of
   * the kind's CRs (`"10%"`, rounded down, at least 1); `"100%"` rolls every app at once.
   * @default "10%"
   */
  readonly maxConcurrent?: string;
  /**
   * Seconds an app of a wave has to become Ready at the new template; past it, or at a kubelet failure
   * (ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError) or pods refused at admission, the
   * rollout stops until the kind's next change.
   * @default 300
   */
  readonly progressDeadlineSeconds?: number;
}
