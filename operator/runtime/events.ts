import { CoreV1Event, KubernetesObject } from '@kubernetes/client-node';
import { apiFailure } from './kube.js';
import { Logger } from './log.js';
import { resourcePath, RestClient } from './rest.js';

/** Records Kubernetes Events on a CR, as `kubectl describe` shows them. */
export class EventRecorder {
  /** @param rest the operator's own client (its kept-alive connections; its hook counts the requests) */
  constructor(
    private readonly rest: RestClient,
    private readonly component: string,
    private readonly log: Logger,
  ) {}

  /** Best effort: a failed Event must never fail the reconcile that reports it. */
  async record(obj: KubernetesObject, type: 'Normal' | 'Warning', reason: string, message: string, log: Logger = this.log): Promise<void> {
    const namespace = obj.metadata!.namespace!;
    const now = new Date().toISOString();
    // Timestamps as the API server spells them (client-node's Date fields serialize to the same).
    const event: Omit<CoreV1Event, 'firstTimestamp' | 'lastTimestamp'> & { firstTimestamp: string; lastTimestamp: string } = {
      apiVersion: 'v1',
      kind: 'Event',
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
    };
    try {
      await this.rest.request('POST', resourcePath({ apiVersion: 'v1', plural: 'events', namespace }), { body: event });
    } catch (e) {
      log.warn('could not record event', { reason, error: apiFailure(e).message.split('\n')[0] });
    }
  }
}
