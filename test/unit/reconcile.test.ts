// The reconciler against small in-memory stand-ins of its narrow interfaces (CacheReader, KubeClient,
// the event recorder): what it sends for a new CR, a converged one, drift, a name conflict and a
// child no longer rendered. The integration tests run the same code against the real control plane.
import { beforeEach, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment, V1NetworkPolicy, V1Pod, V1PodDisruptionBudget, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { render } from '../../operator/kinds/render.js';
import { CachedResource, Reconciler, ReconcileError, ReconcilerDeps } from '../../operator/controller/reconcile.js';
import { OwnStatusWrites } from '../../operator/controller/own-status-writes.js';
import { KindWaves } from '../../operator/controller/waves.js';
import { CacheReader, OWNER_INDEX, ownerIndex } from '../../operator/runtime/cache.js';
import { createLogger } from '../../operator/runtime/log.js';
import { KubeClient } from '../../operator/runtime/rest.js';
import { refKey } from '../../operator/runtime/ref.js';

const MANAGER = 'appkind-operator';
const NOW = new Date('2026-12-05T08:00:00Z');

/** A cache stand-in: objects by namespace/name, one index function per index name. */
class MemoryCache<T extends KubernetesObject> implements CacheReader<T> {
  private readonly objects = new Map<string, T>();
  constructor(private readonly indexers: Record<string, (o: T) => string[]> = {}) {}
  put(obj: T): void {
    this.objects.set(`${obj.metadata?.namespace}/${obj.metadata?.name}`, obj);
  }
  delete(obj: T): void {
    this.objects.delete(`${obj.metadata?.namespace}/${obj.metadata?.name}`);
  }
  get(namespace: string | undefined, name: string): T | undefined {
    return this.objects.get(`${namespace}/${name}`);
  }
  byIndex(index: string, value: string): T[] {
    return [...this.objects.values()].filter((o) => this.indexers[index]?.(o).includes(value));
  }
}

interface Call {
  verb: 'get' | 'apply' | 'create-only' | 'delete' | 'patchStatus';
  object: string;
  body?: unknown;
}

/** A client stand-in that records every request and answers as the API server would for these cases. */
class RecordingClient implements KubeClient {
  readonly calls: Call[] = [];
  constructor(private readonly nodePort = 31000) {}
  private named(obj: KubernetesObject): string {
    return `${obj.kind} ${obj.metadata?.namespace}/${obj.metadata?.name}`;
  }
  async get<T extends KubernetesObject>(ref: KubernetesObject): Promise<T | undefined> {
    this.calls.push({ verb: 'get', object: this.named(ref) });
    return undefined;
  }
  async apply<T extends KubernetesObject>(obj: T, _fieldManager: string, opts: { createOnly?: boolean } = {}): Promise<T> {
    this.calls.push({ verb: opts.createOnly ? 'create-only' : 'apply', object: this.named(obj), body: obj });
    if (obj.kind !== 'Service') return obj;
    // The API server allocates the NodePort.
    const service: V1Service = obj;
    return Object.assign({}, obj, { spec: { ...service.spec, ports: service.spec?.ports?.map((p) => ({ ...p, nodePort: this.nodePort })) } });
  }
  async delete(obj: KubernetesObject): Promise<void> {
    this.calls.push({ verb: 'delete', object: this.named(obj) });
  }
  private version = 100;
  async patchStatus(obj: KubernetesObject, status: unknown): Promise<KubernetesObject> {
    this.calls.push({ verb: 'patchStatus', object: this.named(obj), body: status });
    // The API server answers with the object as written, at a new resourceVersion.
    return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.version) }, status } as KubernetesObject;
  }
}

const cr = (size: number, status?: CachedResource['status']): CachedResource => ({
  apiVersion: 'swallowlab.com/v1alpha1',
  kind: 'EchoFlask',
  metadata: { name: 'example', namespace: 'ns', uid: 'cr-uid', generation: 1, resourceVersion: '1' },
  spec: { size },
  ...(status ? { status } : {}),
});

/** A child as the cache holds it once applied: what render() gives, owned by the CR. */
function liveChild(obj: ReturnType<typeof render>[number], ownerUid = 'cr-uid'): KubernetesObject {
  const owner = { apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', name: 'example', uid: ownerUid, controller: true, blockOwnerDeletion: true };
  return { ...obj, metadata: { ...obj.metadata, namespace: 'ns', ownerReferences: [owner] } } as KubernetesObject;
}

describe('Reconciler', () => {
  let crs: MemoryCache<CachedResource>;
  let deployments: MemoryCache<V1Deployment>;
  let services: MemoryCache<V1Service>;
  let pods: MemoryCache<V1Pod>;
  let client: RecordingClient;
  let events: Array<{ reason: string; message: string }>;
  let reconciler: Reconciler;
  let logLines: string[];
  const key = refKey({ kind: 'EchoFlask', namespace: 'ns', name: 'example' });

  beforeEach(() => {
    crs = new MemoryCache();
    deployments = new MemoryCache({ [OWNER_INDEX]: ownerIndex });
    services = new MemoryCache({ [OWNER_INDEX]: ownerIndex });
    pods = new MemoryCache({ [OWNER_INDEX]: ownerIndex });
    client = new RecordingClient();
    events = [];
    logLines = [];
    reconciler = reconcilerWith({
      events: { record: async (_obj, _type, reason, message) => void events.push({ reason, message }) },
      log: createLogger('debug', { write: (line) => logLines.push(line) }),
      memory: { ownStatusWrites: new OwnStatusWrites() },
    });
  });

  /** A Reconciler over this test's caches and client; `deps` gives what differs. */
  const reconcilerWith = (deps: Pick<ReconcilerDeps, 'events' | 'log' | 'memory'> & Partial<Pick<ReconcilerDeps, 'kinds'>>) =>
    new Reconciler({
      kinds: new Map([[SAMPLE_KIND.kind, SAMPLE_KIND]]),
      crs: new Map([[SAMPLE_KIND.kind, crs]]),
      deployments,
      services,
      podDisruptionBudgets: new MemoryCache<V1PodDisruptionBudget>({ [OWNER_INDEX]: ownerIndex }),
      networkPolicies: new MemoryCache<V1NetworkPolicy>({ [OWNER_INDEX]: ownerIndex }),
      pods,
      replicaSets: new MemoryCache<V1ReplicaSet>({ [OWNER_INDEX]: ownerIndex }),
      rest: client,
      fieldManager: MANAGER,
      now: () => NOW,
      ...deps,
    });

  test('a new CR: both children created create-only, owned by the CR, then one status write with the NodePort', async () => {
    crs.put(cr(3));
    await reconciler.reconcile(key);
    expect(client.calls.map((c) => `${c.verb} ${c.object}`)).toEqual([
      'create-only Deployment ns/example-deployment',
      'create-only Service ns/example-svc',
      'patchStatus EchoFlask ns/example',
    ]);
    const deployment = client.calls[0]!.body as V1Deployment;
    expect(deployment.spec?.replicas).toBe(3);
    expect(deployment.metadata?.ownerReferences).toEqual([expect.objectContaining({ uid: 'cr-uid', controller: true, blockOwnerDeletion: true })]);
    const status = client.calls[2]!.body as { nodePort: number; replicas: number; conditions: Array<{ type: string; status: string }> };
    expect(status.nodePort).toBe(31000);
    expect(status.conditions.find((c) => c.type === 'Ready')?.status).toBe('False');
    expect(events).toEqual([]);
  });

  test('a converged CR: no request at all', async () => {
    crs.put(cr(2));
    await reconciler.reconcile(key);
    const written = client.calls.find((c) => c.verb === 'patchStatus')!.body as CachedResource['status'];
    for (const obj of render(SAMPLE_KIND, cr(2))) {
      const live = liveChild(obj);
      if (live.kind === 'Deployment') deployments.put(live as V1Deployment);
      else services.put({ ...(live as V1Service), spec: { ...(live as V1Service).spec, ports: [{ name: 'http', port: 5000, targetPort: 5000, nodePort: 31000 }] } });
    }
    crs.put(cr(2, written));
    client.calls.length = 0;
    await reconciler.reconcile(key);
    expect(client.calls).toEqual([]);
  });

  test('drift: a Deployment whose replicas someone changed is applied again (not create-only)', async () => {
    const [deployment, service] = render(SAMPLE_KIND, cr(2)).map((o) => liveChild(o));
    deployments.put({ ...(deployment as V1Deployment), spec: { ...(deployment as V1Deployment).spec!, replicas: 7 } });
    services.put(service as V1Service);
    crs.put(cr(2));
    await reconciler.reconcile(key);
    const applies = client.calls.filter((c) => c.verb !== 'patchStatus');
    expect(applies.map((c) => `${c.verb} ${c.object}`)).toEqual(['apply Deployment ns/example-deployment']);
    expect((applies[0]!.body as V1Deployment).spec?.replicas).toBe(2);
  });

  test('a name taken by an object the CR does not control: never written, Degraded NameConflict, one Warning Event', async () => {
    const [deployment] = render(SAMPLE_KIND, cr(1)).map((o) => liveChild(o, 'someone-else'));
    deployments.put(deployment as V1Deployment);
    crs.put(cr(1));
    await expect(reconciler.reconcile(key)).rejects.toBeInstanceOf(ReconcileError);
    expect(client.calls.some((c) => c.object === 'Deployment ns/example-deployment')).toBe(false);
    expect(events).toEqual([{ reason: 'NameConflict', message: expect.stringContaining('Deployment ns/example-deployment already exists') }]);
    const status = client.calls.find((c) => c.verb === 'patchStatus')!.body as { conditions: Array<{ type: string; status: string; reason: string }> };
    expect(status.conditions.find((c) => c.type === 'Degraded')).toMatchObject({ status: 'True', reason: 'NameConflict' });
  });

  /**
   * The sample kind's image changed (one app at a time) while the CR's app of size 2 runs the old one,
   * and another app of the kind has the one turn.
   */
  function kindImageChanged() {
    const v2 = { ...SAMPLE_KIND, image: 'takeyan/flask:0.0.4', rollout: { maxConcurrent: '1' } };
    const woken: string[] = [];
    const waves = new KindWaves({ total: () => 2, wake: (keys) => woken.push(...keys) });
    waves.kindChanged(SAMPLE_KIND, v2);
    const waved = reconcilerWith({
      kinds: new Map([[v2.kind, v2]]),
      events: { record: async () => undefined },
      log: createLogger('warn', { write: () => undefined }),
      memory: { waves },
    });
    for (const obj of render(SAMPLE_KIND, cr(2))) (obj.kind === 'Deployment' ? deployments : services).put(liveChild(obj) as never);
    const other = refKey({ kind: 'EchoFlask', namespace: 'ns', name: 'other' });
    expect(waves.turn(v2, other)).toBe('roll');
    return { v2, woken, waves, waved, other };
  }

  test("a kind's image change: an app without a turn keeps its pod template, its scale change applied, and says it waits; in its turn it rolls", async () => {
    const { v2, woken, waves, waved, other } = kindImageChanged();
    crs.put(cr(3));
    await waved.reconcile(key);
    const held = client.calls.find((c) => c.verb === 'apply')!.body as V1Deployment;
    expect(held.spec?.replicas).toBe(3);
    expect(held.spec?.template.spec?.containers[0]?.image).toBe(SAMPLE_KIND.image);
    const status = client.calls.find((c) => c.verb === 'patchStatus')!.body as { conditions: Array<{ type: string; status: string; reason: string }> };
    expect(status.conditions.find((c) => c.type === 'Progressing')).toMatchObject({ status: 'True', reason: 'WaitingForKindRollout' });
    expect(waves.summary(v2)).toMatchObject({ inFlight: 1, waiting: 1 });

    waves.observe(v2, other, { atTarget: true, ready: true });
    expect(woken).toEqual([key]);
    client.calls.length = 0;
    await waved.reconcile(key);
    const rolled = client.calls.find((c) => c.verb === 'apply')!.body as V1Deployment;
    expect(rolled.spec?.template.spec?.containers[0]?.image).toBe(v2.image);
    expect(waves.summary(v2)).toMatchObject({ inFlight: 1, waiting: 0, updated: 1 });
  });

  test("a CR's own edit of its pod template goes at once, its kind's change with it, even with no turn free", async () => {
    const { v2, waves, waved } = kindImageChanged();
    // Generation 2, its port edited; the status is of generation 1.
    const edited = cr(2, { observedGeneration: 1, conditions: [] });
    crs.put({ ...edited, metadata: { ...edited.metadata, generation: 2 }, spec: { size: 2, port: 5001 } });
    await waved.reconcile(key);
    const applied = client.calls.find((c) => c.verb === 'apply' && c.object.startsWith('Deployment'))!.body as V1Deployment;
    expect(applied.spec?.template.spec?.containers[0]).toMatchObject({ image: v2.image, ports: [expect.objectContaining({ containerPort: 5001 })] });
    expect(waves.summary(v2)).toMatchObject({ inFlight: 1, waiting: 0 });
  });

  test('the objects blocking a CR are told to the conflict tracker at each reconcile, none once it is not blocked', async () => {
    const observed: string[][] = [];
    const tracked = reconcilerWith({
      events: { record: async () => undefined },
      log: createLogger('warn', { write: () => undefined }),
      memory: { conflicts: { observe: (k, blockers) => void observed.push([k, ...blockers.map((b) => `${b.kind} ${b.metadata?.namespace}/${b.metadata?.name}`)]) } },
    });
    const [deployment] = render(SAMPLE_KIND, cr(1)).map((o) => liveChild(o, 'someone-else'));
    deployments.put(deployment as V1Deployment);
    crs.put(cr(1));
    await expect(tracked.reconcile(key)).rejects.toBeInstanceOf(ReconcileError);
    expect(observed).toEqual([[key, 'Deployment ns/example-deployment']]);
    deployments.delete(deployment as V1Deployment);
    await tracked.reconcile(key);
    expect(observed.at(-1)).toEqual([key]);
  });

  test('a child the CR controls that render() no longer gives is pruned', async () => {
    const stale = liveChild({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'example-old-svc' } });
    services.put(stale as V1Service);
    crs.put(cr(1));
    await reconciler.reconcile(key);
    expect(client.calls.filter((c) => c.verb === 'delete').map((c) => c.object)).toEqual(['Service ns/example-old-svc']);
  });

  test('a CR that is gone or being deleted: nothing is sent (the garbage collector removes the children)', async () => {
    await reconciler.reconcile(key);
    crs.put({ ...cr(1), metadata: { ...cr(1).metadata, deletionTimestamp: NOW } } as CachedResource);
    await reconciler.reconcile(key);
    expect(client.calls).toEqual([]);
  });

  test('a create the cache has not shown yet stands in for it: the next reconcile creates nothing again', async () => {
    crs.put(cr(1));
    await reconciler.reconcile(key);
    client.calls.length = 0;
    await reconciler.reconcile(key);
    expect(client.calls.filter((c) => c.verb !== 'patchStatus')).toEqual([]);
  });

  test('a status write the cache has not shown yet stands in for it: the next reconcile writes it not again; a status written by someone else since is put right', async () => {
    crs.put(cr(1));
    for (const obj of render(SAMPLE_KIND, cr(1))) {
      const live = liveChild(obj);
      if (live.kind === 'Deployment') deployments.put(live as V1Deployment);
      else services.put({ ...(live as V1Service), spec: { ...(live as V1Service).spec, ports: [{ name: 'http', port: 5000, targetPort: 5000, nodePort: 31000 }] } });
    }
    await reconciler.reconcile(key);
    const written = client.calls.filter((c) => c.verb === 'patchStatus');
    expect(written).toHaveLength(1);
    // A Deployment or pod event runs the CR again before the CR's own watch event: the cache still
    // holds the CR without status (resourceVersion 1). Before, the same status was written twice.
    client.calls.length = 0;
    await reconciler.reconcile(key);
    expect(client.calls).toEqual([]);
    // Someone else's status, watched (the cache moved on): the truth written again.
    crs.put({ ...cr(1, { observedGeneration: 7, nodes: ['made-up'] }), metadata: { ...cr(1).metadata, resourceVersion: '200' } });
    await reconciler.reconcile(key);
    expect(client.calls.map((c) => `${c.verb} ${c.object}`)).toEqual(['patchStatus EchoFlask ns/example']);
    expect(client.calls[0]!.body).toEqual(written[0]!.body);
  });

  test('every log line of a reconcile carries controller, namespace, name, the key and one reconcile id of its own', async () => {
    const [deployment] = render(SAMPLE_KIND, cr(1)).map((o) => liveChild(o, 'someone-else'));
    deployments.put(deployment as V1Deployment);
    crs.put(cr(1));
    await expect(reconciler.reconcile(key)).rejects.toBeInstanceOf(ReconcileError);
    const first = logLines.length;
    // An edit of the CR (a new generation), so the second reconcile has something to say too.
    crs.put({ ...cr(2), metadata: { ...cr(2).metadata, generation: 2, resourceVersion: '300' } });
    await expect(reconciler.reconcile(key)).rejects.toBeInstanceOf(ReconcileError);
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(first).toBeGreaterThan(0);
    expect(lines.length).toBeGreaterThan(first);
    for (const line of lines) expect(line).toMatchObject({ controller: 'echoflask', namespace: 'ns', name: 'example', key, reconcileID: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const ids = (from: number, to: number) => new Set(lines.slice(from, to).map((l) => l.reconcileID));
    expect(ids(0, first).size).toBe(1);
    expect(ids(first, lines.length).size).toBe(1);
    expect(ids(0, lines.length).size).toBe(2);
  });
});
