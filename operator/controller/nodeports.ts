// CRs waiting for a NodePort someone else's Service holds (Degraded, "provided port is already
// allocated"). The Service cache holds only Services carrying the children's label, so the operator's
// memory and watch traffic grow with its own Services, not with the cluster's; a NodePort's holder is
// found by no field selector, so while at least one CR waits for a port, every Service of the watched
// namespaces is watched (slimmed to its ports), and one that gives a port up (deleted, or moved to
// other ports) retries the CRs asking for it at once instead of at their next backoff retry. The
// watch stops once no CR waits.
import type { V1Service } from '@kubernetes/client-node';
import { Informer } from '../runtime/informer.js';
import { Logger } from '../runtime/log.js';
import { RestClient } from '../runtime/rest.js';
import { freedNodePorts } from './indexes.js';

/** What the watch keeps of a Service: its name and NodePorts. */
function portsOnly(svc: V1Service): V1Service {
  const m = svc.metadata ?? {};
  return {
    apiVersion: svc.apiVersion,
    kind: svc.kind,
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion },
    spec: { ports: (svc.spec?.ports ?? []).map((p) => ({ port: p.port, nodePort: p.nodePort })) },
  };
}

export class NodePortWaits {
  /** Keys of the CRs waiting for a NodePort. */
  private readonly waiting = new Set<string>();
  private informers: Informer<V1Service>[] = [];

  constructor(
    private readonly ctx: { rest: RestClient; log: Logger; staleMs: number; namespaces: readonly string[] },
    /** These NodePorts were given up: retry the CRs asking for them. */
    private readonly onFreed: (ports: number[]) => void,
    /** The watch has listed every Service: retry each waiting CR (a port freed before the list is in no event). */
    private readonly onListed: (key: string) => void,
  ) {}

  /** Whether the CR `key` waits for a NodePort now (Degraded and asking for one). */
  observe(key: string, waits: boolean): void {
    if (waits === this.waiting.has(key)) return;
    if (waits) this.waiting.add(key);
    else this.waiting.delete(key);
    if (this.waiting.size > 0 && this.informers.length === 0) this.start();
    else if (this.waiting.size === 0 && this.informers.length > 0) this.stop();
  }

  /** Whether the Services of the watched namespaces are watched right now. */
  get watching(): boolean {
    return this.informers.length > 0;
  }

  private start(): void {
    const namespaces = this.ctx.namespaces.length ? this.ctx.namespaces : [undefined];
    this.ctx.log.debug('a CR waits for a NodePort: watching every Service', { waiting: this.waiting.size });
    const informers = namespaces.map(
      (namespace) =>
        new Informer<V1Service>(
          { apiVersion: 'v1', kind: 'Service', plural: 'services', namespace },
          (type, obj, old) => {
            const ports = freedNodePorts(type, obj, old);
            if (ports.length) this.onFreed(ports);
          },
          { rest: this.ctx.rest, log: this.ctx.log, staleMs: this.ctx.staleMs, transform: portsOnly },
        ),
    );
    this.informers = informers;
    void Promise.all(informers.map((i) => i.start())).then(() => {
      if (this.informers === informers) for (const key of [...this.waiting]) this.onListed(key);
    });
  }

  stop(): void {
    for (const i of this.informers) i.stop();
    this.informers = [];
  }
}
