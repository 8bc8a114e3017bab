import { AppKind, ImagePolicy } from 'cdk8s-appkind';
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
