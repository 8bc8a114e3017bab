// Inputs not tried elsewhere, on a control plane of its own (so NodePorts 30000 and 32767
// are free, whatever other test files hold): what the CRD says about `spec` itself (null, of the wrong
// type), the boundary values it accepts (size at the kind's maximum, NodePort 30000 and 32767, /scale
// up to the maximum and not past it), image references with a digest or a `docker.io/` prefix, the
// CR's own objects changed by hand (a child's image, its Service's type, a hand-written status, a child
// deleted with propagationPolicy Orphan), a CR deleted and re-created under the same name while its
// children are still there, and two kinds sharing an app name in one namespace. After each, the end
// state of every CR of the namespace is checked as the load tests do (load.ts endStateProblems).
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CoreV1Api, KubernetesObject, V1Deployment, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { controllerOf } from '../../operator/runtime/ref.js';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { crObject, eventually } from './cluster.js';
import { converged, LoadModel, type LoadResource } from './load.js';
import { installCrds, installOperatorIdentity, OPERATOR_SA, OperatorProcess } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Obj = KubernetesObject & { spec?: unknown };

const kind = SAMPLE_KIND;
/** A second kind with the sample kind's app name, allowing any tag of the image under both its names. */
const twin: AppKind = {
  group: 'twin.appkind.test',
  version: 'v1',
  kind: 'Twin',
  plural: 'twins',
  appName: SAMPLE_KIND.appName,
  image: 'takeyan/flask:0.0.3',
  port: 5000,
  allowedImages: ['takeyan/flask*', 'docker.io/takeyan/flask*'],
};
const NS = 'inputs';
/** The two kinds share this namespace (the end-state check reads one kind's children per namespace). */
const TWINS = 'twins';
const CONVERGE_MS = 120_000;
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

let cp: ControlPlane;
let rest: RestClient;
let core: CoreV1Api;
let operator: OperatorProcess;
let twinsOperator: OperatorProcess;
const model = new LoadModel(kind, NS, false);

const cr = (name: string, spec?: Record<string, unknown>, k: AppKind = kind, ns = NS) => crObject(k, ns, name, spec);
const ref = (apiVersion: string, k: string, name: string, ns = NS): KubernetesObject => ({
  apiVersion,
  kind: k,
  metadata: { name, namespace: ns },
});
const deploymentOf = (name: string, ns = NS) =>
  rest.get<V1Deployment & KubernetesObject>(ref('apps/v1', 'Deployment', `${name}-deployment`, ns));
const serviceOf = (name: string, ns = NS) => rest.get<V1Service & KubernetesObject>(ref('v1', 'Service', `${name}-svc`, ns));
const resource = (name: string, k: AppKind = kind, ns = NS) => rest.get<LoadResource>(cr(name, undefined, k, ns));
const condition = async (name: string, type: string, k: AppKind = kind, ns = NS) =>
  (await resource(name, k, ns))?.status?.conditions?.find((c) => c.type === type) as Condition | undefined;
const crPath = async (name: string, k: AppKind = kind, ns = NS) => rest.path(AppKindCrd.apiVersionOf(k), k.kind, ns, name);
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as ApiError,
  );
/** Every CR of the namespace converged as the model says (load.ts endStateProblems). */
const allConverged = (what: string) => converged(rest, core, model, what, CONVERGE_MS);

/** Creates (or replaces) `name` as the model's state and waits until every CR converged. */
async function want(name: string, spec: Record<string, unknown>): Promise<void> {
  model.set(name, spec);
  await rest.apply(model.object(name), 'test-user');
  await allConverged(`${name} ${JSON.stringify(spec)}`);
}

beforeAll(async () => {
  cp = await ControlPlane.start({ scheduler: true, pods: 400 });
  const kc = cp.kubeConfig();
  rest = new RestClient(kc);
  core = kc.makeApiClient(CoreV1Api);
  for (const ns of [NS, TWINS]) await core.createNamespace({ body: { metadata: { name: ns } } });
  await installCrds(kc, [kind, twin]);
  await installOperatorIdentity(kc, [kind], NS);
  await installOperatorIdentity(kc, [kind, twin], TWINS);
  const env = { APPKIND_LOG_LEVEL: 'debug' };
  operator = await OperatorProcess.spawn({
    kubeconfig: await cp.serviceAccountKubeconfig(NS, OPERATOR_SA),
    env: { ...env, APPKIND_WATCH_NAMESPACE: NS },
  });
  twinsOperator = await OperatorProcess.spawn({
    kubeconfig: await cp.serviceAccountKubeconfig(TWINS, OPERATOR_SA),
    env: { ...env, APPKIND_WATCH_NAMESPACE: TWINS, APPKIND_KINDS: JSON.stringify({ kinds: [kind, twin] }) },
  });
}, 120_000);

afterAll(async () => {
  for (const op of [operator, twinsOperator]) {
    if (!op) continue;
    expect(await op.stop('SIGTERM')).toBe(0);
    expect(op.logs.filter((l) => l.level === 'error').map((l) => `${l.msg} ${l.key ?? ''} ${String(l.error ?? '')}`)).toEqual([]);
  }
  rest?.close();
  await cp?.stop();
});

describe('spec itself', () => {
  test('spec null, or left out, is stored as the default ({size: 1}) and converges', async () => {
    const created = await rest.request<Obj>('POST', await rest.path(AppKindCrd.apiVersionOf(kind), kind.kind, NS), {
      body: { ...cr('null-spec'), spec: null },
    });
    expect(created.spec).toEqual({ size: 1 });
    const applied = await rest.apply({ ...cr('null-apply'), spec: null } as KubernetesObject, 'test-user');
    expect((applied as Obj).spec).toEqual({ size: 1 });
    const absent = await rest.apply(cr('no-spec'), 'test-user');
    expect((absent as Obj).spec).toEqual({ size: 1 });
    for (const name of ['null-spec', 'null-apply', 'no-spec']) model.set(name, { size: 1 });
    await allConverged('spec null or absent');
  });

  test.each<[string, unknown]>([
    ['a string', 'three'],
    ['a number', 3],
    ['a list', [{ size: 3 }]],
    ['a boolean', true],
  ])('spec %s is refused, naming spec, and nothing is stored', async (_, spec) => {
    const body = { ...cr('wrong-spec'), spec };
    const created = await failure(rest.request('POST', await rest.path(AppKindCrd.apiVersionOf(kind), kind.kind, NS), { body }));
    expect(created?.code).toBe(422);
    expect(created?.message).toMatch(/spec: Invalid value: "[a-z]+": spec in body must be of type object/);
    const applied = await failure(rest.apply(body as KubernetesObject, 'test-user'));
    expect(applied).toBeInstanceOf(ApiError);
    expect(applied!.message).toMatch(/spec/);
    expect(await resource('wrong-spec')).toBeUndefined();
  });
});

describe('boundary values are accepted end to end', () => {
  test(`size at the kind's maximum (${AppKindCrd.DEFAULT_MAX_SIZE}): ${AppKindCrd.DEFAULT_MAX_SIZE} pods, all in status.nodes`, async () => {
    await want('biggest', { size: AppKindCrd.DEFAULT_MAX_SIZE });
    expect((await resource('biggest'))!.status!.nodes).toHaveLength(AppKindCrd.DEFAULT_MAX_SIZE);
    await want('biggest', { size: 0 });
  }, 300_000);

  test('NodePort 30000 and 32767, the ends of the range: the Services hold them and status says so', async () => {
    model.set('lowest-port', { size: 1, nodePort: 30000 });
    model.set('highest-port', { size: 1, nodePort: 32767 });
    for (const name of ['lowest-port', 'highest-port']) await rest.apply(model.object(name), 'test-user');
    await allConverged('NodePorts 30000 and 32767');
    expect((await serviceOf('lowest-port'))!.spec!.ports![0]!.nodePort).toBe(30000);
    expect((await serviceOf('highest-port'))!.spec!.ports![0]!.nodePort).toBe(32767);
    expect((await resource('highest-port'))!.status!.nodePort).toBe(32767);
  });

  test('/scale to the maximum is accepted; above it (and below 0) refused naming spec.size, nothing changed', async () => {
    await want('scaled', { size: 1 });
    const scale = async (replicas: number) =>
      rest.request('PATCH', `${await crPath('scaled')}/scale`, {
        body: { spec: { replicas } },
        contentType: 'application/merge-patch+json',
      });
    const over = await failure(scale(AppKindCrd.DEFAULT_MAX_SIZE + 1));
    expect(over?.code).toBe(422);
    expect(over?.message).toMatch(
      new RegExp(
        `spec\\.size: Invalid value: ${AppKindCrd.DEFAULT_MAX_SIZE + 1}: spec\\.size in body should be less than or equal to ${AppKindCrd.DEFAULT_MAX_SIZE}`,
      ),
    );
    const negative = await failure(scale(-1));
    expect(negative?.code).toBe(422);
    expect((await resource('scaled'))!.spec!.size).toBe(1);
    expect((await deploymentOf('scaled'))!.spec!.replicas).toBe(1);
    await scale(AppKindCrd.DEFAULT_MAX_SIZE);
    expect((await resource('scaled'))!.spec!.size).toBe(AppKindCrd.DEFAULT_MAX_SIZE);
    model.set('scaled', { size: AppKindCrd.DEFAULT_MAX_SIZE });
    await allConverged('/scale to the maximum');
    await want('scaled', { size: 1 });
  }, 300_000);
});

describe('image references with a digest or a docker.io/ prefix', () => {
  test('are plain text to the image policy: refused by a kind that names the image without them, naming what it allows', async () => {
    for (const image of [`takeyan/flask:0.0.3@${DIGEST}`, 'docker.io/takeyan/flask:0.0.3', `takeyan/flask@${DIGEST}`]) {
      const err = await failure(rest.apply(cr('other-spelling', { image }), 'test-user'));
      expect(err?.code).toBe(422);
      expect(err?.message).toContain('spec.image is not allowed for this kind; allowed images: takeyan/flask:0.0.3');
    }
    expect(await resource('other-spelling')).toBeUndefined();
  });

  test('are run exactly as written by a kind that allows them', async () => {
    const images = {
      digest: `takeyan/flask:0.0.3@${DIGEST}`,
      'digest-only': `takeyan/flask@${DIGEST}`,
      'docker-io': 'docker.io/takeyan/flask:0.0.3',
    };
    for (const [name, image] of Object.entries(images)) await rest.apply(cr(name, { image }, twin, TWINS), 'test-user');
    for (const [name, image] of Object.entries(images)) {
      await eventually(`${name} Ready`, async () => (await condition(name, 'Ready', twin, TWINS))?.status === 'True', CONVERGE_MS);
      expect((await deploymentOf(name, TWINS))!.spec!.template.spec!.containers.map((c) => c.image)).toEqual([image]);
      expect((await condition(name, 'Degraded', twin, TWINS))?.status).toBe('False');
    }
    for (const name of Object.keys(images)) await rest.delete(cr(name, undefined, twin, TWINS));
  });
});

describe("the CR's objects changed by hand", () => {
  test("a child's image and its Service's type changed by hand are restored; status.nodePort follows the Service", async () => {
    await want('edited', { size: 2 });
    const manager = { fieldManager: 'kubectl-edit' };
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${NS}/deployments/edited-deployment`, {
      body: { spec: { template: { spec: { containers: [{ name: kind.appName, image: 'example.com/other:1' }] } } } },
      contentType: 'application/strategic-merge-patch+json',
      query: manager,
    });
    await rest.request('PATCH', `/api/v1/namespaces/${NS}/services/edited-svc`, {
      body: { spec: { type: 'ClusterIP' } },
      contentType: 'application/merge-patch+json',
      query: manager,
    });
    // The hand edit and the operator's restore each move the Deployment's generation.
    model.wanted.get('edited')!.deploymentChanges += 2;
    await allConverged('image and Service type edited by hand');
    const svc = (await serviceOf('edited'))!;
    expect(svc.spec!.type).toBe('NodePort');
    expect((await deploymentOf('edited'))!.spec!.template.spec!.containers[0]!.image).toBe(kind.image);
  });

  test('a hand-written status (Ready, made-up pods, port and generation) is replaced by the truth', async () => {
    await want('lied-about', { size: 1 });
    const lie = {
      observedGeneration: 99,
      replicas: 7,
      readyReplicas: 7,
      nodePort: 30001,
      nodes: ['made-up-1', 'made-up-2'],
      conditions: [
        { type: 'Ready', status: 'False', reason: 'HandWritten', message: 'written by hand', lastTransitionTime: new Date().toISOString() },
      ],
    };
    await rest.request('PATCH', `${await crPath('lied-about')}/status`, {
      body: { status: lie },
      contentType: 'application/merge-patch+json',
      query: { fieldManager: 'someone' },
    });
    await allConverged('hand-written status');
    const status = (await resource('lied-about'))!.status!;
    expect(status.nodes).not.toContain('made-up-1');
    expect(status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  test('a hand-written status on a failing CR is replaced at once, not at its next backoff retry', async () => {
    // A CR that fails for good (its Deployment's name taken), retried with backoff: after 13 failures
    // (5 ms doubling) the next retry is 20 s away.
    const taken = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'failing-deployment', namespace: NS },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'theirs' } },
        template: { metadata: { labels: { app: 'theirs' } }, spec: { containers: [{ name: 'c', image: 'example.com/theirs:1' }] } },
      },
    };
    await rest.apply(taken, 'someone-else');
    await rest.apply(cr('failing', { size: 1 }), 'test-user');
    try {
      const key = `${kind.kind}/${NS}/failing`;
      const runs = () => operator.logs.filter((l) => l.msg === 'reconcile started' && l.key === key);
      await eventually(
        '13 failed reconciles',
        async () => runs().length >= 13 && (await condition('failing', 'Degraded'))?.reason === 'NameConflict',
        120_000,
      );
      const lastRun = OperatorProcess.timeOf(runs().at(-1)!);
      const before = runs().length;
      const lie = [
        { type: 'Ready', status: 'True', reason: 'HandWritten', message: 'written by hand', lastTransitionTime: new Date().toISOString() },
        {
          type: 'Degraded',
          status: 'False',
          reason: 'HandWritten',
          message: 'written by hand',
          lastTransitionTime: new Date().toISOString(),
        },
      ];
      await rest.request('PATCH', `${await crPath('failing')}/status`, {
        body: { status: { conditions: lie } },
        contentType: 'application/merge-patch+json',
      });
      await eventually(
        'Degraded NameConflict again',
        async () => (await condition('failing', 'Degraded'))?.reason === 'NameConflict',
        60_000,
      );
      // The run that put it right came from the status change, well before the retry due 20 s after the last run.
      const righted = runs()[before];
      expect(righted).toBeDefined();
      expect(OperatorProcess.timeOf(righted!) - lastRun).toBeLessThan(15_000);
      expect((await condition('failing', 'Ready'))?.status).toBe('False');
    } finally {
      await rest.delete(cr('failing'));
      await rest.delete(taken);
    }
  }, 240_000);

  test('the Deployment deleted with propagationPolicy Orphan: re-created, its ReplicaSet adopted, no pod more than the size, status true to them', async () => {
    await want('orphaned', { size: 3 });
    const old = (await deploymentOf('orphaned'))!;
    await rest.request('DELETE', `/apis/apps/v1/namespaces/${NS}/deployments/orphaned-deployment`, {
      body: { propagationPolicy: 'Orphan' },
    });
    await eventually(
      're-created',
      async () => ((await deploymentOf('orphaned'))?.metadata?.uid ?? old.metadata!.uid) !== old.metadata!.uid,
    );
    await allConverged('Deployment deleted with propagationPolicy Orphan');
    const fresh = (await deploymentOf('orphaned'))!;
    const sets = (await rest.list<V1ReplicaSet & KubernetesObject>('apps/v1', 'ReplicaSet', NS)).items.filter((rs) =>
      rs.metadata!.name!.startsWith('orphaned-deployment-'),
    );
    expect(sets.map((rs) => controllerOf(rs)?.uid)).toEqual(sets.map(() => fresh.metadata!.uid));
    // The Service orphaned likewise (it has no dependents here): re-created, status follows its port.
    const svc = (await serviceOf('orphaned'))!;
    await rest.request('DELETE', `/api/v1/namespaces/${NS}/services/orphaned-svc`, { body: { propagationPolicy: 'Orphan' } });
    await eventually(
      'Service re-created',
      async () => ((await serviceOf('orphaned'))?.metadata?.uid ?? svc.metadata!.uid) !== svc.metadata!.uid,
    );
    await allConverged('Service deleted with propagationPolicy Orphan');
  }, 180_000);
});

describe('a CR deleted and re-created under the same name', () => {
  test('while its old Deployment is still there (held by a finalizer): the new CR neither adopts nor writes it, and converges once it is gone', async () => {
    await want('reborn', { size: 2 });
    const first = (await resource('reborn'))!;
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${NS}/deployments/reborn-deployment`, {
      body: { metadata: { finalizers: ['example.com/hold'] } },
      contentType: 'application/merge-patch+json',
    });
    await rest.delete(cr('reborn'));
    await eventually('the old Deployment is being deleted', async () => !!(await deploymentOf('reborn'))?.metadata?.deletionTimestamp);
    await eventually('the old CR is gone', async () => !(await resource('reborn')));
    await rest.apply(model.object('reborn'), 'test-user');
    const second = (await resource('reborn'))!;
    expect(second.metadata.uid).not.toBe(first.metadata.uid);
    await eventually('Degraded NameConflict', async () => (await condition('reborn', 'Degraded'))?.reason === 'NameConflict');
    expect((await condition('reborn', 'Ready'))?.status).not.toBe('True');
    const held = (await deploymentOf('reborn'))!;
    expect(controllerOf(held)?.uid).toBe(first.metadata.uid);
    expect(
      held.metadata!.managedFields?.filter((m) => m.manager === 'appkind-operator' && m.time! > second.metadata.creationTimestamp!),
    ).toEqual([]);
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${NS}/deployments/reborn-deployment`, {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    await allConverged('re-created after its old Deployment went');
    expect(controllerOf((await deploymentOf('reborn'))!)?.uid).toBe(second.metadata.uid);
  }, 180_000);

  test('20 CRs deleted and at once re-created (the garbage collector racing the operator): all converge on children of their own', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `again-${i}`);
    for (const name of names) model.set(name, { size: 1 });
    await Promise.all(names.map((name) => rest.apply(model.object(name), 'test-user')));
    await allConverged('20 CRs created');
    // New CRs of the same names: their Deployments' generations start again.
    for (const name of names) {
      model.delete(name);
      model.set(name, { size: 2 });
    }
    await Promise.all(
      names.map(async (name) => {
        await rest.delete(cr(name));
        await eventually(`${name} gone`, async () => !(await resource(name)));
        await rest.apply(model.object(name), 'test-user');
      }),
    );
    // endStateProblems: every child controller-owned by the CR of today's uid, nothing of the old ones left.
    await allConverged('20 CRs deleted and re-created');
  }, 180_000);
});

describe('two kinds sharing an app name in one namespace', () => {
  test('CRs of both kinds converge on their own pods; one name in both kinds: the second NameConflict, shows none of the first, and takes over once it goes', async () => {
    const both = async (k: AppKind, name: string) => {
      const st = (await resource(name, k, TWINS))?.status;
      const pods = (await core.listNamespacedPod({ namespace: TWINS })).items.filter(
        (p) => p.metadata?.labels?.['app.kubernetes.io/instance'] === name && !p.metadata.deletionTimestamp,
      );
      return { st, pods: pods.map((p) => p.metadata!.name!).sort() };
    };
    await rest.apply(cr('left', { size: 2 }, kind, TWINS), 'test-user');
    await rest.apply(cr('right', { size: 1 }, twin, TWINS), 'test-user');
    await rest.apply(cr('same', { size: 2 }, kind, TWINS), 'test-user');
    await eventually('same (EchoFlask) Ready', async () => (await condition('same', 'Ready', kind, TWINS))?.status === 'True', CONVERGE_MS);
    await rest.apply(cr('same', { size: 1 }, twin, TWINS), 'test-user');
    for (const [k, name] of [
      [kind, 'left'],
      [twin, 'right'],
    ] as const) {
      await eventually(`${k.kind} ${name} Ready`, async () => (await condition(name, 'Ready', k, TWINS))?.status === 'True', CONVERGE_MS);
      const { st, pods } = await both(k, name);
      expect(st!.nodes).toEqual(pods);
    }
    await eventually('Twin same NameConflict', async () => (await condition('same', 'Degraded', twin, TWINS))?.reason === 'NameConflict');
    const twinSame = await resource('same', twin, TWINS);
    expect(twinSame!.status!.nodes ?? []).toEqual([]);
    expect(twinSame!.status!.nodePort).toBeUndefined();
    const flask = await resource('same', kind, TWINS);
    expect(controllerOf((await deploymentOf('same', TWINS))!)?.uid).toBe(flask!.metadata.uid);
    expect((await deploymentOf('same', TWINS))!.spec!.replicas).toBe(2);
    // The first goes: the second gets children of its own.
    await rest.delete(cr('same', undefined, kind, TWINS));
    await eventually(
      'Twin same Ready with its own pods',
      async () => {
        const { st, pods } = await both(twin, 'same');
        const dep = await deploymentOf('same', TWINS);
        return (
          st?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' &&
          controllerOf(dep!)?.uid === twinSame!.metadata.uid &&
          pods.length === 1 &&
          JSON.stringify(st.nodes) === JSON.stringify(pods)
        );
      },
      CONVERGE_MS,
    );
    expect((await condition('left', 'Ready', kind, TWINS))?.status).toBe('True');
  }, 300_000);
});
