// Bad input, on the real control plane: what the CRD can say is refused by the API server at once with
// the field named; what only the operator can tell ends Degraded with a reason and an Event, touches
// nothing it does not own, and neither crashes the operator nor keeps a healthy CR from converging.
// The table of docs/reliability.md lists these cases beside the ones other files cover
// (image-policy.test.ts, identities.test.ts, pod-refusals.test.ts, reconcile.test.ts).
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { crdObjects } from '../../operator/kinds/crd-yaml.js';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { crConverged, crObject, eventually, FOREIGN_IMAGE, foreignDeployment, freeStaticNodePorts, sharedCluster } from './cluster.js';
import { OperatorProcess, startOperatorTest } from './operator-process.js';

type Obj = KubernetesObject & { spec?: Record<string, unknown> };
type Condition = { type: string; status: string; reason: string; message: string };
type Resource = Obj & { status?: { nodes?: string[]; conditions?: Condition[] } };
type Deployment = Obj & { spec: { replicas: number; template: { spec: { containers: { image: string }[] } } } };
type Service = Obj & { spec: { ports: { port: number; nodePort?: number }[] } };
type Event = Obj & { reason: string; message: string; type: string; involvedObject: { name: string; kind: string } };

const kind = SAMPLE_KIND;
const apiVersion = `${kind.group}/${kind.version}`;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const crRef = (name: string, namespace = ns): KubernetesObject => crObject(kind, namespace, name);
const ref = (v: string, k: string, name: string, namespace = ns): KubernetesObject => ({ apiVersion: v, kind: k, metadata: { name, namespace } });
const clusterRef = (v: string, k: string, name: string): KubernetesObject => ({ apiVersion: v, kind: k, metadata: { name } });
const condition = async (name: string, type: string, namespace = ns) =>
  (await rest.get<Resource>(crRef(name, namespace)))?.status?.conditions?.find((c) => c.type === type);
const refusal = (body: KubernetesObject) => rest.apply(body, 'test-user').then(() => undefined, (e: unknown) => e as ApiError);
const converged = (name: string, size: number, namespace = ns) => crConverged(rest, crRef(name, namespace), size);
const warningEvent = async (name: string, reason: string, namespace = ns) =>
  (await rest.list<Event>('v1', 'Event', namespace)).items.some((e) => e.involvedObject.name === name && e.reason === reason && e.type === 'Warning');

beforeAll(async () => {
  ({ kc, rest, ns, operator } = await startOperatorTest('badinput', [kind]));
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('refused by the API server, with the field and the reason named', () => {
  const maxName = AppKindCrd.MAX_NAME_LENGTH;
  test.each<[string, Record<string, unknown>, RegExp]>([
    ['size negative', { size: -1 }, /spec\.size: Invalid value: -1: spec\.size in body should be greater than or equal to 0/],
    ['size fractional', { size: 1.5 }, /spec\.size: Invalid value: .*must be of type integer/],
    ['size over the kind\'s maximum', { size: 101 }, /spec\.size: Invalid value: 101: spec\.size in body should be less than or equal to 100/],
    ['port 0', { port: 0 }, /spec\.port: Invalid value: 0: spec\.port in body should be greater than or equal to 1/],
    ['port over 65535', { port: 65536 }, /spec\.port: Invalid value: 65536: spec\.port in body should be less than or equal to 65535/],
    ['nodePort below the range', { nodePort: 29999 }, /spec\.nodePort: Invalid value: 29999: spec\.nodePort in body should be greater than or equal to 30000/],
    ['nodePort above the range', { nodePort: 32768 }, /spec\.nodePort: Invalid value: 32768: spec\.nodePort in body should be less than or equal to 32767/],
    ['image with a space', { image: 'takeyan/flask 0.0.3' }, /spec\.image: Invalid value: "takeyan\/flask 0\.0\.3": spec\.image in body should match/],
    ['image with a newline', { image: 'takeyan/flask:0.0.3\n' }, /spec\.image: Invalid value: .*spec\.image in body should match/],
    ['image empty', { image: '' }, /spec\.image: Invalid value: "": spec\.image in body should be at least 1 chars long/],
    ['image too long', { image: `r/${'a'.repeat(AppKindCrd.MAX_IMAGE_LENGTH)}` }, /spec\.image: Too long: may not be (more than|longer than) 512/],
  ])('%s: %j', async (_, spec, message) => {
    const err = await refusal({ ...crRef('invalid'), spec } as KubernetesObject);
    expect(err).toBeInstanceOf(ApiError);
    expect(err!.code).toBe(422);
    expect(err!.message).toMatch(message);
    expect(await rest.get(crRef('invalid'))).toBeUndefined();
  });

  // A string where the schema says integer: a create (kubectl create, client-side apply) gets 422 naming
  // the field; a server-side apply fails earlier, converting the patch to the schema's types (500, the
  // field and the type still named). Either way nothing is stored.
  test.each<[string, Record<string, unknown>]>([
    ['size a string', { size: 'three' }],
    ['port a name', { port: 'http' }],
  ])('%s: %j', async (_, spec) => {
    const field = Object.keys(spec)[0]!;
    const body = { ...crRef('invalid'), spec };
    const created = await rest.request('POST', await rest.path(apiVersion, kind.kind, ns), { body }).then(() => undefined, (e: unknown) => e as ApiError);
    expect(created?.code).toBe(422);
    expect(created?.message).toMatch(new RegExp(`spec\\.${field}: Invalid value: "string": spec\\.${field} in body must be of type integer`));
    const applied = await refusal(body as KubernetesObject);
    expect(applied?.code).toBe(500);
    expect(applied?.message).toMatch(new RegExp(`\\.spec\\.${field}: expected numeric`));
    expect(await rest.get(crRef('invalid'))).toBeUndefined();
  });

  test.each<[string, string, RegExp]>([
    // Within Kubernetes' 253 characters, but "<name>-svc" is past a Service's 63: stored, the CR would fail every apply.
    ['68 characters', `a${'b'.repeat(67)}`, new RegExp(`metadata\\.name must be at most ${maxName} characters`)],
    [`${maxName + 1} characters (one over)`, `a${'b'.repeat(maxName)}`, new RegExp(`metadata\\.name must be at most ${maxName} characters`)],
    ['a dot (valid for the CR, not for a Service)', 'web.v2', /metadata\.name must start with a letter and hold only lowercase letters, digits and "-"/],
    ['a leading digit', '1web', /metadata\.name must start with a letter/],
  ])('a name whose children\'s names would be invalid: %s', async (_, name, message) => {
    const err = await refusal({ ...crRef(name), spec: { size: 0 } } as KubernetesObject);
    expect(err).toBeInstanceOf(ApiError);
    expect(err!.code).toBe(422);
    expect(err!.message).toMatch(message);
    expect(await rest.get(crRef(name))).toBeUndefined();
  });

  test(`the longest name allowed (${maxName} characters) is accepted and its children are valid`, async () => {
    const name = `l${'o'.repeat(maxName - 1)}`;
    await rest.apply({ ...crRef(name), spec: { size: 1 } } as KubernetesObject, 'test-user');
    await eventually(`${name} converged`, () => converged(name, 1));
    expect((await rest.get(ref('v1', 'Service', `${name}-svc`)))?.metadata?.name).toHaveLength(63);
  });

  test('unknown fields, in spec and at the top level, are pruned on create', async () => {
    const body = { ...crRef('pruned'), colour: 'blue', spec: { size: 0, colour: 'blue', replicas: 3 } };
    const created = await rest.request<Obj & { colour?: string }>('POST', await rest.path(apiVersion, kind.kind, ns), { body });
    expect(created.spec).toEqual({ size: 0 });
    expect(created.colour).toBeUndefined();
    await rest.delete(crRef('pruned'));
  });
});

describe('only the operator can tell: Degraded with the reason, an Event, nothing foreign touched', () => {
  test('a Deployment of the same name that the CR does not own is neither adopted nor overwritten', async () => {
    await rest.apply(foreignDeployment(ns, 'squat-deployment'), 'someone-else');
    await rest.apply({ ...crRef('squat'), spec: { size: 2 } } as KubernetesObject, 'test-user');
    await eventually('squat Degraded', async () => (await condition('squat', 'Degraded'))?.status === 'True');
    const degraded = (await condition('squat', 'Degraded'))!;
    expect(degraded.reason).toBe('NameConflict');
    expect(degraded.message).toBe(`Deployment ${ns}/squat-deployment already exists and is not owned by EchoFlask ${ns}/squat; delete or rename it, or rename the EchoFlask`);
    await eventually('a NameConflict Event', () => warningEvent('squat', 'NameConflict'));
    const live = (await rest.get<Deployment>(ref('apps/v1', 'Deployment', 'squat-deployment')))!;
    expect(live.metadata!.ownerReferences).toBeUndefined();
    expect(live.spec.replicas).toBe(0);
    expect(live.spec.template.spec.containers.map((c) => c.image)).toEqual([FOREIGN_IMAGE]);
    expect(live.metadata!.managedFields?.map((m) => m.manager)).not.toContain('appkind-operator');
  });

  test('a Service that carries our managed-by label (so it is in our cache) but no owner is not adopted', async () => {
    const foreign = {
      apiVersion: 'v1', kind: 'Service',
      metadata: { name: 'copycat-svc', namespace: ns, labels: { 'app.kubernetes.io/managed-by': 'cdk8s-appkind' } },
      spec: { ports: [{ port: 81 }] },
    };
    await rest.apply(foreign, 'someone-else');
    await rest.apply({ ...crRef('copycat'), spec: { size: 1 } } as KubernetesObject, 'test-user');
    await eventually('copycat Degraded', async () => (await condition('copycat', 'Degraded'))?.reason === 'NameConflict');
    await eventually('a NameConflict Event', () => warningEvent('copycat', 'NameConflict'));
    const live = (await rest.get<Service>(ref('v1', 'Service', 'copycat-svc')))!;
    expect(live.metadata!.ownerReferences).toBeUndefined();
    expect(live.spec.ports.map((p) => p.port)).toEqual([81]);
    expect(live.metadata!.managedFields?.map((m) => m.manager)).not.toContain('appkind-operator');
    // Once the foreign Service is gone, the CR gets its own.
    await rest.delete(live);
    await eventually('copycat converged', () => converged('copycat', 1));
  });

  test('50 bad CRs (25 asking for a taken NodePort, 25 whose Deployment name is taken) do not keep a healthy CR from converging, and are retried with bounded backoff', async () => {
    const [port] = (await freeStaticNodePorts(kc, 1)) as [number];
    await rest.apply({ ...crRef('holder'), spec: { size: 0, nodePort: port } } as KubernetesObject, 'test-user');
    await eventually('holder converged', () => converged('holder', 0));
    const clash = Array.from({ length: 25 }, (_, i) => `clash-${i}`);
    const taken = Array.from({ length: 25 }, (_, i) => `taken-${i}`);
    for (const name of taken) {
      await rest.apply(foreignDeployment(ns, `${name}-deployment`), 'someone-else');
    }
    const started = Date.now();
    for (let i = 0; i < 25; i++) {
      await rest.apply({ ...crRef(clash[i]!), spec: { size: 0, nodePort: port } } as KubernetesObject, 'test-user');
      await rest.apply({ ...crRef(taken[i]!), spec: { size: 1 } } as KubernetesObject, 'test-user');
    }
    await rest.apply({ ...crRef('healthy'), spec: { size: 1 } } as KubernetesObject, 'test-user');
    await eventually('healthy converged', () => converged('healthy', 1), 120_000);
    // Every bad one ends Degraded with the reason; no clashing one got a Service (a taken one gets its own Service, not the Deployment).
    const bad = async () => (await rest.list<Resource>(apiVersion, kind.kind, ns)).items.filter((r) => /^(clash|taken)-/.test(r.metadata!.name!));
    await eventually('all 50 Degraded', async () => {
      const items = await bad();
      return items.length === 50 && items.every((r) => {
        const d = r.status?.conditions?.find((c) => c.type === 'Degraded');
        return d?.status === 'True' && (r.metadata!.name!.startsWith('clash-')
          ? d.reason === 'ApplyFailed' && /provided port is already allocated/.test(d.message)
          : d.reason === 'NameConflict');
      });
    }, 120_000);
    const services = (await rest.list<Service>('v1', 'Service', ns)).items.map((s) => s.metadata!.name!);
    expect(services.filter((n) => n.startsWith('clash-'))).toEqual([]);
    for (const name of taken) {
      const foreign = (await rest.get<Deployment>(ref('apps/v1', 'Deployment', `${name}-deployment`)))!;
      expect(foreign.metadata!.ownerReferences).toBeUndefined();
    }
    expect(await warningEvent('clash-0', 'ApplyFailed')).toBe(true);
    expect(await warningEvent('taken-0', 'NameConflict')).toBe(true);
    // Bounded backoff, not a retry loop: the queue waits 5 ms doubling per failure, so in T ms a bad CR
    // runs at most log2(T / 5) + 1 times, plus once for each event of its own: the status write (the
    // Degraded condition) and, for a taken one, its Service's creation and first status.
    await new Promise((r) => setTimeout(r, 5_000));
    const elapsedMs = Date.now() - started;
    const bound = Math.ceil(Math.log2(elapsedMs / 5)) + 4;
    const reconciles = new Map<string, number>();
    for (const l of operator.logs) {
      const name = l.msg === 'reconcile started' ? l.key?.split('/')[2] : undefined;
      if (name && l.key === `${kind.kind}/${ns}/${name}` && /^(clash|taken)-/.test(name)) reconciles.set(name, (reconciles.get(name) ?? 0) + 1);
    }
    expect(reconciles.size).toBe(50);
    const most = Math.max(...reconciles.values());
    console.log(`bad input: 50 bad CRs reconciled ${[...reconciles.values()].reduce((a, b) => a + b, 0)} times in ${(elapsedMs / 1000).toFixed(1)} s (at most ${most} each, bound ${bound})`);
    expect(most).toBeLessThanOrEqual(bound);
    for (const name of [...clash, ...taken]) await rest.delete(crRef(name));
  }, 300_000);

  test('the operator is still running, and logged no error', () => {
    expect(operator.child.exitCode).toBeNull();
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});

describe('the cluster changes under the operator', () => {
  test('a namespace being deleted: nothing is re-created in it, the operator carries on', async () => {
    const { ns: doomed, operator: op } = await startOperatorTest('doomed', [kind]);
    try {
      // A finalizer of the test's own holds the CR while the namespace terminates around it.
      await rest.apply({ ...crRef('stay', doomed), metadata: { name: 'stay', namespace: doomed, finalizers: ['example.com/hold'] }, spec: { size: 1 } } as KubernetesObject, 'test-user');
      await eventually('stay converged', () => converged('stay', 1, doomed));
      await rest.request('DELETE', `/api/v1/namespaces/${doomed}`);
      await eventually('stay has a deletionTimestamp', async () => !!(await rest.get(crRef('stay', doomed)))?.metadata?.deletionTimestamp);
      await eventually('children gone', async () =>
        !(await rest.get(ref('apps/v1', 'Deployment', 'stay-deployment', doomed))) && !(await rest.get(ref('v1', 'Service', 'stay-svc', doomed))));
      // Nothing was re-created for a CR that is going away, and the operator did not fail.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(await rest.get(ref('v1', 'Service', 'stay-svc', doomed))).toBeUndefined();
      expect(op.logs.filter((l) => l.msg === 'created object' && OperatorProcess.timeOf(l) > Date.now() - 3_000)).toEqual([]);
      expect(op.exited).toBe(false);
      await rest.request('PATCH', `/apis/${apiVersion}/namespaces/${doomed}/${kind.plural}/stay`, {
        body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json',
      });
      await eventually('namespace gone', async () => !(await rest.get(clusterRef('v1', 'Namespace', doomed))), 120_000);
      expect(op.logs.filter((l) => l.level === 'error')).toEqual([]);
    } finally {
      await op.stop('SIGTERM');
    }
  }, 240_000);

  test('the CRD deleted while the operator runs: it keeps running, and serves the kind again once it is back', async () => {
    // A kind of its own: deleting the shared kind's CRD would delete the CRs of every other test file.
    const own: AppKind = { ...SAMPLE_KIND, group: 'badinput.example.com', kind: 'Brittle', plural: 'brittles', appName: 'brittle' };
    const { ns: where, operator: op } = await startOperatorTest('crdgone', [own], { APPKIND_KINDS: JSON.stringify({ kinds: [own] }) });
    const ownRef = (name: string): KubernetesObject => ({ apiVersion: `${own.group}/${own.version}`, kind: own.kind, metadata: { name, namespace: where } });
    const ownConverged = (name: string) => crConverged(rest, ownRef(name), 1);
    try {
      await rest.apply({ ...ownRef('before'), spec: { size: 1 } } as KubernetesObject, 'test-user');
      await eventually('before converged', () => ownConverged('before'));
      await rest.request('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${AppKindCrd.nameOf(own)}`);
      await eventually('CRD gone', async () => !(await rest.get(clusterRef('apiextensions.k8s.io/v1', 'CustomResourceDefinition', AppKindCrd.nameOf(own)))), 120_000);
      await eventually('the operator noticed', async () => op.logs.some((l) => l.msg === 'watch failed; relisting' && String(l.resource).includes(own.plural)));
      expect(op.exited).toBe(false);
      await applyManifests(kc, crdObjects([own]));
      await rest.apply({ ...ownRef('after'), spec: { size: 1 } } as KubernetesObject, 'test-user');
      await eventually('after converged', () => ownConverged('after'), 120_000);
      // The CR went with the CRD; its children, whose owner is gone, are removed (by the garbage collector).
      await eventually('children of the deleted CR gone', async () =>
        !(await rest.get(ref('apps/v1', 'Deployment', 'before-deployment', where))) && !(await rest.get(ref('v1', 'Service', 'before-svc', where))), 120_000);
      expect(op.logs.filter((l) => l.level === 'error')).toEqual([]);
    } finally {
      await op.stop('SIGTERM');
    }
  }, 300_000);
});

describe('malformed operator settings stop the process at start, naming the setting', () => {
  const root = join(import.meta.dirname, '..', '..');
  const start = (env: Record<string, string>) => new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'operator', 'main.ts')], {
      cwd: root, env: { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: sharedCluster().kubeconfigPath, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  test.each<[Record<string, string>, RegExp]>([
    [{ APPKIND_WORKERS: 'many' }, /APPKIND_WORKERS="many" is not an integer from 1 to 64/],
    [{ APPKIND_WORKERS: '0' }, /APPKIND_WORKERS="0" is not an integer from 1 to 64/],
    [{ APPKIND_DEGRADED_RETRY_SECONDS: 'soon' }, /APPKIND_DEGRADED_RETRY_SECONDS="soon" is not an integer from 1 to 3600/],
    [{ APPKIND_LOG_LEVEL: 'loud' }, /APPKIND_LOG_LEVEL="loud" is not one of debug, info, warn, error/],
    [{ APPKIND_LEADER_ELECT: 'maybe' }, /APPKIND_LEADER_ELECT="maybe" is not a boolean/],
    [{ APPKIND_LEASE_DURATION_SECONDS: '10', APPKIND_RENEW_DEADLINE_SECONDS: '10' }, /APPKIND_RENEW_DEADLINE_SECONDS \(10\) must be less than APPKIND_LEASE_DURATION_SECONDS \(10\)/],
    [{ APPKIND_KINDS: '{not json' }, /APPKIND_KINDS: not valid JSON/],
    [{ APPKIND_KINDS: JSON.stringify({ kinds: [{ ...SAMPLE_KIND, port: 70000 }] }) }, /APPKIND_KINDS kinds\[0\]: port is 70000, not an integer from 1 to 65535/],
  ])('%j', async (env, message) => {
    const { code, stderr } = await start(env);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});
