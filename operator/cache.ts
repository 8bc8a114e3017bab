import { KubernetesObject } from '@kubernetes/client-node';
import { Informer } from './informer.js';

/** One resource's cache across the watched namespaces (one informer each, or one for all). */
export class ResourceCache<T extends KubernetesObject = KubernetesObject> {
  constructor(readonly informers: Informer<T>[]) {}

  get(namespace: string | undefined, name: string): T | undefined {
    for (const informer of this.informers) {
      const found = informer.get(namespace, name);
      if (found) return found;
    }
    return undefined;
  }

  /** Objects in one namespace, or all. */
  list(namespace?: string): T[] {
    const all = this.informers.flatMap((i) => i.list());
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
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
