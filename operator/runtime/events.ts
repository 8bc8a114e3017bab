// Kubernetes Events about the objects the operator reconciles, aggregated and rate-limited as
// client-go's EventCorrelator does.
import { CoreV1Event, KubernetesObject } from '@kubernetes/client-node';
import { apiFailure } from './api-failure.js';
import { Logger } from './log.js';
import { TokenBucket } from './queue.js';
import { MERGE_PATCH, resourcePath, RestClient } from './rest.js';

/** How Events of one object are aggregated and limited (client-go's EventCorrelator defaults). */
export interface EventRecorderOptions {
  /** The same type and reason on the same object within this long: one Event, its count raised. @default 600_000 (10 minutes) */
  readonly aggregateWindowMs?: number;
  /** Events (created or counted) one object may cause at once. @default 25 */
  readonly burst?: number;
  /** Events per second one object's allowance grows back by. @default 1/300 (one per 5 minutes) */
  readonly refillPerSecond?: number;
  /** Objects (and object-reason pairs) remembered; the oldest are forgotten beyond. @default 4096 */
  readonly maxTracked?: number;
  /** Clock in ms. @default Date.now */
  readonly now?: () => number;
}

/** An Event this process recorded: what the next one of the same reason patches. */
interface Recorded {
  readonly name: string;
  readonly count: number;
  readonly at: number;
}

/**
 * Records Kubernetes Events on a CR, as `kubectl describe` shows them, aggregated and rate-limited as
 * client-go's EventCorrelator does: the same type and reason on the same object within 10 minutes
 * raise the count of one Event (a patch, with the latest message) instead of creating another, and
 * each object may cause at most 25 Events at once, then one per 5 minutes (more are dropped and
 * logged). A CR whose failure message differs at every try (a webhook naming a request id) costs at
 * most 25 + 12 Event requests an hour, whatever its messages.
 */
export class EventRecorder {
  private readonly recorded = new Map<string, Recorded>();
  private readonly allowance = new Map<string, TokenBucket>();
  private readonly windowMs: number;
  private readonly maxTracked: number;
  private readonly now: () => number;

  /** @param rest the operator's own client (its kept-alive connections; its hook counts the requests) */
  constructor(
    private readonly rest: Pick<RestClient, 'request'>,
    private readonly component: string,
    private readonly log: Logger,
    private readonly opts: EventRecorderOptions = {},
  ) {
    this.windowMs = opts.aggregateWindowMs ?? 600_000;
    this.maxTracked = opts.maxTracked ?? 4096;
    this.now = opts.now ?? Date.now;
  }

  /** Best effort: a failed Event must never fail the reconcile that reports it. */
  async record(obj: KubernetesObject, type: 'Normal' | 'Warning', reason: string, message: string, log: Logger = this.log): Promise<void> {
    // A cluster-scoped object's Events live in "default", as the API server requires of them.
    const namespace = obj.metadata!.namespace ?? 'default';
    const id = obj.metadata!.uid ?? `${namespace}/${obj.metadata!.name}`;
    if (!this.allowed(id)) {
      log.debug('event dropped: too many events for this object', { reason });
      return;
    }
    const nowMs = this.now();
    const now = new Date(nowMs).toISOString();
    const key = `${id}/${type}/${reason}`;
    const seen = this.recorded.get(key);
    const events = resourcePath({ apiVersion: 'v1', plural: 'events', namespace });
    try {
      if (seen && nowMs - seen.at < this.windowMs) {
        const count = seen.count + 1;
        try {
          await this.rest.request('PATCH', resourcePath({ apiVersion: 'v1', plural: 'events', namespace, name: seen.name }), {
            body: { count, lastTimestamp: now, message: message.slice(0, 1024) },
            contentType: MERGE_PATCH,
          });
          this.remember(this.recorded, key, { name: seen.name, count, at: nowMs });
          return;
        } catch (e) {
          if (apiFailure(e).code !== 404) throw e;
          // Gone (the API server's Event TTL, or deleted): a new one below.
        }
      }
      // Timestamps as the API server spells them (client-node's Date fields serialize to the same).
      const event: Omit<CoreV1Event, 'firstTimestamp' | 'lastTimestamp'> & { firstTimestamp: string; lastTimestamp: string } = {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${obj.metadata!.name}.`, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata!.name,
          namespace: obj.metadata!.namespace,
          uid: obj.metadata!.uid,
        },
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
      const created = await this.rest.request<CoreV1Event>('POST', events, { body: event });
      if (created?.metadata?.name) this.remember(this.recorded, key, { name: created.metadata.name, count: 1, at: nowMs });
    } catch (e) {
      log.warn('could not record event', { reason, error: apiFailure(e).message.split('\n')[0] });
    }
  }

  /** Takes one of the object's allowance of Events, if it has one left. */
  private allowed(id: string): boolean {
    let bucket = this.allowance.get(id);
    if (!bucket) {
      bucket = new TokenBucket(this.opts.refillPerSecond ?? 1 / 300, this.opts.burst ?? 25, this.now);
      this.remember(this.allowance, id, bucket);
    }
    return bucket.tryTake();
  }

  /** Sets `key` as the newest entry of `map`, forgetting the oldest beyond maxTracked. */
  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > this.maxTracked) map.delete(map.keys().next().value!);
  }
}
