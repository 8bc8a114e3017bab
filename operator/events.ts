import { CoreV1Api, KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { Logger } from './log.js';

/** Records Kubernetes Events on a CR, as `kubectl describe` shows them. */
export class EventRecorder {
  private readonly api: CoreV1Api;

  constructor(kc: KubeConfig, private readonly component: string, private readonly log: Logger, private readonly onRequest: (verb: string, code: number) => void) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  /** Best effort: a failed Event must never fail the reconcile that reports it. */
  async record(obj: KubernetesObject, type: 'Normal' | 'Warning', reason: string, message: string, log: Logger = this.log): Promise<void> {
    const namespace = obj.metadata!.namespace!;
    const now = new Date();
    try {
      await this.api.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${obj.metadata!.name}.`, namespace },
          involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata!.name, namespace, uid: obj.metadata!.uid },
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component: this.component },
          reportingComponent: this.component,
          reportingInstance: this.component,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
      this.onRequest('POST', 201);
    } catch (e) {
      this.onRequest('POST', (e as { code?: number }).code ?? 0);
      log.warn('could not record event', { reason, error: e instanceof Error ? e.message.split('\n')[0] : String(e) });
    }
  }
}
