// The AppKind object as the operator reads and writes it (appkind.io/v1alpha1, cluster-scoped).
import type { KubernetesObject } from '@kubernetes/client-node';
import type { RolloutSummary } from '../controller/waves.js';

/** A status condition (metav1.Condition). */
export interface AppKindCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

/** Stored objects moving to the storage version. */
export interface AppKindMigration {
  readonly version: string;
  readonly migrated: number;
  readonly total: number;
}

/**
 * The kind's rollout of its settings to its running apps: the one going on, or the last one as it
 * finished. The summary of waves.ts without its template hash (the settings are the spec's).
 */
export type AppKindRollout = Omit<RolloutSummary, 'template'>;

/** status of an AppKind. */
export interface AppKindStatus {
  readonly observedGeneration?: number;
  readonly conditions?: AppKindCondition[];
  readonly crd?: string;
  readonly servedVersions?: string[];
  readonly storageVersion?: string;
  readonly storedVersions?: string[];
  readonly resources?: number;
  readonly migration?: AppKindMigration;
  readonly rollout?: AppKindRollout;
}

/** An AppKind object: spec is one kind of the kinds file plus deletionPolicy. */
export interface AppKindResource extends KubernetesObject {
  spec?: Record<string, unknown> & { deletionPolicy?: 'Retain' | 'Delete' };
  status?: AppKindStatus;
}
