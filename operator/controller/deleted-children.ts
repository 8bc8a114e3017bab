// Children of ours whose deletion this process watched while their CR was still in its cache. The
// caches of CRs and of children are fed by separate watches, with no order between them: when a CR
// is deleted, the garbage collector deletes its children, and the child's DELETED event can reach
// this process before the CR's own (the CR watch carries every status write and lags under load; a
// relist of one cache can be older than the other's). A reconcile meanwhile finds the CR cached and
// its child absent, and would create the child again for a CR that no longer exists (the garbage
// collector then deletes it a second time). A child known to be deleted is the sign: before creating
// it again, the reconciler reads the CR from the API server (Reconciler.goneMeanwhile).
import { KubernetesObject } from '@kubernetes/client-node';
import { controllerOf } from '../runtime/ref.js';

export class DeletedChildren {
  /** CR uid -> kinds of its children seen deleted and not seen added since. */
  private readonly byOwner = new Map<string, Set<string>>();

  /** A watch event of a child of `kind` (delete: `deleted`). */
  observed(kind: string, obj: KubernetesObject, deleted: boolean): void {
    const uid = controllerOf(obj)?.uid;
    if (!uid) return;
    const kinds = this.byOwner.get(uid);
    if (deleted) {
      if (kinds) kinds.add(kind);
      else this.byOwner.set(uid, new Set([kind]));
    } else if (kinds?.delete(kind) && kinds.size === 0) {
      this.byOwner.delete(uid);
    }
  }

  /** The CR of `uid` was deleted (its watch event came): nothing of it to remember. */
  ownerDeleted(uid: string | undefined): void {
    if (uid) this.byOwner.delete(uid);
  }

  /** Whether a child of `kind` controlled by the CR of `uid` was seen deleted (and not added again). */
  seen(uid: string | undefined, kind: string): boolean {
    return !!uid && !!this.byOwner.get(uid)?.has(kind);
  }

  /** CRs with a child seen deleted (for tests and metrics). */
  get size(): number {
    return this.byOwner.size;
  }
}
