// A failure whose message differs at every try costs a bounded number of requests: a
// validating webhook (an HTTPS server this test starts on loopback) denies the CR's Deployment with a
// message naming the request, so every failed reconcile writes a Degraded status that differs from the
// last. That status write, watched back, must not cut the CR's backoff short, and its Warning Events
// are one Event whose count rises. Counted from the webhook's calls and the API server's audit log;
// the bound is the one docs/reliability.md states, computed from the time the test actually observed.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { backoffDelay } from '../../operator/runtime/queue.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, readSharedAuditLog } from './cluster.js';
import { AdmissionWebhook } from './admission-webhook.js';
import { OPERATOR_SA, OperatorProcess, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };
type Event = KubernetesObject & { reason: string; message: string; type: string; count?: number; involvedObject: { name: string } };

const kind = SAMPLE_KIND;
/** The cap of a failing CR's backoff in this test (APPKIND_DEGRADED_RETRY_SECONDS): short, so the steady pace shows within a minute. */
const RETRY_SECONDS = 2;
/** How long the failing CR is watched. */
const WINDOW_MS = 30_000;

let rest: RestClient;
let ns: string;
let operator: OperatorProcess;
let webhook: AdmissionWebhook | undefined;

const condition = async (name: string, type: string) =>
  (await rest.get<Resource>(crObject(kind, ns, name)))?.status?.conditions?.find((c) => c.type === type);

/**
 * Most reconciles a CR failing since `elapsedMs` ago can have run: the first, the retries of the
 * backoff's ramp (5 ms doubling) up to the cap, then one per cap. The documented bound.
 */
function reconcileBound(elapsedMs: number, capMs: number): number {
  let runs = 1;
  let t = 0;
  for (let failures = 0; ; failures++) {
    const delay = backoffDelay(failures, 5, capMs);
    if (t + delay > elapsedMs) return runs;
    t += delay;
    runs++;
    if (delay === capMs) return runs + Math.floor((elapsedMs - t) / capMs);
  }
}

beforeAll(async () => {
  ({ rest, ns, operator } = await startOperatorTest('failloop', [kind], { APPKIND_DEGRADED_RETRY_SECONDS: String(RETRY_SECONDS) }));
  webhook = await AdmissionWebhook.start(rest, `deny-deployments-${ns}`, ns, { group: 'apps', version: 'v1', plural: 'deployments' });
  // The API server picks a new webhook configuration up a moment after it is written: wait until it denies.
  const probe = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'probe', namespace: ns },
    spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } } };
  await eventually('the webhook denies', async () => {
    try {
      await rest.request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, { body: probe, query: { dryRun: 'All' } });
      return false;
    } catch (e) {
      return String(e).includes('denied by the test webhook');
    }
  });
});

afterAll(async () => {
  await webhook?.stop();
  expect(await operator?.stop('SIGTERM')).toBe(0);
  rest?.close();
});

describe('a CR failing with a different message at every try', () => {
  test('costs a bounded number of requests: no status write shortcuts the backoff, its Events aggregate into one', async () => {
    const user = `system:serviceaccount:${ns}:${OPERATOR_SA}`;
    const created = Date.now();
    const since = new Date(created).toISOString();
    await rest.apply(crObject(kind, ns, 'loop', { size: 1 }), 'cr-author');
    await eventually('Degraded by the webhook', async () => (await condition('loop', 'Degraded'))?.message.includes('denied by the test webhook') ?? false);
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const ended = Date.now();

    const denied = webhook!.calls.filter((c) => c.username === user && c.at <= ended).length;
    // One more: the Service, created by the first reconcile, is watched back and runs the CR once early.
    const bound = reconcileBound(ended - created, RETRY_SECONDS * 1000) + 1;
    // One webhook call per reconcile (the Deployment's apply), its status write and Event beside it.
    expect(denied).toBeGreaterThanOrEqual(2);
    expect(denied).toBeLessThanOrEqual(bound);
    const until = new Date(ended).toISOString();
    const requests = (await readSharedAuditLog()).filter(
      (e) =>
        e.user.username === user && e.objectRef?.namespace === ns && e.stageTimestamp > since && e.stageTimestamp <= until && !['list', 'watch', 'get'].includes(e.verb),
    );
    const of = (resource: string, subresource?: string) => requests.filter((e) => e.objectRef?.resource === resource && e.objectRef.subresource === subresource).length;
    expect(of('deployments')).toBeLessThanOrEqual(bound);
    expect(of(kind.plural, 'status')).toBeLessThanOrEqual(bound);
    expect(of('events')).toBeLessThanOrEqual(bound);
    // Every write of the operator is one of these, or the Service's create (once).
    expect(requests.length).toBeLessThanOrEqual(3 * bound + 1);
    process.stderr.write(
      `failure loop: ${denied} denied applies, ${of(kind.plural, 'status')} status writes, ${of('events')} Event requests, ${requests.length} writes in all in ${((ended - created) / 1000).toFixed(1)} s (bound ${bound} reconciles)\n`,
    );

    // One Warning Event, its count raised at every failure, with one of the latest messages.
    const events = (await rest.list<Event>('v1', 'Event', ns)).items.filter((e) => e.involvedObject.name === 'loop' && e.type === 'Warning');
    expect(events.map((e) => e.reason)).toEqual(['ApplyFailed']);
    expect(events[0]!.count).toBeGreaterThan(1);
    expect(events[0]!.message).toContain('denied by the test webhook');

    // The webhook gone, the next retry converges: the backoff delayed the CR, it did not give up on it.
    await webhook!.stop();
    webhook = undefined;
    await eventually('Ready once the webhook is gone', async () => (await condition('loop', 'Ready'))?.status === 'True', 30_000);
  }, 120_000);

  test('the operator logged no error', () => {
    expect(operator.exited).toBe(false);
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
