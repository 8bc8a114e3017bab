// The operator as a cluster admin installs it: the bundle `cdk8s synth` writes, RBAC from that file,
// the operator authenticated only as the bundle's ServiceAccount, all namespaces, leader election on.
// A control plane of its own: an all-namespaces operator would also reconcile other test files' CRs.
// Its API server runs OwnerReferencesPermissionEnforcement (as OpenShift does), so the bundle's RBAC
// must also cover the blockOwnerDeletion owner references the operator sets.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, Watch } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { AppKind } from 'cdk8s-appkind';
import { ApiError, APPLY_PATCH, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import type { AuditEvent } from '../../tools/controlplane/audit.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { waitFor } from '../../tools/controlplane/readiness.js';
import { apiserverWithAdmissionPlugins } from './apiserver-flags.js';
import { operatorPod, podEnv, podKinds, readBundle, synthBundle } from './bundle-file.js';
import { configMapFiles } from './operator-container.js';
import { AdmissionWebhook } from './admission-webhook.js';
import { crObject } from './cluster.js';
import { LogLine, metricValue, OperatorProcess } from './operator-process.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

// Short timings so a failover takes seconds. Its speed is asserted by the Lease's states and the
// standby's requests (it takes over at its first poll after the expiry; through a release without
// waiting for one), not by this test's clock, which the machine's load moves.
const LEASE = { durationSeconds: 4, renewDeadlineSeconds: 3, retryPeriodSeconds: 1 };
// Each run's figures; bench/failover.json is the copy docs/benchmark.md quotes (a run does not rewrite it).
const BENCH_FILE = join(root, 'bench', 'out', 'failover.json');

jest.setTimeout(300_000);

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
type Deployment = Obj & { spec: { replicas: number } };
type Service = Obj & { spec: { type: string; ports: { port: number; nodePort?: number }[] } };
type Cr = Obj & { status?: { nodes?: string[]; replicas?: number; nodePort?: number } };
type LeaseSpec = { holderIdentity?: string; leaseDurationSeconds?: number; leaseTransitions?: number; renewTime?: string; acquireTime?: string };
type Lease = Obj & { spec: LeaseSpec };
type DeploymentManifest = Obj & { spec: { template: { spec: { serviceAccountName: string } } } };

let cp: ControlPlane;
let admin: KubeConfig;
let rest: RestClient;
let scratch: string;
let bundleFile: string;
let bundle: KubernetesObject[];
let kind: AppKind;
let operatorNamespace: string;
let serviceAccount: string;
let saUser: string;
let saKubeconfig: string;
let leaseName: string;
const operators: OperatorProcess[] = [];
const failover: Record<string, unknown> = {};

const isDeployment = (o: KubernetesObject) => o.kind === 'Deployment' && o.apiVersion === 'apps/v1';
const isCrd = (o: KubernetesObject) => o.kind === 'CustomResourceDefinition';
const operatorDeployment = () => bundle.find(isDeployment) as DeploymentManifest;

/**
 * The operator container's environment from the synthesized Deployment, with the downward API
 * (APPKIND_POD_NAME, APPKIND_POD_NAMESPACE) filled in as the kubelet would, and test overrides: free ports, debug
 * logs, short lease timings.
 */
function operatorEnv(podName: string): Record<string, string> {
  const env = podEnv(operatorPod(bundle), podName);
  return {
    ...env,
    // The kinds ConfigMap as the kubelet mounts it: its data as files in a folder.
    APPKIND_CONFIG: join(configMapFiles(operatorPod(bundle), env.APPKIND_CONFIG_MAP!, scratch), basename(env.APPKIND_CONFIG!)),
    APPKIND_METRICS_PORT: '0',
    APPKIND_HEALTH_PORT: '0',
    APPKIND_LOG_LEVEL: 'debug',
    APPKIND_LEASE_DURATION_SECONDS: String(LEASE.durationSeconds),
    APPKIND_RENEW_DEADLINE_SECONDS: String(LEASE.renewDeadlineSeconds),
    APPKIND_RETRY_PERIOD_SECONDS: String(LEASE.retryPeriodSeconds),
  };
}

/** A replica of the operator as the bundle's ServiceAccount; resolves once its caches synced (or `until`). */
async function startReplica(podName: string, until?: (l: LogLine) => boolean): Promise<OperatorProcess> {
  const op = await OperatorProcess.spawn({ kubeconfig: saKubeconfig, env: operatorEnv(podName), until });
  operators.push(op);
  return op;
}

const crRef = (namespace: string, name: string): KubernetesObject => crObject(kind, namespace, name);
const applyCr = (namespace: string, name: string, size: number) => rest.apply({ ...crRef(namespace, name), spec: { size } }, 'test-user');
const deploymentOf = (namespace: string, cr: string) => rest.get<Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name: `${cr}-deployment` } });
const leaseNow = () => rest.get<Lease>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { namespace: operatorNamespace, name: leaseName } });

/**
 * Every version of the operator's Lease from now on, as a watch delivers them (a poll could miss a
 * state, e.g. the released one, or a renewal). `states()` collapses them to holder/duration.
 */
async function watchLease() {
  const seen: LeaseSpec[] = [];
  const watch = await new Watch(admin).watch(`/apis/coordination.k8s.io/v1/namespaces/${operatorNamespace}/leases`,
    { fieldSelector: `metadata.name=${leaseName}` }, (_type: string, l: Lease) => void seen.push(l.spec), () => undefined);
  await eventually('the watch delivers the Lease', async () => seen.length > 0, 30_000);
  const states = () => seen.map((l) => `${l.holderIdentity ?? '(released)'}/${l.leaseDurationSeconds}`).filter((x, i, all) => i === 0 || all[i - 1] !== x);
  return { seen, states, stop: () => watch.abort() };
}

async function podNames(namespace: string, instance: string): Promise<string[]> {
  const pods = await rest.list<Obj>('v1', 'Pod', namespace, `app.kubernetes.io/instance=${instance}`);
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name!).sort();
}

/** status.nodes holds exactly the CR's `size` live pods. */
async function converged(namespace: string, name: string, size: number): Promise<boolean> {
  const [deployment, cr, pods] = await Promise.all([deploymentOf(namespace, name), rest.get<Cr>(crRef(namespace, name)), podNames(namespace, name)]);
  const nodes = cr?.status?.nodes ?? [];
  return deployment?.spec.replicas === size && pods.length === size && JSON.stringify(nodes) === JSON.stringify(pods);
}

/** For a failure message: each CR of `names` not converged at `size`, with what the cluster holds for it. */
async function unconverged(namespace: string, names: string[], size: number): Promise<string> {
  const lines: string[] = [];
  for (const name of names) {
    if (await converged(namespace, name, size)) continue;
    const [deployment, cr, pods] = await Promise.all([deploymentOf(namespace, name), rest.get<Cr>(crRef(namespace, name)), podNames(namespace, name)]);
    lines.push(`${name}: Deployment replicas ${deployment?.spec.replicas} status ${JSON.stringify(deployment?.status)}; pods ${JSON.stringify(pods)}; CR status ${JSON.stringify(cr?.status)}`);
  }
  return lines.join('\n');
}

const eventually = (what: string, check: () => Promise<boolean>, timeoutMs = 90_000) => waitFor(what, check, { timeoutMs, intervalMs: 100 });

async function newNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await rest.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  return name;
}

/** What the API server answered the ServiceAccount: the HTTP code of a request made with its token. */
async function codeFor(client: RestClient, method: string, path: string, body?: unknown): Promise<number> {
  try {
    await client.request(method, path, { body });
    return 200;
  } catch (e) {
    if (e instanceof ApiError) return e.code;
    throw e;
  }
}

async function canI(client: RestClient, attributes: Record<string, string>): Promise<boolean> {
  const review = await client.request<{ status: { allowed: boolean } }>('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: attributes } },
  });
  return review.status.allowed;
}

const completed = (events: AuditEvent[]) => events.filter((e) => e.stage === 'ResponseComplete');
const WRITE_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];

async function writesOf(op: OperatorProcess): Promise<number> {
  const text = (await op.http('/metrics')).body;
  return WRITE_METHODS.reduce((n, method) => n + metricValue(text, 'rest_client_requests_total', { method }), 0);
}

const seconds = (ms: number) => Math.round(ms) / 1000;
/** A Lease time (a string on a watch; a Date where client-node deserialized it) in ms since the epoch. */
const timeMs = (t: string | Date | undefined) => new Date(t ?? NaN).getTime();

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'appkind-in-cluster-'));
  cp = await ControlPlane.start({ auditLog: true, binaries: await apiserverWithAdmissionPlugins(scratch, ['OwnerReferencesPermissionEnforcement']) });
  admin = cp.kubeConfig();
  rest = new RestClient(admin);
  const out = join(scratch, 'dist');
  mkdirSync(out);
  bundleFile = await synthBundle(out);
  bundle = readBundle(bundleFile);
  const deployment = operatorDeployment();
  operatorNamespace = deployment.metadata!.namespace!;
  serviceAccount = deployment.spec.template.spec.serviceAccountName;
  saUser = `system:serviceaccount:${operatorNamespace}:${serviceAccount}`;
  const env = operatorEnv('probe');
  kind = podKinds(operatorPod(bundle))[0]!;
  leaseName = env.APPKIND_LEASE_NAME!;
});

afterAll(async () => {
  for (const op of operators) await op.stop('SIGKILL');
  await cp?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the install bundle from cdk8s synth', () => {
  test('is accepted by a server-side dry run (dryRun=All) of every object, and the dry run persists nothing', async () => {
    // Seven ClusterRoles: the operator's, its CRD rules' (read only: no kindGroups), its AppKinds', its
    // metrics reviews' (tokenreviews, subjectaccessreviews), the scrapers' metrics-reader, and the kind's
    // -view and -edit for CR authors; two CRDs (the kind's and the AppKind API's); four
    // ValidatingAdmissionPolicies with their bindings (what the operator's identity may write: its
    // Deployments, its Services, its PodDisruptionBudgets and NetworkPolicies, its CRDs, none without
    // kindGroups); the metrics Service and the NetworkPolicy admitting only its port.
    expect(bundle.map((o) => o.kind).sort()).toEqual([
      'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole',
      'ClusterRoleBinding', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ConfigMap',
      'CustomResourceDefinition', 'CustomResourceDefinition',
      'Deployment', 'Namespace', 'NetworkPolicy', 'Role', 'RoleBinding', 'Service', 'ServiceAccount',
      'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding',
    ]);
    // A dry run persists nothing, so objects cannot be dry-run into a namespace the same dry run
    // creates (kubectl has the same limit): the bundle's Namespace goes first, for real.
    const namespace = bundle.find((o) => o.kind === 'Namespace')!;
    await rest.apply(namespace, 'kubectl');
    for (const obj of bundle) {
      const path = await rest.path(obj.apiVersion!, obj.kind!, obj.metadata?.namespace, obj.metadata?.name);
      const answer = await rest.request<KubernetesObject>('PATCH', path, { body: obj, contentType: APPLY_PATCH, query: { fieldManager: 'kubectl', force: true, dryRun: 'All' } });
      expect({ kind: answer.kind, name: answer.metadata?.name }).toEqual({ kind: obj.kind, name: obj.metadata?.name });
    }
    for (const obj of bundle.filter((o) => o.kind !== 'Namespace')) expect(await rest.get(obj)).toBeUndefined();
  });

  test('is accepted by `kubectl apply --dry-run=server -f`, without Pod Security warnings', async () => {
    const kubectl = (process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'kubectl')).find((p) => {
      try {
        accessSync(p, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
    if (!kubectl) throw new Error('kubectl is not on PATH: install it (https://kubernetes.io/docs/tasks/tools/), as the README\'s Set up says');
    const { stdout, stderr } = await run(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '--dry-run=server', '-f', bundleFile]);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(bundle.length);
    for (const line of lines) expect(line).toMatch(/ \(server dry run\)$/);
    // The Namespace enforces the "restricted" Pod Security Standard; the API server warns about a
    // Deployment whose pod template would be rejected.
    expect(stderr).not.toMatch(/PodSecurity|would violate/);
    expect(await rest.get(operatorDeployment())).toBeUndefined();
  });
});

describe('the operator as the bundle\'s ServiceAccount, all namespaces, leader election on', () => {
  let a: OperatorProcess;
  let b: OperatorProcess;
  let c: OperatorProcess;
  let walkthrough: string;

  test('/readyz answers 503 while the caches cannot sync (CRD not installed yet) and 200 once they have; /healthz 200 throughout', async () => {
    // Everything but the operator Deployment (no kubelet would run its image) and, for now, the CRD.
    await applyManifests(admin, bundle.filter((o) => !isDeployment(o) && !isCrd(o)));
    saKubeconfig = await cp.serviceAccountKubeconfig(operatorNamespace, serviceAccount);
    a = await startReplica('appkind-operator-a', (l) => l.msg === 'operator starting');
    // Honest "not synced": the CR list fails (the resource does not exist), and keeps failing.
    await a.waitForLog((l) => l.msg === 'watch failed; relisting' && String(l.resource).endsWith(`/${kind.plural}`), 60_000);
    expect(await a.http('/readyz')).toMatchObject({ status: 503 });
    expect(await a.http('/healthz')).toMatchObject({ status: 200 });
    expect(a.logs.some((l) => l.msg === 'caches synced')).toBe(false);

    await applyManifests(admin, bundle.filter(isCrd));
    await eventually('/readyz 200', async () => (await a.http('/readyz')).status === 200);
    expect(await a.http('/healthz')).toMatchObject({ status: 200 });
    await a.waitForLog((l) => l.msg === 'caches synced');
    await a.waitForLog((l) => l.msg === 'became leader');
    expect(await a.metric('leader_election_master_status', { name: leaseName })).toBe(1);
  });

  test('runs the walkthrough: size 3 gives a Deployment of 3, a NodePort Service and 3 pod names in status.nodes; size 5 gives 5; the reconcile counter moves', async () => {
    walkthrough = await newNamespace('walkthrough');
    const name = 'example-echoflask';
    const successes = () => a.metric('controller_runtime_reconcile_total', { controller: kind.kind, result: 'success' });
    const before = await successes();

    await applyCr(walkthrough, name, 3);
    await eventually('3 replicas and 3 names in status.nodes', () => converged(walkthrough, name, 3));
    const svc = (await rest.get<Service>({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: walkthrough, name: `${name}-svc` } }))!;
    expect(svc.spec.type).toBe('NodePort');
    expect(svc.spec.ports[0]!.port).toBe(kind.port);
    // status comes from the operator's caches: the Service's watch event may land after the pods'.
    await eventually('status.nodePort is the Service\'s', async () => (await rest.get<Cr>(crRef(walkthrough, name)))?.status?.nodePort === svc.spec.ports[0]!.nodePort);
    const afterCreate = await successes();
    expect(afterCreate).toBeGreaterThan(before);

    await applyCr(walkthrough, name, 5);
    await eventually('5 replicas and 5 names in status.nodes', () => converged(walkthrough, name, 5));
    expect(await successes()).toBeGreaterThan(afterCreate);

    // The children were written by the ServiceAccount and nobody else (the controllers write status only).
    const childWrites = completed(await cp.readAuditLog()).filter((e) =>
      e.objectRef?.namespace === walkthrough && ['deployments', 'services'].includes(e.objectRef.resource ?? '') && !e.objectRef.subresource && ['create', 'patch', 'update'].includes(e.verb));
    expect(childWrites.length).toBeGreaterThanOrEqual(2);
    expect(new Set(childWrites.map((e) => e.user.username))).toEqual(new Set([saUser]));
    // ...under OwnerReferencesPermissionEnforcement: the blockOwnerDeletion references were admitted.
    expect(childWrites.filter((e) => (e.responseStatus?.code ?? 0) >= 300).map((e) => `${e.verb} ${e.requestURI} ${e.responseStatus?.code}`)).toEqual([]);
  });

  test('its RBAC is not `*`: Secrets, deleting a CR, creating a ClusterRole are denied with 403', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(saKubeconfig);
    const sa = new RestClient(kc);
    const crPath = await rest.path(`${kind.group}/${kind.version}`, kind.kind, walkthrough, 'example-echoflask');
    expect(await codeFor(sa, 'GET', `/api/v1/namespaces/${walkthrough}/secrets`)).toBe(403);
    expect(await codeFor(sa, 'GET', '/api/v1/secrets')).toBe(403);
    expect(await codeFor(sa, 'GET', `/api/v1/namespaces/${operatorNamespace}/secrets`)).toBe(403);
    expect(await codeFor(sa, 'GET', `/api/v1/namespaces/${walkthrough}/configmaps`)).toBe(403);
    expect(await codeFor(sa, 'DELETE', crPath)).toBe(403);
    expect(await codeFor(sa, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'escalate' }, rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
    })).toBe(403);
    expect(await codeFor(sa, 'POST', `/api/v1/namespaces/${walkthrough}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' }, spec: { containers: [{ name: 'x', image: 'x' }] } })).toBe(403);
    expect(await rest.get(crRef(walkthrough, 'example-echoflask'))).toBeDefined();

    expect(await canI(sa, { verb: '*', group: '*', resource: '*' })).toBe(false);
    expect(await canI(sa, { verb: 'get', resource: 'secrets', namespace: walkthrough })).toBe(false);
    expect(await canI(sa, { verb: 'delete', group: kind.group, resource: kind.plural, namespace: walkthrough })).toBe(false);
    // What it does use is allowed (the finalizers update is what OwnerReferencesPermissionEnforcement checks).
    expect(await canI(sa, { verb: 'patch', group: 'apps', resource: 'deployments', namespace: walkthrough })).toBe(true);
    expect(await canI(sa, { verb: 'patch', group: kind.group, resource: kind.plural, subresource: 'status', namespace: walkthrough })).toBe(true);
    expect(await canI(sa, { verb: 'update', group: kind.group, resource: kind.plural, subresource: 'finalizers', namespace: walkthrough })).toBe(true);
    expect(await canI(sa, { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', name: leaseName, namespace: operatorNamespace })).toBe(true);
    expect(await canI(sa, { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', name: 'another-lease', namespace: operatorNamespace })).toBe(false);
  });

  test('with two replicas exactly one leads, and only the leader writes', async () => {
    b = await startReplica('appkind-operator-b');
    await b.waitForLog((l) => l.msg === 'leader is' && l.identity === 'appkind-operator-a');
    expect((await leaseNow())!.spec.holderIdentity).toBe('appkind-operator-a');
    expect(await a.metric('leader_election_master_status', { name: leaseName })).toBe(1);
    expect(await b.metric('leader_election_master_status', { name: leaseName })).toBe(0);

    // Work for the leader while both run.
    await applyCr(walkthrough, 'second-echoflask', 2);
    await applyCr(walkthrough, 'example-echoflask', 4);
    await eventually('second-echoflask converged', () => converged(walkthrough, 'second-echoflask', 2));
    await eventually('example-echoflask converged at 4', () => converged(walkthrough, 'example-echoflask', 4));

    expect(b.logs.filter((l) => ['became leader', 'workers started', 'reconcile started', 'created object', 'status updated'].includes(l.msg))).toEqual([]);
    expect(await writesOf(b)).toBe(0);
    expect(await b.metric('controller_runtime_reconcile_total')).toBe(0);
    // Both replicas share the ServiceAccount, so the audit log alone cannot tell them apart; but every
    // PATCH the server saw from it (applies and status updates) is one the leader counted.
    await eventually('audit PATCHes by the ServiceAccount = the leader\'s PATCH count', async () => {
      const leaderPatches = await a.metric('rest_client_requests_total', { method: 'PATCH' });
      const audited = completed(await cp.readAuditLog()).filter((e) => e.user.username === saUser && e.verb === 'patch').length;
      return audited > 0 && audited === leaderPatches && (await a.metric('rest_client_requests_total', { method: 'PATCH' })) === leaderPatches;
    }, 30_000);
    expect(await writesOf(b)).toBe(0);
  });

  test('SIGKILL of the leader: the standby takes over at its first poll after the lease expired, and reconciles', async () => {
    const lease = await watchLease();
    const transitionsBefore = (await leaseNow())!.spec.leaseTransitions ?? 0;
    const killedAt = Date.now();
    expect(await a.stop('SIGKILL')).toBeNull();
    // A change made while nobody leads; the new leader must apply it.
    await applyCr(walkthrough, 'example-echoflask', 2);

    const leader = await b.waitForLog((l) => l.msg === 'became leader', 60_000);
    const firstReconcile = await b.waitForLog((l) => l.msg === 'reconcile started');
    const key = `${kind.kind}/${walkthrough}/example-echoflask`;
    const applied = await b.waitForLog((l) => l.msg === 'applied drifted object' && l.key === key && String(l.object).startsWith('Deployment'));
    await eventually('example-echoflask converged at 2', () => converged(walkthrough, 'example-echoflask', 2));
    await eventually('the watch sees b\'s Lease', async () => lease.seen.at(-1)?.holderIdentity === 'appkind-operator-b');
    lease.stop();

    // a's last renewal as the watch saw it (each renewal is a new version), then b's takeover.
    const lastOfA = lease.seen.filter((l) => l.holderIdentity === 'appkind-operator-a').at(-1)!;
    const takeover = lease.seen.find((l) => l.holderIdentity === 'appkind-operator-b')!;
    const expiry = timeMs(lastOfA.renewTime) + lastOfA.leaseDurationSeconds! * 1000;
    // Straight from a to b: nobody released it, nobody else held it; one transition.
    expect(lease.states()).toEqual([`appkind-operator-a/${LEASE.durationSeconds}`, `appkind-operator-b/${LEASE.durationSeconds}`]);
    expect(takeover.leaseTransitions).toBe(transitionsBefore + 1);
    // Safety: b took the Lease only once a's last renewal had expired (both stamp this host's clock).
    expect(timeMs(takeover.acquireTime)).toBeGreaterThanOrEqual(expiry);
    // Promptness, as a count: the server saw at most two of b's Lease reads from the expiry to its
    // takeover write (the read of the poll that took it, and one poll begun just before the expiry).
    const leaseRequests = completed(await cp.readAuditLog()).filter((e) => e.user.username === saUser &&
      e.objectRef?.resource === 'leases' && e.objectRef.name === leaseName && Date.parse(e.stageTimestamp) >= expiry);
    const takeoverWrite = leaseRequests.findIndex((e) => e.verb === 'update');
    expect(takeoverWrite).toBeGreaterThanOrEqual(1);
    const readsBeforeTakeover = leaseRequests.slice(0, takeoverWrite);
    expect(readsBeforeTakeover.length).toBeLessThanOrEqual(2);
    expect(readsBeforeTakeover.every((e) => e.verb === 'get')).toBe(true);
    // b reconciled only once it led.
    expect(b.logs.indexOf(firstReconcile)).toBeGreaterThan(b.logs.indexOf(leader));

    const toLeader = OperatorProcess.timeOf(leader) - killedAt;
    const toReconcile = OperatorProcess.timeOf(firstReconcile) - killedAt;
    const toApplied = OperatorProcess.timeOf(applied) - killedAt;
    const toExpiry = expiry - killedAt;
    console.log(`SIGKILL failover (lease ${LEASE.durationSeconds}s, retry ${LEASE.retryPeriodSeconds}s): lease expired ${seconds(toExpiry)}s after the kill, new leader after ${seconds(toLeader)}s (${readsBeforeTakeover.length} read(s) of the Lease after the expiry), first reconcile after ${seconds(toReconcile)}s, the change made meanwhile applied after ${seconds(toApplied)}s`);
    failover.sigkill = {
      killToLeaseExpirySeconds: seconds(toExpiry), killToLeaderSeconds: seconds(toLeader), killToFirstReconcileSeconds: seconds(toReconcile), killToChangeAppliedSeconds: seconds(toApplied),
    };
    expect((await leaseNow())!.spec.holderIdentity).toBe('appkind-operator-b');
    expect(await b.metric('leader_election_master_status', { name: leaseName })).toBe(1);
  });

  test('SIGTERM of the leader releases the Lease at once: exit 0, the standby takes over the released Lease, not an expired one', async () => {
    c = await startReplica('appkind-operator-c');
    await c.waitForLog((l) => l.msg === 'leader is' && l.identity === 'appkind-operator-b');
    expect(await c.metric('leader_election_master_status', { name: leaseName })).toBe(0);

    const lease = await watchLease();
    const termAt = Date.now();
    expect(await b.stop('SIGTERM')).toBe(0);
    expect(b.logs.some((l) => l.msg === 'released the lease')).toBe(true);
    expect(b.logs.find((l) => l.msg === 'stopped')).toMatchObject({ signal: 'SIGTERM' });

    await applyCr(walkthrough, 'example-echoflask', 3);
    const leader = await c.waitForLog((l) => l.msg === 'became leader', 30_000);
    const firstReconcile = await c.waitForLog((l) => l.msg === 'reconcile started');
    await eventually('example-echoflask converged at 3', () => converged(walkthrough, 'example-echoflask', 3));
    await eventually('the watch sees c\'s Lease', async () => lease.seen.at(-1)?.holderIdentity === 'appkind-operator-c');
    lease.stop();
    const toLeader = OperatorProcess.timeOf(leader) - termAt;
    const toReconcile = OperatorProcess.timeOf(firstReconcile) - termAt;
    console.log(`SIGTERM hand-over: leader after ${seconds(toLeader)}s, first reconcile after ${seconds(toReconcile)}s (lease duration ${LEASE.durationSeconds}s)`);
    failover.sigterm = { termToLeaderSeconds: seconds(toLeader), termToFirstReconcileSeconds: seconds(toReconcile), exitCode: 0 };
    // The hand-over went through b's release (no holder, a 1 s lease), not through its lease's
    // expiry: shown by the Lease's states rather than by the test's clock, which the load moves.
    expect(lease.states()).toEqual([`appkind-operator-b/${LEASE.durationSeconds}`, '(released)/1', `appkind-operator-c/${LEASE.durationSeconds}`]);
    const released = lease.seen.find((l) => !l.holderIdentity)!;
    const takeover = lease.seen.find((l) => l.holderIdentity === 'appkind-operator-c')!;
    const lastOfB = lease.seen.filter((l) => l.holderIdentity === 'appkind-operator-b').at(-1)!;
    console.log(`SIGTERM hand-over: c acquired the Lease ${seconds(timeMs(takeover.acquireTime) - timeMs(released.renewTime))}s after b released it, ${seconds(timeMs(lastOfB.renewTime) + LEASE.durationSeconds * 1000 - timeMs(takeover.acquireTime))}s before b's last renewal would have expired`);
    expect((await leaseNow())!.spec.holderIdentity).toBe('appkind-operator-c');

    if (!failover.sigkill) return; // the SIGKILL test failed: no figures to publish
    mkdirSync(dirname(BENCH_FILE), { recursive: true });
    writeFileSync(BENCH_FILE, JSON.stringify({
      what: 'Leader failover of two operator replicas (separate processes, the bundle\'s ServiceAccount) on the real control plane; test/integration/in-cluster.test.ts',
      measuredAt: new Date().toISOString(),
      settings: { leaseDurationSeconds: LEASE.durationSeconds, renewDeadlineSeconds: LEASE.renewDeadlineSeconds, retryPeriodSeconds: LEASE.retryPeriodSeconds },
      ...failover,
      machine: { node: process.version, platform: process.platform, cpus: (await import('node:os')).cpus().length },
    }, null, 2) + '\n');
  });

  test('graceful shutdown: SIGTERM while reconciles are in flight finishes them, logs "stopped", exits 0 and leaves the Lease free', async () => {
    const busy = await newNamespace('busy');
    // Each Deployment apply of the namespace is held 3 s at admission, so the reconcile whose start
    // the test waits for is still in flight when SIGTERM lands, however fast the machine is.
    const hold = await AdmissionWebhook.start(rest, `hold-deployments-${busy}`, busy, { group: 'apps', version: 'v1', plural: 'deployments' }, { allowAfterMs: 3000 });
    const probe = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'probe', namespace: busy },
      spec: { selector: { matchLabels: { app: 'probe' } }, template: { metadata: { labels: { app: 'probe' } }, spec: { containers: [{ name: 'c', image: 'probe' }] } } } };
    // The API server picks a new webhook configuration up a moment after it is written.
    await eventually('the webhook holds Deployment writes', async () => {
      const path = await rest.path(probe.apiVersion, probe.kind, busy, probe.metadata.name);
      await rest.request('PATCH', path, { body: probe, contentType: APPLY_PATCH, query: { fieldManager: 'test-user', dryRun: 'All' } });
      return hold.calls.length > 0;
    });
    const names = Array.from({ length: 30 }, (_, i) => `app-${i}`);
    const created = Promise.all(names.map((n) => applyCr(busy, n, 1)));
    try {
      await c.waitForLog((l) => l.msg === 'reconcile started' && String(l.key).includes(`/${busy}/`), 60_000);
      expect(await c.stop('SIGTERM')).toBe(0);
      await created;
    } finally {
      await hold.stop();
    }

    const shutting = c.logs.find((l) => l.msg === 'shutting down')!;
    console.log(`SIGTERM with ${String(shutting.inFlight)} reconciles in flight and ${String(shutting.queued)} queued; exited after ${seconds(OperatorProcess.timeOf(c.logs.find((l) => l.msg === 'stopped')!) - OperatorProcess.timeOf(shutting))}s`);
    expect(shutting).toMatchObject({ signal: 'SIGTERM' });
    expect(shutting.inFlight).toBeGreaterThanOrEqual(1);
    const at = c.logs.indexOf(shutting);
    const stoppedAt = c.logs.findIndex((l) => l.msg === 'stopped');
    expect(stoppedAt).toBeGreaterThan(at);
    // Every reconcile that had started finished before "stopped"; none was cut off.
    const started = c.logs.filter((l) => l.msg === 'reconcile started').map((l) => l.key);
    const finished = c.logs.slice(0, stoppedAt).filter((l) => l.msg === 'reconcile finished').map((l) => l.key);
    expect(finished.sort()).toEqual(started.sort());
    expect(c.logs.slice(at).some((l) => l.msg === 'in-flight reconciles did not finish within the grace period')).toBe(false);
    expect(c.logs.slice(at).some((l) => l.msg === 'released the lease')).toBe(true);
    expect((await leaseNow())!.spec.holderIdentity ?? '').toBe('');

    // The work it dropped is not lost: the next replica takes the free Lease and reconciles it all.
    const d = await startReplica('appkind-operator-d');
    await d.waitForLog((l) => l.msg === 'became leader', 30_000);
    try {
      await eventually('all 30 CRs converged', async () => (await Promise.all(names.map((n) => converged(busy, n, 1)))).every(Boolean), 120_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await unconverged(busy, names, 1)}\nreplica d, last log lines:\n${d.logs.slice(-40).map((l) => JSON.stringify(l)).join('\n')}`);
    }
    expect(await d.stop('SIGTERM')).toBe(0);
    expect((await leaseNow())!.spec.holderIdentity ?? '').toBe('');
  });
});
