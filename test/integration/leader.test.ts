// Leader election against the real control plane: two candidates on one Lease.
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { CoordinationV1Api, KubeConfig, KubernetesObject, V1Deployment, V1Lease, V1MicroTime, Watch } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { LeaderCallbacks, LeaderElector } from '../../operator/runtime/leader.js';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { createTestNamespace, crObject, eventually, readSharedAuditLog, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';
import { installOperatorIdentity, OPERATOR_SA, OperatorProcess, prepareOperatorNamespace } from './operator-process.js';
import { TcpProxy } from './tcp-proxy.js';

const LEASE_DURATION = 3; // seconds; an integer, as the Lease field is
const RENEW_DEADLINE = 2;
const RETRY_PERIOD = 0.25;

// Project-level testTimeout in jest.config.js is not applied per test file; set it here.
jest.setTimeout(60_000);

let kc: KubeConfig;
let namespace: string;
let leases: CoordinationV1Api;
const electors: LeaderElector[] = [];
const clients: RestClient[] = [];
let leaseCounter = 0;

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  namespace = await createTestNamespace(kc, 'leader');
  leases = kc.makeApiClient(CoordinationV1Api);
});

afterEach(() => {
  for (const e of electors.splice(0)) e.stop();
  for (const c of clients.splice(0)) c.close();
});

/**
 * A candidate on `lease` with its event log; `kubeConfig` lets a test route it through a proxy,
 * `leaseDurationSeconds` gives it a longer lease than the others', `namespace` another namespace.
 */
function candidate(
  identity: string,
  lease: string,
  opts: { kubeConfig?: KubeConfig; leaseDurationSeconds?: number; renewDeadlineSeconds?: number; retryPeriodSeconds?: number; namespace?: string; clock?: () => number } = {},
) {
  const events: string[] = [];
  /** This host's clock when onStoppedLeading was called. */
  let stoppedAtMs: number | undefined;
  const rest = new RestClient(opts.kubeConfig ?? kc);
  clients.push(rest);
  const elector = new LeaderElector(rest, {
    namespace: opts.namespace ?? namespace,
    name: lease,
    identity,
    leaseDurationSeconds: opts.leaseDurationSeconds ?? LEASE_DURATION,
    renewDeadlineSeconds: opts.renewDeadlineSeconds ?? RENEW_DEADLINE,
    retryPeriodSeconds: opts.retryPeriodSeconds ?? RETRY_PERIOD,
    clock: opts.clock,
  });
  electors.push(elector);
  // As the operator does: this candidate's client writes only while it leads (its Lease requests are unfenced).
  rest.fenceWrites(() => elector.mayWrite());
  const callbacks: LeaderCallbacks = {
    onStartedLeading: () => events.push('started'),
    onStoppedLeading: () => {
      stoppedAtMs = Date.now();
      events.push('stopped');
    },
    onNewLeader: (who) => events.push(`leader:${who}`),
  };
  const done = elector.run(callbacks);
  return { identity, elector, rest, events, done, stoppedAtMs: () => stoppedAtMs };
}

/**
 * Another client takes `lease` (holder `intruder`, renewed now); retried, since the candidates' own
 * renewals can make this compare-and-swap conflict (409).
 */
function intruderTakes(lease: string): Promise<void> {
  return eventually('the intruder takes the lease', async () => {
    const current = await leases.readNamespacedLease({ name: lease, namespace });
    const now = new V1MicroTime();
    await leases.replaceNamespacedLease({ name: lease, namespace, body: { ...current, spec: { ...current.spec, holderIdentity: 'intruder', renewTime: now, acquireTime: now } } });
    return true;
  }, 10_000);
}

/** A Lease's MicroTime as the API server spells it. */
const microTime = (ms: number) => `${new Date(ms).toISOString().slice(0, -1)}000Z`;

/** Writes the Lease's spec fields as another client would (created if absent; retried on conflict). */
async function writeLease(lease: string, spec: Record<string, unknown>): Promise<void> {
  const admin = new RestClient(kc);
  const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
  try {
    for (let tries = 1; ; tries++) {
      const current = await admin.request<V1Lease>('GET', `${path}/${lease}`).catch((e: unknown) => {
        if (e instanceof ApiError && e.code === 404) return undefined;
        throw e;
      });
      try {
        if (!current) await admin.request('POST', path, { body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: lease, namespace }, spec } });
        else await admin.request('PUT', `${path}/${lease}`, { body: { ...current, spec: { ...current.spec, ...spec } } });
        return;
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 409) || tries >= 10) throw e;
      }
    }
  } finally {
    admin.close();
  }
}

/** Creates a ConfigMap through `rest`; resolves with the reason it was refused, or 'created'. */
async function writeConfigMap(rest: RestClient, name: string): Promise<string> {
  try {
    await rest.request('POST', `/api/v1/namespaces/${namespace}/configmaps`, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } } });
    return 'created';
  } catch (e) {
    return e instanceof ApiError ? e.reason : String(e);
  }
}

/** The ConfigMaps of the test namespace whose names start with `prefix`. */
async function configMapNames(prefix: string): Promise<string[]> {
  const admin = new RestClient(kc);
  try {
    return (await admin.list('v1', 'ConfigMap', namespace)).items.map((c) => c.metadata!.name!).filter((n) => n.startsWith(prefix)).sort();
  } finally {
    admin.close();
  }
}

function freshLease(): string {
  return `lease-${++leaseCounter}`;
}

async function holder(lease: string, ns = namespace): Promise<{ holder?: string; transitions?: number }> {
  const l = await leases.readNamespacedLease({ name: lease, namespace: ns });
  return { holder: l.spec?.holderIdentity, transitions: l.spec?.leaseTransitions };
}

/** Starts two candidates and waits until one of them leads; returns [leader, standby]. */
async function electOne(lease: string) {
  const a = candidate('candidate-a', lease);
  const b = candidate('candidate-b', lease);
  await eventually('one candidate leads', async () => a.elector.isLeader() || b.elector.isLeader(), 20_000);
  return a.elector.isLeader() ? [a, b] : [b, a];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LeaderElector on a real Lease', () => {
  it('elects exactly one of two candidates and keeps it while it renews', async () => {
    const lease = freshLease();
    const [leader, standby] = await electOne(lease);
    // Sample across more than two lease durations: renewals must keep the same single leader.
    for (let i = 0; i < 28; i++) {
      expect(leader!.elector.isLeader()).toBe(true);
      expect(standby!.elector.isLeader()).toBe(false);
      await sleep(250);
    }
    expect(await holder(lease)).toEqual({ holder: leader!.identity, transitions: 0 });
    expect(leader!.events.filter((e) => e === 'started')).toHaveLength(1);
    expect(standby!.events).toEqual([`leader:${leader!.identity}`]);
  });

  it('renews with one write per renewal and no read while nobody else writes the Lease', async () => {
    const lease = freshLease();
    const requests: string[] = [];
    const rest = new RestClient(kc, (method, code) => requests.push(`${method} ${code}`));
    clients.push(rest);
    const elector = new LeaderElector(rest, {
      namespace, name: lease, identity: 'candidate-fast', leaseDurationSeconds: LEASE_DURATION, renewDeadlineSeconds: RENEW_DEADLINE, retryPeriodSeconds: RETRY_PERIOD,
    });
    electors.push(elector);
    void elector.run({ onStartedLeading: () => undefined, onStoppedLeading: () => undefined });
    await eventually('the candidate leads', async () => elector.isLeader(), 20_000);
    const acquired = requests.length;
    // Counted, not timed: on a loaded machine fewer renewals fit into a fixed sleep.
    await eventually('three renewals', async () => requests.length - acquired >= 3, 20_000);
    const renewals = requests.slice(acquired);
    // The write's resourceVersion from the last renewal makes it a compare-and-swap without a read.
    expect(renewals.filter((r) => r !== 'PUT 200')).toEqual([]);
    expect(elector.isLeader()).toBe(true);
    expect(await holder(lease)).toEqual({ holder: 'candidate-fast', transitions: 0 });
  });

  it('hands over at once when the leader releases the lease, without waiting for it to expire', async () => {
    const lease = freshLease();
    const [leader, standby] = await electOne(lease);
    // Every state the Lease passes through, seen on a watch (a poll could miss the released state).
    const states: string[] = [];
    const watch = await new Watch(kc).watch(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
      { fieldSelector: `metadata.name=${lease}` }, (_type: string, l: V1Lease) => {
        const state = `${l.spec?.holderIdentity ?? '(released)'}/${l.spec?.leaseDurationSeconds}`;
        if (states.at(-1) !== state) states.push(state);
      }, () => undefined);
    try {
      await eventually('the watch sees the leader', async () => states.length > 0, 10_000);
      const t0 = Date.now();
      await leader!.elector.release();
      await leader!.done;
      expect(leader!.elector.isLeader()).toBe(false);
      await eventually('the standby takes over', async () => standby!.elector.isLeader(), 10_000);
      process.stderr.write(`leader election: takeover after release took ${Date.now() - t0} ms (retry period ${RETRY_PERIOD * 1000} ms)\n`);
      await eventually('the watch sees the new holder', async () => states.at(-1)?.startsWith(`${standby!.identity}/`) === true, 10_000);
    } finally {
      watch.abort();
    }
    expect(await holder(lease)).toEqual({ holder: standby!.identity, transitions: 1 });
    // The handover went through the release (no holder, a 1 s lease), not through the old lease's
    // expiry: shown by the Lease's states rather than by the test's clock, which the machine's load moves.
    expect(states).toEqual([`${leader!.identity}/${LEASE_DURATION}`, '(released)/1', `${standby!.identity}/${LEASE_DURATION}`]);
    expect(leader!.events).not.toContain('stopped'); // a release is not a loss
  });

  it('replaces a leader that stops renewing (as after SIGKILL) once its lease expires, never before', async () => {
    const lease = freshLease();
    const [leader, standby] = await electOne(lease);
    // Wait for a renewal to land so the expiry is measured from a known recent renewTime.
    await sleep(RETRY_PERIOD * 2000);
    const t0 = Date.now();
    leader!.elector.stop();
    // A renewal in flight at stop() may still land: the last renewTime is read after the leader stopped.
    await sleep(RETRY_PERIOD * 1000);
    const stopped = await leases.readNamespacedLease({ name: lease, namespace });
    expect(stopped.spec?.holderIdentity).toBe(leader!.identity);
    await eventually('the standby takes over the expired lease', async () => standby!.elector.isLeader(), 20_000);
    process.stderr.write(`leader election: takeover after a silent leader took ${Date.now() - t0} ms (lease duration ${LEASE_DURATION * 1000} ms)\n`);
    const after = await leases.readNamespacedLease({ name: lease, namespace });
    expect({ holder: after.spec?.holderIdentity, transitions: after.spec?.leaseTransitions }).toEqual({ holder: standby!.identity, transitions: 1 });
    // Safety, from the Lease's own timestamps: the standby acquired it only once the leader's last
    // renewal had expired (both candidates stamp times from this host's clock).
    const lastRenewal = new Date(stopped.spec!.renewTime!).getTime();
    expect(new Date(after.spec!.acquireTime!).getTime()).toBeGreaterThanOrEqual(lastRenewal + LEASE_DURATION * 1000);
  });

  it('steps down when another holder takes the lease', async () => {
    const lease = freshLease();
    const solo = candidate('candidate-solo', lease);
    await eventually('the candidate leads', async () => solo.elector.isLeader(), 20_000);
    await intruderTakes(lease);
    await eventually('the candidate steps down', async () => solo.events.includes('stopped'), 10_000);
    expect(solo.elector.isLeader()).toBe(false);
    await solo.done;
    expect(solo.events).toEqual(['leader:candidate-solo', 'started', 'leader:intruder', 'stopped']);
  });

  // Expiry is judged from when the candidate saw the record change, on its own clock (client-go):
  // another holder's renewTime, stamped by that holder's clock, is never compared with ours.
  it('a holder whose clock runs an hour behind keeps the lease while it renews, and loses it once it stops', async () => {
    const lease = freshLease();
    const hourBehind = () => microTime(Date.now() - 3_600_000);
    // A long lease, renewed every 0.5 s: a loaded machine cannot make the holder miss its renewals.
    await writeLease(lease, { holderIdentity: 'skewed-behind', leaseDurationSeconds: 10, acquireTime: hourBehind(), renewTime: hourBehind(), leaseTransitions: 0 });
    let renewals = 0;
    let renewing = true;
    const holderLoop = (async () => {
      while (renewing) {
        await sleep(500);
        if (renewing) await writeLease(lease, { renewTime: hourBehind() }).then(() => renewals++, () => undefined);
      }
    })();
    const c = candidate('candidate-c', lease, { leaseDurationSeconds: 10 });
    try {
      // More than two of its lease durations of renewals, counted (not timed): the candidate never took it.
      await eventually('40 renewals of the skewed holder', async () => renewals >= 40, 60_000);
      expect(c.events).toEqual(['leader:skewed-behind']);
      expect((await holder(lease)).holder).toBe('skewed-behind');
    } finally {
      renewing = false;
      await holderLoop;
    }
    await eventually('the candidate takes the lease the holder stopped renewing', async () => c.elector.isLeader(), 30_000);
    expect(await holder(lease)).toEqual({ holder: 'candidate-c', transitions: 1 });
  }, 120_000);

  it('a holder whose clock runs an hour ahead and stops renewing is replaced after a lease duration, not an hour later', async () => {
    const lease = freshLease();
    const hourAhead = microTime(Date.now() + 3_600_000);
    await writeLease(lease, { holderIdentity: 'skewed-ahead', leaseDurationSeconds: LEASE_DURATION, acquireTime: hourAhead, renewTime: hourAhead, leaseTransitions: 0 });
    const c = candidate('candidate-c', lease);
    await eventually('the candidate takes over', async () => c.elector.isLeader(), 30_000);
    expect(await holder(lease)).toEqual({ holder: 'candidate-c', transitions: 1 });
    expect(c.events).toEqual(['leader:skewed-ahead', 'leader:candidate-c', 'started']);
  });

  it("fences writes: a standby's are refused, the leader's go through, and none once another holder took the lease", async () => {
    const lease = freshLease();
    const [leader, standby] = await electOne(lease);
    expect(await writeConfigMap(standby!.rest, 'fence-from-standby')).toBe('WriteRefused');
    expect(await writeConfigMap(leader!.rest, 'fence-from-leader')).toBe('created');
    await intruderTakes(lease);
    await eventually('the leader steps down', async () => leader!.events.includes('stopped'), 10_000);
    expect(await writeConfigMap(leader!.rest, 'fence-after-the-loss')).toBe('WriteRefused');
    expect(await configMapNames('fence-')).toEqual(['fence-from-leader']);
  });

  it('a leader whose clock jumps past its renew deadline (as on waking from a freeze) steps down at its next write, and that write is not sent', async () => {
    const lease = freshLease();
    let jumpMs = 0;
    // Renewals 5 s apart: the write below comes long before the renew loop runs again.
    const leader = candidate('candidate-frozen', lease, { leaseDurationSeconds: 10, renewDeadlineSeconds: 8, retryPeriodSeconds: 5, clock: () => performance.now() + jumpMs });
    await eventually('the candidate leads', async () => leader.elector.isLeader(), 20_000);
    expect(await writeConfigMap(leader.rest, 'jump-before')).toBe('created');
    jumpMs = 11_000;
    expect(await writeConfigMap(leader.rest, 'jump-after')).toBe('WriteRefused');
    expect(leader.events.at(-1)).toBe('stopped');
    expect(leader.elector.isLeader()).toBe(false);
    await leader.done;
    expect(await configMapNames('jump-')).toEqual(['jump-before']);
  });

  describe('when API Priority and Fairness rejects the leader\'s renewals (429)', () => {
    // The operator's ServiceAccount (with the bundle's RBAC: the Lease named after the operator) in a
    // namespace of its own, and a flow schema sending its Lease requests to a priority level of no
    // seats of its own (nominalConcurrencyShares 0, nothing borrowed), rejecting (429, with a
    // Retry-After the client waits out and retries) whatever finds a request of that level executing.
    // APF still runs one request of a level when none is (0 seats is not "never"), so a ballast
    // identity of the same schema keeps one executing nearly always: LISTs of a few large ConfigMaps.
    const LEASE = 'appkind-operator';
    const BALLAST = 'lease-ballast';
    const SQUEEZE = `appkind-lease-squeeze-${Date.now().toString(36)}`;
    let squeezedNs: string;
    let saKc: KubeConfig;
    let ballastKc: KubeConfig;
    const squeeze = (): KubernetesObject[] => [
      {
        apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name: SQUEEZE },
        spec: { type: 'Limited', limited: { nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } } },
      } as KubernetesObject,
      {
        apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', metadata: { name: SQUEEZE },
        spec: {
          priorityLevelConfiguration: { name: SQUEEZE },
          matchingPrecedence: 40,
          distinguisherMethod: { type: 'ByUser' },
          rules: [{
            subjects: [OPERATOR_SA, BALLAST].map((name) => ({ kind: 'ServiceAccount', serviceAccount: { name, namespace: squeezedNs } })),
            resourceRules: [{ verbs: ['*'], apiGroups: ['', 'coordination.k8s.io'], resources: ['leases', 'configmaps'], namespaces: [squeezedNs] }],
          }],
        },
      } as KubernetesObject,
    ];
    const unsqueeze = async (admin: RestClient) => {
      for (const obj of squeeze().reverse()) await admin.delete(obj).catch(() => undefined);
    };

    beforeAll(async () => {
      squeezedNs = await createTestNamespace(kc, 'lease429');
      await installOperatorIdentity(kc, [SAMPLE_KIND], squeezedNs);
      saKc = new KubeConfig();
      saKc.loadFromFile(await sharedServiceAccountKubeconfig(squeezedNs, OPERATOR_SA));
      await applyManifests(kc, [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: BALLAST, namespace: squeezedNs } },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: BALLAST, namespace: squeezedNs }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }] } as KubernetesObject,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: BALLAST, namespace: squeezedNs },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: BALLAST }, subjects: [{ kind: 'ServiceAccount', name: BALLAST, namespace: squeezedNs }],
        } as KubernetesObject,
        ...Array.from({ length: 8 }, (_, i) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `ballast-${i}`, namespace: squeezedNs }, data: { d: 'x'.repeat(900_000) } }) as KubernetesObject),
      ]);
      ballastKc = new KubeConfig();
      ballastKc.loadFromFile(await sharedServiceAccountKubeconfig(squeezedNs, BALLAST));
    });
    afterAll(async () => {
      const admin = new RestClient(kc);
      await unsqueeze(admin);
      admin.close();
    });

    it('steps down before its lease expires, sends no renewal afterwards, and a standby takes over only once it expired', async () => {
      const admin = new RestClient(kc);
      clients.push(admin);
      const throttled: string[] = [];
      const rest = new RestClient(saKc, undefined, { onThrottled: (method, code) => throttled.push(`${method} ${code}`) });
      clients.push(rest);
      // A lease well beyond the renew deadline, as in the cut-off test below: the margin lets a loaded
      // process step down in time.
      const leaseDuration = RENEW_DEADLINE + 8;
      const opts = { namespace: squeezedNs, name: LEASE, leaseDurationSeconds: leaseDuration, renewDeadlineSeconds: RENEW_DEADLINE, retryPeriodSeconds: RETRY_PERIOD };
      const leader = new LeaderElector(rest, { ...opts, identity: 'candidate-throttled' });
      electors.push(leader);
      let stoppedAt = 0;
      const done = leader.run({ onStartedLeading: () => undefined, onStoppedLeading: () => void (stoppedAt = Date.now()) });
      await eventually('the candidate leads', async () => leader.isLeader(), 20_000);

      // Every state of the Lease (holder, renewTime), as a watch sees it.
      const states: { holder?: string; renewTime: number; acquireTime: number; transitions?: number }[] = [];
      const watch = await new Watch(kc).watch(`/apis/coordination.k8s.io/v1/namespaces/${squeezedNs}/leases`,
        { fieldSelector: `metadata.name=${LEASE}` }, (_type: string, l: V1Lease) => {
          states.push({
            holder: l.spec?.holderIdentity, renewTime: new Date(l.spec!.renewTime!).getTime(),
            acquireTime: new Date(l.spec!.acquireTime!).getTime(), transitions: l.spec?.leaseTransitions,
          });
        }, () => undefined);
      const ballast = new RestClient(ballastKc, undefined, { retries: 0 });
      clients.push(ballast);
      let ballasting = true;
      const ballastLoops = Array.from({ length: 4 }, async () => {
        while (ballasting) {
          await ballast.request('GET', `/api/v1/namespaces/${squeezedNs}/configmaps`).catch(() => undefined);
          await sleep(1);
        }
      });
      try {
        await applyManifests(kc, squeeze());
        await eventually('the leader steps down', async () => stoppedAt > 0, 60_000);
        ballasting = false;
        await Promise.all(ballastLoops);
        await done;
        expect(leader.isLeader()).toBe(false);
        // Its renewals were throttled, not failing otherwise.
        expect(throttled.length).toBeGreaterThan(0);
        expect(new Set(throttled)).toEqual(new Set(['PUT 429']));
        // Nothing of the leader's got through the squeeze: the Lease still holds its last renewal.
        const atStop = (await leases.readNamespacedLease({ name: LEASE, namespace: squeezedNs })).spec!;
        expect(atStop.holderIdentity).toBe('candidate-throttled');
        const lastRenewal = new Date(atStop.renewTime!).getTime();
        // It stopped leading while that renewal still held the lease for it (before anyone could take over).
        expect(stoppedAt).toBeLessThan(lastRenewal + leaseDuration * 1000);

        // The squeeze lifted: a throttled retry of the leader's still waiting out its Retry-After would
        // be sent now and land (nobody else wrote the Lease, so its compare-and-swap would pass). The
        // client's retries of one request wait about 1, 2 and 4 s: look for 10 s.
        await unsqueeze(admin);
        await sleep(10_000);
        // An admin candidate: never squeezed.
        const standby = candidate('candidate-standby', LEASE, { namespace: squeezedNs, leaseDurationSeconds: leaseDuration });
        await eventually('the standby takes over', async () => standby.elector.isLeader(), 20_000);
        await eventually('the watch sees the standby hold it', async () => states.at(-1)?.holder === 'candidate-standby', 10_000);
        // No renewal of the stepped-down leader landed after its step-down.
        expect(states.filter((st) => st.holder === 'candidate-throttled' && st.renewTime > lastRenewal)).toEqual([]);
        // The standby acquired the Lease only after the leader's last renewal had expired.
        const taken = states.at(-1)!;
        expect(taken.acquireTime).toBeGreaterThanOrEqual(lastRenewal + leaseDuration * 1000);
        expect(taken.transitions).toBe((atStop.leaseTransitions ?? 0) + 1);
      } finally {
        ballasting = false;
        watch.abort();
      }
    }, 120_000);
  });

  describe('when the API server becomes unreachable', () => {
    let proxy: TcpProxy;
    beforeAll(async () => {
      proxy = await TcpProxy.start(new URL(sharedCluster().server));
    });
    afterAll(async () => proxy.close());

    it('gives up leadership after the renew deadline, before its lease expires, and calls onStoppedLeading', async () => {
      const lease = freshLease();
      const viaProxy = kubeConfigFor(kc, `https://127.0.0.1:${proxy.port}`);
      // A lease well beyond the renew deadline (as the defaults, 15 s and 10 s, are): the margin
      // between them is what lets a loaded process step down in time; 1 s (3 s and 2 s) was not always enough.
      const leaseDuration = RENEW_DEADLINE + 8;
      const leader = candidate('candidate-cut-off', lease, { kubeConfig: viaProxy, leaseDurationSeconds: leaseDuration });
      await eventually('the candidate leads', async () => leader.elector.isLeader(), 20_000);
      const t0 = Date.now();
      proxy.cut();
      await eventually('the leader steps down', async () => leader.events.includes('stopped'), 20_000);
      const stoppedAt = leader.stoppedAtMs()!;
      expect(leader.elector.isLeader()).toBe(false);
      await leader.done;
      // Read directly (not through the cut proxy): the last renewal that reached the server. A renewal
      // cut off mid-flight may have landed without the leader seeing the answer; that only moves the expiry later.
      const last = await leases.readNamespacedLease({ name: lease, namespace });
      expect(last.spec?.holderIdentity).toBe(leader.identity);
      const expiresAt = new Date(last.spec!.renewTime!).getTime() + last.spec!.leaseDurationSeconds! * 1000;
      process.stderr.write(`leader election: cut-off leader stepped down ${stoppedAt - t0} ms after the cut, ${expiresAt - stoppedAt} ms before its lease expired (renew deadline ${RENEW_DEADLINE * 1000} ms)\n`);
      // Safety: it stopped leading before others could take the lease (both times from this host's clock).
      expect(stoppedAt).toBeLessThan(expiresAt);
      expect(last.spec!.leaseDurationSeconds).toBe(leaseDuration);
    });
  });
});

describe('a leader frozen past its lease (SIGSTOP), replaced, then woken (SIGCONT)', () => {
  // Two operator processes as the bundle's ServiceAccount, told apart in the audit log by the
  // identity in their User-Agent. Proven from the API server's audit log, not from timing.
  const PROCESS_LEASE = { APPKIND_LEASE_DURATION_SECONDS: '4', APPKIND_RENEW_DEADLINE_SECONDS: '3', APPKIND_RETRY_PERIOD_SECONDS: '1' };
  const WRITES = ['create', 'update', 'patch', 'delete', 'deletecollection'];
  const processes: OperatorProcess[] = [];
  afterAll(async () => {
    for (const p of processes) {
      p.child.kill('SIGCONT');
      await p.stop('SIGKILL');
    }
  });

  it('writes nothing after it wakes and exits non-zero, while the replica that took over reconciled', async () => {
    const { ns, rest: admin } = await prepareOperatorNamespace('frozen', [SAMPLE_KIND]);
    clients.push(admin);
    const replica = async (id: string) => {
      const p = await OperatorProcess.start(ns, { APPKIND_LEADER_ELECT: 'true', APPKIND_LEASE_NAMESPACE: ns, APPKIND_POD_NAME: id, ...PROCESS_LEASE });
      processes.push(p);
      return p;
    };
    const a = await replica('replica-a');
    await a.waitForLog((l) => l.msg === 'became leader');
    const b = await replica('replica-b');
    await b.waitForLog((l) => l.msg === 'leader is' && l.identity === 'replica-a');
    const cr = (name: string, size: number) => admin.apply({ ...crObject(SAMPLE_KIND, ns, name), spec: { size } }, 'test-user');
    const deployment = (name: string) => admin.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: ns, name: `${name}-deployment` } });
    const names = Array.from({ length: 20 }, (_, i) => `frozen-${i}`);

    // Frozen while busy: 20 CRs at once, and A stopped as soon as it starts on them, so that it
    // wakes with reconciles in flight, answers in its sockets and retries on its timers.
    const created = Promise.all(names.map((n) => cr(n, 1)));
    await a.waitForLog((l) => l.msg === 'reconcile started');
    a.child.kill('SIGSTOP');
    await created;
    // While A is frozen: B takes over, finishes A's work and reconciles a change made meanwhile.
    await b.waitForLog((l) => l.msg === 'became leader', 60_000);
    await cr('frozen-0', 2);
    await eventually('B applied all 20 CRs and the change', async () =>
      (await Promise.all(names.map(deployment))).every((d, i) => d?.spec?.replicas === (i === 0 ? 2 : 1)), 60_000);
    expect((await holder('appkind-operator', ns)).holder).toBe('replica-b');

    // The resume point, in the audit log itself: everything A sends from now on is logged after this read.
    const marker = `resume-marker-${Date.now().toString(36)}`;
    await admin.request('GET', `/api/v1/namespaces/${ns}/configmaps/${marker}`).catch(() => undefined);
    a.child.kill('SIGCONT');
    expect(await a.exitCode()).toBe(1);
    expect(a.logs.some((l) => l.msg === 'lost leadership')).toBe(true);

    const log = await readSharedAuditLog();
    const resumed = log.findIndex((e) => e.objectRef?.name === marker);
    expect(resumed).toBeGreaterThan(0);
    const byA = (e: { userAgent?: string }) => e.userAgent?.endsWith(' replica-a') === true;
    const describe = (e: (typeof log)[number]) => `${e.verb} ${e.requestURI} ${e.responseStatus?.code ?? e.stage}`;
    // A did write before its freeze (so the filter finds its requests), and nothing after it woke.
    expect(log.slice(0, resumed).filter((e) => byA(e) && WRITES.includes(e.verb)).length).toBeGreaterThan(0);
    expect(log.slice(resumed).filter((e) => byA(e) && WRITES.includes(e.verb)).map(describe)).toEqual([]);
    // B still leads and writes.
    expect((await holder('appkind-operator', ns)).holder).toBe('replica-b');
    expect(b.exited).toBe(false);
  }, 240_000);
});

/** The same credentials against another server URL. */
function kubeConfigFor(base: KubeConfig, server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: base.clusters.map((c) => ({ ...c, server })),
    users: base.users,
    contexts: base.contexts,
    currentContext: base.currentContext,
  });
  return kc;
}
