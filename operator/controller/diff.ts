// How rendered and live objects differ: the first field that drifted, and the fields an apply would release.
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
  const intOrString =
    (typeof desired === 'number' && typeof live === 'string') || (typeof desired === 'string' && typeof live === 'number');
  return desired === live || (intOrString && String(desired) === String(live)) ? undefined : path;
}

function isZero(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length === 0;
  return value === 0 || value === false || value === '';
}

/**
 * `live` as an apply would give it back: with the zero values `desired` sets that the server omits
 * (`hostNetwork: false`), so applying it releases none of them; every other value is `live`'s.
 */
export function withOmittedZeros(desired: unknown, live: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(desired) || !isObject(live)) return live;
  const out: Record<string, unknown> = { ...live };
  for (const [k, v] of Object.entries(desired)) {
    if (k in live) out[k] = withOmittedZeros(v, live[k]);
    else if (isZero(v)) out[k] = v;
  }
  return out;
}

/** True when every field of `desired` already has the same value in `live`. */
export function isSubset(desired: unknown, live: unknown): boolean {
  return firstDifference(desired, live) === undefined;
}

/** Why the object must be sent (`absent`, or the first field that differs), or undefined when it need not be. */
export function drift(desired: KubernetesObject, live: KubernetesObject | undefined): string | undefined {
  return live ? firstDifference(desired, live) : 'absent';
}

/** A managedFields `fieldsV1` set: `f:<name>`, `k:<json key>`, `v:<json value>`, `i:<index>` and `.` entries. */
export interface FieldSet {
  readonly [entry: string]: FieldSet;
}

/** The field set `manager` owns by server-side apply in `obj`'s managedFields, if the entry is there. */
export function appliedFieldsOf(obj: KubernetesObject | undefined, manager: string): FieldSet | undefined {
  const entry = obj?.metadata?.managedFields?.find((m) => m.manager === manager && m.operation === 'Apply');
  return entry?.fieldsV1 as FieldSet | undefined;
}

/**
 * The first field (as a path) that `manager` owns in the live object but `desired` no longer gives, or
 * undefined when every owned field is still in `desired`. Applying `desired` then releases it, as a
 * server-side apply does: the server removes a field its last owner stops applying. Comparing only
 * `desired` against the live values (firstDifference) would never notice a field that stopped being
 * rendered, since the live object still has it.
 */
export function firstReleased(owned: FieldSet, desired: unknown, path = ''): string | undefined {
  for (const [entry, children] of Object.entries(owned)) {
    if (entry === '.') continue;
    const child = locate(entry, desired);
    const at = entry.startsWith('f:') ? (path ? `${path}.${entry.slice(2)}` : entry.slice(2)) : `${path}[${entry}]`;
    if (child === undefined) return at;
    const deeper = firstReleased(children, child, at);
    if (deeper) return deeper;
  }
  return undefined;
}

/** The part of `desired` a fieldsV1 entry names, or undefined when `desired` has no such part. */
function locate(entry: string, desired: unknown): unknown {
  const present = (v: unknown) => (v === null ? undefined : v);
  const kind = entry.slice(0, 2);
  const rest = entry.slice(2);
  if (kind === 'f:') {
    if (typeof desired !== 'object' || desired === null || Array.isArray(desired)) return undefined;
    return present((desired as Record<string, unknown>)[rest]);
  }
  if (!Array.isArray(desired)) return undefined;
  if (kind === 'i:') return present(desired[Number(rest)]);
  if (kind === 'v:') {
    const value = JSON.stringify(JSON.parse(rest));
    return desired.find((d) => JSON.stringify(d) === value);
  }
  if (kind === 'k:') {
    const key = JSON.parse(rest) as Record<string, unknown>;
    // A key field the server defaulted (a port's protocol) is in the entry but not in what we rendered.
    return desired.find(
      (d) =>
        typeof d === 'object' &&
        d !== null &&
        Object.entries(key).every(
          ([k, v]) => (d as Record<string, unknown>)[k] === undefined || String((d as Record<string, unknown>)[k]) === String(v),
        ),
    );
  }
  return desired; // an entry kind this code does not know: never a reason to write
}
