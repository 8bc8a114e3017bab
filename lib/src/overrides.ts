/** What a CR may say about its environment variables (`spec.env`, merged into the kind's by name). */
export interface EnvOverride {
  /**
   * Variable names a CR may not set (the API server refuses them at admission).
   * @default none: any name
   */
  readonly deny?: string[];
}

/** What a CR may ask for in `spec.resources` (merged into the kind's resources quantity by quantity). */
export interface ResourcesOverride {
  /**
   * Largest CPU a CR may request or limit, as a Kubernetes quantity, e.g. `2` or `500m`.
   * @default no bound
   */
  readonly maxCpu?: string;
  /**
   * Largest memory a CR may request or limit, as a Kubernetes quantity, e.g. `1Gi`.
   * @default no bound
   */
  readonly maxMemory?: string;
}

/**
 * The fields a kind lets its CRs set beside `size`, `image`, `port` and `nodePort`. The CRD has exactly
 * these spec fields, so the API server refuses any other. Security context, host access and volumes
 * are never CR fields.
 */
export interface AppKindOverrides {
  /**
   * CRs may set `spec.args`, replacing the kind's args.
   * @default false
   */
  readonly args?: boolean;
  /**
   * CRs may set `spec.env`, merged into the kind's env by name (the CR's value wins).
   * @default none: CRs cannot set env
   */
  readonly env?: EnvOverride;
  /**
   * CRs may set `spec.envFrom`, added after the kind's.
   * @default false
   */
  readonly envFrom?: boolean;
  /**
   * CRs may set `spec.resources`, within these bounds.
   * @default none: CRs cannot set resources
   */
  readonly resources?: ResourcesOverride;
  /**
   * CRs may set `spec.podDisruptionBudget` (`minAvailable` or `maxUnavailable`), replacing the kind's:
   * the budget that fits depends on each CR's size.
   * @default false
   */
  readonly podDisruptionBudget?: boolean;
  /**
   * CRs may set `spec.serviceAccountName`.
   * @default false
   */
  readonly serviceAccountName?: boolean;
}
