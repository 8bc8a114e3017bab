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
 * (firstReleased). The other managers' entries, most of the object's size, are dropped. The field set's
 * top-level parts are shared by content across objects (see SharedFieldSets): every app's Deployment
 * owns the same `f:spec`, most of the entry's size, and differs only in its `f:metadata` (its owner's uid).
 */
export function withOwnManagedFields(manager: string): <T extends KubernetesObject>(obj: T) => T {
  const shared = new SharedFieldSets();
  return <T extends KubernetesObject>(obj: T): T => {
    const own = obj.metadata?.managedFields?.find((m) => m.manager === manager && m.operation === 'Apply');
    const trimmed = withoutManagedFields(obj);
    if (!own) return trimmed;
    return {
      ...trimmed,
      metadata: { ...trimmed.metadata, managedFields: [{ manager, operation: 'Apply', fieldsV1: shared.of(own.fieldsV1) }] },
    };
  };
}

/**
 * One frozen copy of each top-level part of a managedFields field set (`f:metadata`, `f:spec`) per
 * content, for the objects of one cache to point to instead of holding a copy each. The field sets are
 * only read (firstReleased, and compared as JSON). The most recently met `max` parts are kept: the
 * parts objects share are met at each of their events and stay; a part of one object's only (its
 * `f:metadata`, naming its owner's uid) passes through.
 */
export class SharedFieldSets {
  private readonly parts = new Map<string, unknown>();

  constructor(private readonly max = 256) {}

  /** `fieldsV1` with each top-level part replaced by the shared copy of the same content. */
  of(fieldsV1: unknown): unknown {
    if (typeof fieldsV1 !== 'object' || fieldsV1 === null || Array.isArray(fieldsV1)) return fieldsV1;
    const out: Record<string, unknown> = {};
    for (const [entry, part] of Object.entries(fieldsV1)) out[entry] = this.part(entry, part);
    return Object.freeze(out);
  }

  private part(entry: string, part: unknown): unknown {
    const key = `${entry}=${JSON.stringify(part)}`;
    const found = this.parts.get(key);
    // Re-inserted on each hit, so the Map's order is the order of last use and the oldest goes first.
    this.parts.delete(key);
    const kept = found ?? deepFreeze(part);
    this.parts.set(key, kept);
    if (this.parts.size > this.max) this.parts.delete(this.parts.keys().next().value!);
    return kept;
  }

  get size(): number {
    return this.parts.size;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
