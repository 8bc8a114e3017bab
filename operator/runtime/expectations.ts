// Objects this process wrote (created or changed) that its caches have not shown yet (client-go's
// "expectations"), so a reconcile meanwhile compares with what the write returned instead of writing
// again: another event of the same CR (its own status write watched back first) must not re-apply a
// Deployment whose update the Deployments' watch has not delivered yet.
import { KubernetesObject } from '@kubernetes/client-node';
import { refKey, refOf } from './ref.js';

/**
 * Whether `a` is an older version of the object than `b`. Resource versions are etcd revisions, so
 * compared as integers; one that is not an integer is only known to be another version.
 */
function older(a: KubernetesObject, b: KubernetesObject): boolean {
  const x = a.metadata?.resourceVersion ?? '';
  const y = b.metadata?.resourceVersion ?? '';
  if (/^\d+$/.test(x) && /^\d+$/.test(y)) return BigInt(x) < BigInt(y);
  return x !== y;
}

export class Expectations {
  private readonly written = new Map<string, KubernetesObject>();

  /** `obj` (of `kind`), as the API server returned it, was written by this process; the cache may not show it yet. */
  expect(kind: string, obj: KubernetesObject): void {
    this.written.set(refKey(refOf(kind, obj)), obj);
  }

  /**
   * What stands in for the cache: the cached object once it is at least as new as what this process
   * wrote of that name (the expectation is then met and dropped), else what it wrote, if anything.
   */
  resolve(kind: string, namespace: string | undefined, name: string, cached: KubernetesObject | undefined): KubernetesObject | undefined {
    if (this.written.size === 0) return cached;
    const ref = refKey({ kind, namespace, name });
    const mine = this.written.get(ref);
    if (!mine) return cached;
    if (cached && !older(cached, mine)) {
      this.written.delete(ref);
      return cached;
    }
    return mine;
  }

  /**
   * A watch event of that object: a deletion (also one a relist found, which carries the last version
   * the cache held), or a version at least as new as what this process wrote; the cache knows better.
   */
  observed(kind: string, obj: KubernetesObject, deleted = false): void {
    if (this.written.size === 0) return;
    const ref = refKey(refOf(kind, obj));
    const mine = this.written.get(ref);
    if (mine && (deleted || !older(obj, mine))) this.written.delete(ref);
  }

  /** Writes not yet seen in a cache (for tests and diagnostics). */
  get size(): number {
    return this.written.size;
  }
}
