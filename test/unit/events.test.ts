// EventRecorder's aggregation and per-object rate limit (client-go's EventCorrelator defaults), with a
// stand-in of the one client method it uses that answers as the API server does.
import { describe, expect, test } from '@jest/globals';
import { KubernetesObject } from '@kubernetes/client-node';
import { EventRecorder } from '../../operator/runtime/events.js';
import { silentLogger } from '../../operator/runtime/log.js';
import { ApiError } from '../../operator/runtime/rest.js';

interface Sent {
  method: string;
  path: string;
  body: { count?: number; message?: string; reason?: string };
}

/** Records requests; a POST returns the Event with a generated name; a PATCH of a name in `gone` is 404. */
function client(gone = new Set<string>()) {
  const sent: Sent[] = [];
  let n = 0;
  return {
    sent,
    gone,
    async request<T>(method: string, path: string, opts: { body?: unknown } = {}): Promise<T> {
      sent.push({ method, path, body: opts.body as Sent['body'] });
      if (method === 'PATCH' && gone.has(path.split('/').at(-1)!)) throw new ApiError(404, 'NotFound', `events "${path}" not found`, method, path);
      return { metadata: { name: `app.${++n}` } } as T;
    },
  };
}

const cr: KubernetesObject = { apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', metadata: { name: 'app', namespace: 'ns', uid: 'u1' } };
const other: KubernetesObject = { ...cr, metadata: { name: 'other', namespace: 'ns', uid: 'u2' } };

describe('EventRecorder', () => {
  test('a cluster-scoped object\'s Event goes to the namespace default and names the object without a namespace', async () => {
    const rest = client();
    const appKind: KubernetesObject = { apiVersion: 'appkind.io/v1alpha1', kind: 'AppKind', metadata: { name: 'flasks.swallowlab.com', uid: 'u3' } };
    await new EventRecorder(rest, 'op', silentLogger).record(appKind, 'Normal', 'Serving', 'serving Flask');
    expect(rest.sent.map((s) => `${s.method} ${s.path}`)).toEqual(['POST /api/v1/namespaces/default/events']);
    const event = rest.sent[0]!.body as { metadata?: { namespace?: string }; involvedObject?: Record<string, unknown> };
    expect(event.metadata?.namespace).toBe('default');
    expect(event.involvedObject).toEqual({ apiVersion: 'appkind.io/v1alpha1', kind: 'AppKind', name: 'flasks.swallowlab.com', namespace: undefined, uid: 'u3' });
  });

  test('the same reason on the same object within 10 minutes: one Event, its count raised with the latest message', async () => {
    let now = 0;
    const rest = client();
    const events = new EventRecorder(rest, 'op', silentLogger, { now: () => now });
    await events.record(cr, 'Warning', 'ApplyFailed', 'denied (request 1)');
    now += 60_000;
    await events.record(cr, 'Warning', 'ApplyFailed', 'denied (request 2)');
    await events.record(cr, 'Warning', 'NameConflict', 'taken');
    await events.record(other, 'Warning', 'ApplyFailed', 'denied');
    expect(rest.sent.map((s) => `${s.method} ${s.path}`)).toEqual([
      'POST /api/v1/namespaces/ns/events',
      'PATCH /api/v1/namespaces/ns/events/app.1',
      'POST /api/v1/namespaces/ns/events',
      'POST /api/v1/namespaces/ns/events',
    ]);
    expect(rest.sent[1]!.body).toMatchObject({ count: 2, message: 'denied (request 2)' });
    // After the window, a new Event.
    now += 600_000;
    await events.record(cr, 'Warning', 'ApplyFailed', 'denied (request 3)');
    expect(rest.sent.at(-1)).toMatchObject({ method: 'POST', body: { reason: 'ApplyFailed', count: 1 } });
  });

  test('an aggregated Event that is gone is created anew', async () => {
    const rest = client(new Set(['app.1']));
    const events = new EventRecorder(rest, 'op', silentLogger, { now: () => 0 });
    await events.record(cr, 'Warning', 'ApplyFailed', 'a');
    await events.record(cr, 'Warning', 'ApplyFailed', 'b');
    expect(rest.sent.map((s) => s.method)).toEqual(['POST', 'PATCH', 'POST']);
  });

  test('at most 25 Events per object at once, then one per 5 minutes; other objects unaffected', async () => {
    let now = 0;
    const rest = client();
    const events = new EventRecorder(rest, 'op', silentLogger, { now: () => now });
    for (let i = 0; i < 40; i++) await events.record(cr, 'Warning', `Reason${i}`, 'm');
    expect(rest.sent).toHaveLength(25);
    await events.record(other, 'Warning', 'ApplyFailed', 'm');
    expect(rest.sent).toHaveLength(26);
    now += 299_000;
    await events.record(cr, 'Warning', 'Late', 'm');
    expect(rest.sent).toHaveLength(26);
    now += 1_000;
    await events.record(cr, 'Warning', 'Late', 'm');
    expect(rest.sent).toHaveLength(27);
    // An hour (and a few seconds, past floating-point rounding) of one message a second: 12 more, whatever the messages.
    for (let s = 0; s < 3605; s++) {
      now += 1000;
      await events.record(cr, 'Warning', 'ApplyFailed', `denied (request ${s})`);
    }
    expect(rest.sent).toHaveLength(27 + 12);
  });
});
