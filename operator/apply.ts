import { KubernetesObject } from '@kubernetes/client-node';

/**
 * The first field (as a path like `spec.template.spec.containers[0].image`) whose value in `live`
 * differs from `desired`, or undefined when every field of `desired` already has the same value in
 * `live`. Fields the server or other managers added are ignored; lists must match element by
 * element. A live object with no difference needs no request at all.
 */
export function firstDifference(desired: unknown, live: unknown, path = ''): string | undefined {
  if (desired === undefined || desired === null) return undefined;
  // The server omits zero values of omitempty fields (minReadySeconds: 0), so absent means zero.
  if (live === undefined && isZero(desired)) return undefined;
  if (Array.isArray(desired)) {
    if (!Array.isArray(live) || live.length !== desired.length) return path || '.';
    for (let i = 0; i < desired.length; i++) {
      const d = firstDifference(desired[i], live[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (typeof desired === 'object') {
    if (typeof live !== 'object' || live === null || Array.isArray(live)) return path || '.';
    for (const [k, v] of Object.entries(desired as Record<string, unknown>)) {
      const d = firstDifference(v, (live as Record<string, unknown>)[k], path ? `${path}.${k}` : k);
      if (d) return d;
    }
    return undefined;
  }
  // An int-or-string field (a targetPort) may come back as the other type.
  const intOrString = (typeof desired === 'number' && typeof live === 'string') || (typeof desired === 'string' && typeof live === 'number');
  return desired === live || (intOrString && String(desired) === String(live)) ? undefined : path;
}

function isZero(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length === 0;
  return value === 0 || value === false || value === '';
}

/** True when every field of `desired` already has the same value in `live`. */
export function isSubset(desired: unknown, live: unknown): boolean {
  return firstDifference(desired, live) === undefined;
}

/** Why the object must be sent (`absent`, or the first field that differs), or undefined when it need not be. */
export function drift(desired: KubernetesObject, live: KubernetesObject | undefined): string | undefined {
  return live ? firstDifference(desired, live) : 'absent';
}
