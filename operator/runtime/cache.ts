// What a reconciler reads of the informers: one resource's objects across namespaces, the owner index,
// and objects trimmed of the managedFields the operator never reads.
import { KubernetesObject } from '@kubernetes/client-node';
import { Informer } from './informer.js';
import { controllerOf } from './ref.js';

/** What a reconciler reads of a cache: an object by name, objects by index. */
export interface CacheReader<T extends KubernetesObject = KubernetesObject> {
  get(namespace: string | undefined, name: string): T | undefined;
  /** Objects under `value` in a named index. */
  byIndex(index: string, value: string): T[];
}

/** One resource's cache across the watched namespaces (one informer each, or one for all). */
export class ResourceCache<T extends KubernetesObject = KubernetesObject> implements CacheReader<T> {
  constructor(readonly informers: Informer<T>[]) {}

  get(namespace: string | undefined, name: string): T | undefined {
    for (const informer of this.informers) {
      const found = informer.get(namespace, name);
      if (found) return found;
    }
    return undefined;
  }

  /** Objects under `value` in a named index (see InformerOptions.indexers). */
  byIndex(index: string, value: string): T[] {
    if (this.informers.length === 1) return this.informers[0]!.byIndex(index, value);
    return this.informers.flatMap((i) => i.byIndex(index, value));
  }

  get synced(): boolean {
    return this.informers.every((i) => i.hasSynced);
  }

  start(): Promise<void[]> {
    return Promise.all(this.informers.map((i) => i.start()));
  }

  stop(): void {
    for (const i of this.informers) i.stop();
  }
}

/** Index of children by their controller owner's uid: a CR's Deployment and Service. */
export const OWNER_INDEX = 'owner';

export function ownerIndex(obj: KubernetesObject): string[] {
  const uid = controllerOf(obj)?.uid;
  return uid ? [uid] : [];
}
/** The object without managedFields, which the operator never reads and which is most of its size. */
export function withoutManagedFields<T extends KubernetesObject>(obj: T): T {
  if (!obj.metadata?.managedFields) return obj;
  const metadata = { ...obj.metadata };
  delete metadata.managedFields;
  return { ...obj, metadata };
}

/**
 * The object with only `manager`'s server-side apply entry of managedFields, and of it only the field
 * set: the reconciler compares it with what render() gives to release fields no longer rendered
 * (firstReleased). The other managers' entries, most of the object's size, are dropped.
 */
export function withOwnManagedFields(manager: string): <T extends KubernetesObject>(obj: T) => T {
  return <T extends KubernetesObject>(obj: T): T => {
    const own = obj.metadata?.managedFields?.find((m) => m.manager === manager && m.operation === 'Apply');
    const trimmed = withoutManagedFields(obj);
    if (!own) return trimmed;
    return { ...trimmed, metadata: { ...trimmed.metadata, managedFields: [{ manager, operation: 'Apply', fieldsV1: own.fieldsV1 }] } };
  };
}
