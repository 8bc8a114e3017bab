import { AppKind } from 'cdk8s-appkind';
import { AppResource, KubeObject, render } from '../kinds/render.js';
import { ObjectRef, refKey, refOf } from '../runtime/ref.js';

/**
 * render() per CR, remembered until the CR's spec (or name, namespace, uid) changes. Building the
 * construct tree costs milliseconds; a CR is reconciled at every event of its pods and children,
 * while its rendered objects only change when it is edited.
 */
export class RenderCache {
  private readonly entries = new Map<string, { fingerprint: string; objects: readonly KubeObject[] }>();

  render(kind: AppKind, cr: AppResource & { metadata: { uid?: string } }): readonly KubeObject[] {
    const key = refKey(refOf(kind.kind, cr));
    const fingerprint = JSON.stringify([kind, cr.metadata.uid, cr.spec]);
    const hit = this.entries.get(key);
    if (hit?.fingerprint === fingerprint) return hit.objects;
    const objects = Object.freeze(render(kind, cr));
    this.entries.set(key, { fingerprint, objects });
    return objects;
  }

  /** Drops a deleted CR's entry. */
  forget(ref: ObjectRef): void {
    this.entries.delete(refKey(ref));
  }

  get size(): number {
    return this.entries.size;
  }
}
