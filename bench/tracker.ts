// Watches one resource in the bench namespace (the operator's own list+watch cache) and tells when
// N objects satisfy a condition, and when a given object first shows a change.
import type { KubernetesObject } from '@kubernetes/client-node';
import { Informer } from 'appkind-operator/runtime';
import { createLogger } from 'appkind-operator/runtime';
import { RestClient } from 'appkind-operator/runtime';

type Waiter<T> = { done: (obj: T) => boolean; count: number; resolve: () => void };
type Listener<T> = (obj: T) => boolean;

export class Tracker<T extends KubernetesObject> {
  private readonly informer: Informer<T>;
  private waiter?: Waiter<T> & { satisfied: Set<string> };
  private readonly listeners = new Set<Listener<T>>();

  constructor(rest: RestClient, source: { apiVersion: string; kind: string; plural: string; namespace: string }) {
    this.informer = new Informer<T>(source, (_type, obj) => this.onEvent(obj), {
      staleMs: 600_000, log: createLogger('warn'), rest,
    });
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): void {
    this.informer.stop();
  }

  list(): T[] {
    return this.informer.list();
  }

  /** Resolves once `count` objects satisfy `done` (checked now and at every event). */
  waitFor(what: string, count: number, done: (obj: T) => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const n = this.waiter?.satisfied.size ?? 0;
        this.waiter = undefined;
        reject(new Error(`bench: ${what}: ${n}/${count} after ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const satisfied = new Set<string>();
      this.waiter = { done, count, satisfied, resolve: () => { clearTimeout(timer); this.waiter = undefined; resolve(); } };
      for (const obj of this.informer.list()) this.check(obj);
      this.settle();
    });
  }

  /** Resolves with the time (performance.now()) of the first event for which `match` is true. */
  next(match: (obj: T) => boolean, timeoutMs = 60_000): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error('bench: the expected change was never seen'));
      }, timeoutMs);
      const listener: Listener<T> = (obj) => {
        if (!match(obj)) return false;
        clearTimeout(timer);
        resolve(performance.now());
        return true;
      };
      this.listeners.add(listener);
    });
  }

  private onEvent(obj: T): void {
    for (const l of this.listeners) if (l(obj)) this.listeners.delete(l);
    if (this.waiter) {
      this.check(obj);
      this.settle();
    }
  }

  private check(obj: T): void {
    const w = this.waiter!;
    const key = obj.metadata!.name!;
    if (w.done(obj)) w.satisfied.add(key);
    else w.satisfied.delete(key);
  }

  private settle(): void {
    if (this.waiter && this.waiter.satisfied.size >= this.waiter.count) this.waiter.resolve();
  }
}
