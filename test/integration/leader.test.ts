// Leader election against the real control plane: two candidates on one Lease.
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { CoordinationV1Api, KubeConfig, KubernetesObject, V1Lease, V1MicroTime, Watch } from '@kubernetes/client-node';
import { AddressInfo, connect, createServer, Server, Socket } from 'node:net';
import { SAMPLE_KIND } from '../../operator/kinds/config.js';
import { LeaderCallbacks, LeaderElector } from '../../operator/runtime/leader.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { createTestNamespace, eventually, sharedCluster, sharedServiceAccountKubeconfig } from './cluster.js';
import { installOperatorIdentity, OPERATOR_SA } from './operator-process.js';

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
function candidate(identity: string, lease: string, opts: { kubeConfig?: KubeConfig; leaseDurationSeconds?: number; namespace?: string } = {}) {
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
    renewDeadlineSeconds: RENEW_DEADLINE,
    retryPeriodSeconds: RETRY_PERIOD,
  });
  electors.push(elector);
  const callbacks: LeaderCallbacks = {
    onStartedLeading: () => events.push('started'),
    onStoppedLeading: () => {
      stoppedAtMs = Date.now();
      events.push('stopped');
    },
    onNewLeader: (who) => events.push(`leader:${who}`),
  };
  const done = elector.run(callbacks);
  return { identity, elector, events, done, stoppedAtMs: () => stoppedAtMs };
}

function freshLease(): string {
  return `lease-${++leaseCounter}`;
}

async function holder(lease: string): Promise<{ holder?: string; transitions?: number }> {
  const l = await leases.readNamespacedLease({ name: lease, namespace });
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
    // Retried: the candidate's own renewals can make this compare-and-swap conflict (409).
    await eventually('the intruder takes the lease', async () => {
      const current = await leases.readNamespacedLease({ name: lease, namespace });
      const now = new V1MicroTime();
      await leases.replaceNamespacedLease({ name: lease, namespace, body: { ...current, spec: { ...current.spec, holderIdentity: 'intruder', renewTime: now, acquireTime: now } } });
      return true;
    }, 10_000);
    await eventually('the candidate steps down', async () => solo.events.includes('stopped'), 10_000);
    expect(solo.elector.isLeader()).toBe(false);
    await solo.done;
    expect(solo.events).toEqual(['leader:candidate-solo', 'started', 'leader:intruder', 'stopped']);
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

/** A TCP relay to the real API server that a test can cut, to make the server unreachable. */
class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private refusing = false;
  private readonly server: Server;

  private constructor(target: URL) {
    this.server = createServer((client) => {
      if (this.refusing) return void client.destroy();
      const upstream = connect(Number(target.port || 443), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined); // a cut connection errors; that is the point
      }
      client.pipe(upstream).pipe(client);
    });
  }

  static async start(target: URL): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await new Promise<void>((r) => proxy.server.listen(0, '127.0.0.1', r));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Drops every open connection and refuses new ones. */
  cut(): void {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}
