// Which CRD an AppKind gets: the kind's CRD as the construct renders it (every version it lists), with
// the labels that say whose it is. Whether the live CRD may change to it is the reconciler's check
// against the stored CRs (crd-change.ts), and moving them is migrations.ts's.
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { AppKind, AppKindApiCrd } from 'cdk8s-appkind';
import { createHash } from 'node:crypto';
import { crdObjects } from '../kinds/crd-yaml.js';
import type { AppKindResource } from './types.js';

/** Annotation holding the hash of the CRD the operator last applied: unchanged, it applies nothing. */
export const SPEC_HASH_ANNOTATION = `${AppKindApiCrd.GROUP}/spec-hash`;

/** What to apply for an AppKind. */
export interface CrdPlan {
  /** The CRD to apply (server-side apply); its labels and annotations are the operator's. */
  readonly crd: V1CustomResourceDefinition;
}

/** What a plan is made from. */
export interface CrdPlanInput {
  /** The AppKind object, as cached. */
  readonly appKind: AppKindResource;
  /** Its spec, validated: the kind to serve. */
  readonly kind: AppKind;
  /** The CRD as it is now (as cached: metadata, names, versions without their schemas, status), or undefined before it exists. */
  readonly live?: V1CustomResourceDefinition;
  /** The operator's name (app.kubernetes.io/managed-by), its field manager. */
  readonly managedBy: string;
}

/** Decides the CRD of an AppKind (its versions as the kinds file's CRDs have them). */
export type CrdPlanner = (input: CrdPlanInput) => CrdPlan;

/** The CRD of the kind with the AppKind's labels and the hash of the rest. */
export const planCrd: CrdPlanner = ({ appKind, kind, managedBy }) => ({
  crd: labelled(crdObjects([kind])[0] as unknown as V1CustomResourceDefinition, appKind, managedBy),
});

/** `crd` carrying whose it is (the contract's labels) and the hash of what the operator applies. */
export function labelled(crd: V1CustomResourceDefinition, appKind: AppKindResource, managedBy: string): V1CustomResourceDefinition {
  const labels = {
    ...crd.metadata?.labels,
    [AppKindApiCrd.APPKIND_LABEL]: appKind.metadata!.name!,
    'app.kubernetes.io/managed-by': managedBy,
  };
  const body = { ...crd, metadata: { ...crd.metadata, labels } };
  const hash = createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 16);
  return { ...body, metadata: { ...body.metadata, annotations: { ...crd.metadata?.annotations, [SPEC_HASH_ANNOTATION]: hash } } };
}

/** Whether the live CRD already is what the plan applies. */
export function applied(plan: CrdPlan, live: V1CustomResourceDefinition | undefined): boolean {
  return !!live && live.metadata?.annotations?.[SPEC_HASH_ANNOTATION] === plan.crd.metadata?.annotations?.[SPEC_HASH_ANNOTATION];
}
