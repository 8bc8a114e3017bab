// Objects this process created that its caches have not shown yet (client-go's "expectations"), so
// a reconcile meanwhile compares with what the create returned instead of creating again.
import { KubernetesObject } from '@kubernetes/client-node';
import { refKey, refOf } from './ref.js';

export class Expectations {
  private readonly created = new Map<string, KubernetesObject>();

  /** `obj` (of `kind`) was created by this process; the cache may not show it yet. */
  expect(kind: string, obj: KubernetesObject): void {
    this.created.set(refKey(refOf(kind, obj)), obj);
  }

  /**
   * What stands in for the cache: the cached object when there is one (the expectation is then
   * met and dropped), else what this process created of that name, if anything.
   */
  resolve(kind: string, namespace: string | undefined, name: string, cached: KubernetesObject | undefined): KubernetesObject | undefined {
    if (this.created.size === 0) return cached;
    const ref = refKey({ kind, namespace, name });
    if (cached) {
      this.created.delete(ref);
      return cached;
    }
    return this.created.get(ref);
  }

  /** A watch event (any type) of that object: the cache now knows better, also of a deletion. */
  observed(kind: string, obj: KubernetesObject): void {
    if (this.created.size > 0) this.created.delete(refKey(refOf(kind, obj)));
  }
}
