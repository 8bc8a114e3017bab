import { KubernetesObject } from '@kubernetes/client-node';

/**
 * True when every field of `desired` already has the same value in `live`. Fields the server or
 * other managers added are ignored, lists must match element by element, so a live object that
 * holds all we would apply needs no request at all.
 */
export function isSubset(desired: unknown, live: unknown): boolean {
  if (desired === undefined || desired === null) return true;
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => isSubset(d, live[i]));
  }
  if (typeof desired === 'object') {
    if (typeof live !== 'object' || live === null || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(desired as Record<string, unknown>).every(([k, v]) => isSubset(v, l[k]));
  }
  // An int-or-string field (a targetPort) may come back as the other type.
  const intOrString = (typeof desired === 'number' && typeof live === 'string') || (typeof desired === 'string' && typeof live === 'number');
  return desired === live || (intOrString && String(desired) === String(live));
}

/** True when the object must be sent: absent, or some applied field differs from the live object. */
export function needsApply(desired: KubernetesObject, live: KubernetesObject | undefined): boolean {
  return !live || !isSubset(desired, live);
}
