// What the reconciler refuses to apply for a CR, beyond what the CRD checks: images the kind does not
// allow, and specs outside the bounds the CRD states (a CRD installed by hand may lack its rules).
import { AppKind, AppKindCrd, ImagePolicy, ServiceType } from 'cdk8s-appkind';
import { AppResource } from '../kinds/render.js';
import { ReconcileFailure } from './status.js';

/**
 * Defence in depth for the kind's image policy: the generated CRD refuses a disallowed `spec.image`
 * at admission, but a CRD installed by hand (or from an older version) may lack that rule. A CR whose
 * image the kind does not allow is never applied; it gets this failure (Degraded, a Warning Event).
 */
export function imagePolicyFailure(kind: AppKind, cr: AppResource): ReconcileFailure | undefined {
  const image = cr.spec?.image;
  if (image === undefined) return undefined; // the kind's own image
  const policy = new ImagePolicy(kind.image, kind.allowedImages);
  if (policy.allows(image)) return undefined;
  return { reason: 'ImageNotAllowed', message: `image "${image}": ${policy.message()}` };
}

/** An integer from `min` to `max`, or why not. */
function intProblem(field: string, value: unknown, min: number, max: number): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    return `${field} ${JSON.stringify(value)} is not an integer from ${min} to ${max}`;
  return undefined;
}

/**
 * Defence in depth for every other bound the generated CRD states (a CRD installed by hand, from an
 * older version, or edited, may lack them): the name the children's names derive from, `spec` an
 * object, `spec.size` up to the kind's maximum, `spec.port`, `spec.nodePort` in the NodePort range,
 * `spec.image` a reference without white space. A CR outside them is never applied (InvalidSpec); the
 * override limits (reserved env names, resources) are render()'s to check (overrideProblems).
 */
export function specBoundsFailure(kind: AppKind, cr: AppResource): ReconcileFailure | undefined {
  const problems: string[] = [];
  const name = cr.metadata.name;
  if (name.length > AppKindCrd.MAX_NAME_LENGTH || !new RegExp(AppKindCrd.NAME_PATTERN).test(name))
    problems.push(`metadata.name "${name}" is not a DNS-1035 label of at most ${AppKindCrd.MAX_NAME_LENGTH} characters`);
  const spec: unknown = cr.spec;
  if (spec !== undefined && spec !== null && (typeof spec !== 'object' || Array.isArray(spec))) {
    problems.push(`spec is ${Array.isArray(spec) ? 'a list' : `a ${typeof spec}`}, not an object`);
  } else if (cr.spec) {
    const { size, port, nodePort, image } = cr.spec as Record<string, unknown>;
    problems.push(
      ...[
        intProblem('spec.size', size, 0, kind.maxSize ?? AppKindCrd.DEFAULT_MAX_SIZE),
        intProblem('spec.port', port, 1, 65535),
        kind.serviceType === ServiceType.CLUSTER_IP ? undefined : intProblem('spec.nodePort', nodePort, 30000, 32767),
      ].filter((p): p is string => p !== undefined),
    );
    if (image !== undefined && (typeof image !== 'string' || !/^\S+$/.test(image) || image.length > AppKindCrd.MAX_IMAGE_LENGTH))
      problems.push(
        `spec.image ${JSON.stringify(image).slice(0, 80)} is not an image reference of 1 to ${AppKindCrd.MAX_IMAGE_LENGTH} characters without white space`,
      );
  }
  if (problems.length === 0) return undefined;
  return {
    reason: 'InvalidSpec',
    message: `${problems.join('; ')}: the kind's CRD refuses this at admission; is the installed CRD the generated one?`,
  };
}
