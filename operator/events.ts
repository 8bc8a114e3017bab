import { CoreV1Event, KubernetesObject } from '@kubernetes/client-node';
import { apiFailure } from './kube.js';
import { Logger } from './log.js';
import { RestClient } from './rest.js';

/** Records Kubernetes Events on a CR, as `kubectl describe` shows them. */
export class EventRecorder {
  /**
   * @param rest sends the Events (its request hook counts them; it waits out throttling (429) as for
   *   any other request, and gives up after its retries: an Event is never worth a hot loop)
   */
  constructor(private readonly rest: RestClient, private readonly component: string, private readonly log: Logger) {}

  /** Best effort: a failed Event must never fail the reconcile that reports it. */
  async record(obj: KubernetesObject, type: 'Normal' | 'Warning', reason: string, message: string, log: Logger = this.log): Promise<void> {
    const namespace = obj.metadata!.namespace!;
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    // Timestamps as the API server spells them (client-node's typed Event would want Date objects).
    const body: Omit<CoreV1Event, 'firstTimestamp' | 'lastTimestamp'> & { firstTimestamp: string; lastTimestamp: string } = {
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
      await this.rest.request('POST', `/api/v1/namespaces/${namespace}/events`, { body });
    } catch (e) {
      const f = apiFailure(e);
      log.warn('could not record event', { reason, code: f.code, throttled: f.retryAfterMs !== undefined || undefined, error: f.message.split('\n')[0] });
    }
  }
}
