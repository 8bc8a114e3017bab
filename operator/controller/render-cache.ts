// render() per CR, remembered until the CR changes: what a reconcile applies and what its status reads.
import { AppKind, ContainerAppProps } from 'cdk8s-appkind';
import { AppResource, appPropsFor, KubeObject, render } from '../kinds/render.js';
import { ObjectRef, refKey, refOf } from '../runtime/ref.js';

/** What one CR renders to: the construct's props (what status reads) and the objects. */
export interface Rendered {
  readonly props: ContainerAppProps;
  readonly objects: readonly KubeObject[];
}

/**
 * render() per CR, remembered until the CR's spec (or name, namespace, uid) changes. Building the
 * construct tree costs milliseconds; a CR is reconciled at every event of its pods and children,
 * while its rendered objects only change when it is edited.
 */
export class RenderCache {
  private readonly entries = new Map<string, Rendered & { fingerprint: string }>();

  render(kind: AppKind, cr: AppResource & { metadata: { uid?: string } }): Rendered {
    const key = refKey(refOf(kind.kind, cr));
    const fingerprint = JSON.stringify([kind, cr.metadata.uid, cr.spec]);
    const hit = this.entries.get(key);
    if (hit?.fingerprint === fingerprint) return hit;
    const props = appPropsFor(kind, cr);
    const entry = { fingerprint, props, objects: Object.freeze(render(kind, cr, props)) };
    this.entries.set(key, entry);
    return entry;
  }

  /** Drops a deleted CR's entry. */
  forget(ref: ObjectRef): void {
    this.entries.delete(refKey(ref));
  }

  get size(): number {
    return this.entries.size;
  }
}
