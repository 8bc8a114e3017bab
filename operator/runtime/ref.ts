// How the operator names objects: keys of the queue and of indexes, a child's controller owner, and the words errors and logs use.
import { KubernetesObject, V1OwnerReference } from '@kubernetes/client-node';

/** An object of a kind, by namespace (empty or unset for cluster-scoped objects) and name. */
export interface ObjectRef {
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
}

/** `Kind/namespace/name`: the string form, as queue keys and index values. */
export function refKey(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
}

/** The ref a refKey() names. */
export function parseRefKey(key: string): ObjectRef {
  const [kind, namespace, name] = key.split('/');
  if (!kind || name === undefined) throw new Error(`not an object key: "${key}"`);
  return { kind, namespace: namespace || undefined, name };
}

/** The ref of `obj` as an object of `kind` (list items carry no kind of their own). */
export function refOf(kind: string, obj: KubernetesObject): ObjectRef {
  return { kind, namespace: obj.metadata?.namespace, name: obj.metadata!.name! };
}

/** The controller ownerReference of an object, if any. */
export function controllerOf(obj: KubernetesObject): V1OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller);
}

/** `namespace/name` of an object, or `name` for cluster-scoped ones. */
export function objectKey(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${obj.metadata?.name}` : `${obj.metadata?.name}`;
}

/** `Kind namespace/name`, the way errors and logs name an object. */
export function describeObject(obj: KubernetesObject): string {
  return `${obj.kind} ${objectKey(obj)}`;
}
