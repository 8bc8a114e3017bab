// What the clients GitOps tools run read of a CR, on the shared control plane (kwok makes pods ready):
// kstatus (sigs.k8s.io/cli-utils, as Helm 4's --wait, Flux and kpt compute it), `kubectl wait`, and
// Argo CD's health check (docs/argocd/health.lua). A new CR and an edited one are in progress from
// the API server's first answer until their pods are ready; a CR that cannot own its children, or
// whose image the kind does not allow, is Failed (Stalled) as soon as the operator has seen it.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AppKind } from 'cdk8s-appkind';
import { crdObjects } from '../../operator/kinds/crd-yaml.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { argoHealth, ArgoHealth, chartHolding, kstatus, KStatus, kstatusBinary, runHelm } from '../gitops-clients.js';
import { createTestNamespace, crObject, eventually, foreignDeployment, sharedCluster } from './cluster.js';
import { installOperatorIdentity, OperatorProcess } from './operator-process.js';

const exec = promisify(execFile);

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { spec?: Record<string, unknown>; status?: { observedGeneration?: number; conditions?: Condition[] } };
type Crd = KubernetesObject & { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: { image: Record<string, unknown> } } } } } }[] } };

// A kind of its own whose CRD lacks the image rule (as one installed by hand might): the operator
// is then the one to refuse a disallowed image, which is the Stalled case to see.
const kind: AppKind = {
  group: 'gitops.appkind.test', version: 'v1', kind: 'Shipped', plural: 'shippeds', appName: 'shipped',
  image: 'takeyan/flask:0.0.3', port: 5000, allowedImages: ['takeyan/flask:*'], overrides: { resources: {} },
};
const resource = `${kind.plural}.${kind.group}`;
/** How kubectl names an object in its output: the kind, lower case, and group. */
const printed = `${kind.kind.toLowerCase()}.${kind.group}`;
/** Where statuses seen here are saved for test/unit/argocd-health.test.ts, when set (a folder). */
const RECORD = process.env.APPKIND_RECORD_GITOPS_FIXTURES;

let rest: RestClient;
let ns: string;
let operator: OperatorProcess;
let binary: string;

/** One look at a CR: what kstatus and Argo CD make of it, and how many of its pods were ready just after. */
interface Sample {
  readonly cr: Resource;
  readonly kstatus: KStatus;
  readonly argo: ArgoHealth;
  readonly readyPods: number;
}

const cr = (name: string, spec?: Record<string, unknown>) => crObject(kind, ns, name, spec);
const readyPods = async (name: string) =>
  (await rest.get<V1Deployment & KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-deployment`, namespace: ns } }))?.status?.readyReplicas ?? 0;

function sample(obj: Resource, pods: number): Sample {
  return { cr: obj, kstatus: kstatus(binary, obj)[0]!, argo: argoHealth(obj)[0], readyPods: pods };
}

/**
 * Reads the CR from `first` (the API server's answer to the create or edit) until kstatus says
 * `until`; the pods are counted after each read, so a CR Current before its pods were ready shows.
 */
async function follow(name: string, first: Resource, until: KStatus['status'], timeoutMs = 60_000): Promise<Sample[]> {
  const samples = [sample(first, await readyPods(name))];
  const deadline = Date.now() + timeoutMs;
  while (samples.at(-1)!.kstatus.status !== until) {
    if (Date.now() > deadline)
      throw new Error(`${kind.kind} ${ns}/${name} not ${until} within ${timeoutMs} ms; kstatus said: ${JSON.stringify(samples.map((s) => s.kstatus).slice(-5))}`);
    await new Promise((r) => setTimeout(r, 200));
    const obj = (await rest.get<Resource>(cr(name)))!;
    samples.push(sample(obj, await readyPods(name)));
  }
  return samples;
}

/** Each kstatus verdict seen in order, repeats collapsed. */
const verdicts = (samples: Sample[]) => samples.map((s) => s.kstatus.status).filter((s, i, all) => i === 0 || all[i - 1] !== s);

/** Argo CD's health check agrees with kstatus on every sample. */
function expectArgoAgrees(samples: Sample[]): void {
  const expected: Partial<Record<KStatus['status'], ArgoHealth['status']>> = { InProgress: 'Progressing', Current: 'Healthy', Failed: 'Degraded' };
  for (const s of samples) expect([s.kstatus.status, s.argo.status]).toEqual([s.kstatus.status, expected[s.kstatus.status]]);
}

function record(name: string, obj: Resource): void {
  if (!RECORD) return;
  mkdirSync(RECORD, { recursive: true });
  // managedFields: who wrote what, not what Argo CD's check reads.
  const saved = { ...obj, metadata: { ...obj.metadata, managedFields: undefined } };
  writeFileSync(join(RECORD, `${name}.json`), `${JSON.stringify(saved, null, 2)}\n`);
}

async function kubectl(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await exec('kubectl', ['--kubeconfig', sharedCluster().kubeconfigPath, '-n', ns, ...args]);
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (e) {
    const { code, stdout, stderr } = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof code === 'number' ? code : -1, output: `${stdout ?? ''}${stderr ?? ''}` };
  }
}

beforeAll(async () => {
  // Without a scheduler (kube-scheduler and kwok) no pod gets Ready, so no CR ever becomes Current.
  if (!sharedCluster().hasScheduler) throw new Error('the shared control plane has no kube-scheduler or kwok: bash tools/controlplane/build.sh builds them (or add them to KUBEBUILDER_ASSETS)');
  binary = kstatusBinary();
  const kc = sharedCluster().kubeConfig;
  rest = new RestClient(kc);
  ns = await createTestNamespace(kc, 'gitops');
  const crd = crdObjects([kind])[0] as unknown as Crd;
  delete crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.image['x-kubernetes-validations'];
  await applyManifests(kc, [crd]);
  await installOperatorIdentity(kc, [kind], ns);
  // The default pacing (APPKIND_STATUS_INTERVAL_MS, 60 s): a rollout's first status is its Ready.
  operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify([kind]) });
}, 600_000);

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  rest?.close();
  for (const dir of charts) rmSync(dir, { recursive: true, force: true });
});

describe('kstatus, as Helm --wait, Flux and kpt read it', () => {
  test('a new CR is InProgress from the create\'s own answer, Current only once its pods are ready; an edit the same', async () => {
    const created = await rest.apply<Resource>(cr('edited', { size: 1 }), 'test-user');
    // The CRD's default status: generation 1 not observed yet, with no write by the operator.
    expect(created.status).toEqual({ observedGeneration: 0 });
    record('new', created);
    const create = await follow('edited', created, 'Current');
    expect(verdicts(create)).toEqual(['InProgress', 'Current']);
    for (const s of create) if (s.kstatus.status === 'Current') expect(s.readyPods).toBe(1);
    expectArgoAgrees(create);
    record('ready', create.at(-1)!.cr);

    const edited = await rest.apply<Resource>(cr('edited', { size: 2 }), 'test-user');
    expect([edited.metadata?.generation, edited.status?.observedGeneration]).toEqual([2, 1]);
    record('edited', edited);
    const edit = await follow('edited', edited, 'Current');
    expect(verdicts(edit)).toEqual(['InProgress', 'Current']);
    for (const s of edit) if (s.kstatus.status === 'Current') expect(s.readyPods).toBe(2);
    expectArgoAgrees(edit);
  });

  test('a CR whose Deployment name is taken is Failed (Stalled NameConflict) within seconds, never Current', async () => {
    await rest.apply(foreignDeployment(ns, 'taken-deployment'), 'someone-else');
    const created = await rest.apply<Resource>(cr('taken', { size: 1 }), 'test-user');
    const samples = await follow('taken', created, 'Failed', 30_000);
    expect(verdicts(samples)).toEqual(['InProgress', 'Failed']);
    expect(samples.at(-1)!.kstatus.message).toContain(`Deployment ${ns}/taken-deployment`);
    expect(samples.at(-1)!.cr.status?.conditions?.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'NameConflict' });
    expectArgoAgrees(samples);
    record('name-conflict', samples.at(-1)!.cr);
  });

  test('a CR whose image the kind does not allow is Failed (Stalled ImageNotAllowed) within seconds', async () => {
    const created = await rest.apply<Resource>(cr('forbidden', { size: 1, image: 'nginx:1.27' }), 'test-user');
    const samples = await follow('forbidden', created, 'Failed', 30_000);
    expect(verdicts(samples)).toEqual(['InProgress', 'Failed']);
    expect(samples.at(-1)!.kstatus.message).toContain('image "nginx:1.27"');
    expectArgoAgrees(samples);
    record('image-not-allowed', samples.at(-1)!.cr);
  });
  test('a rollout past its Deployment\'s progress deadline is Failed (Stalled ProgressDeadlineExceeded)', async () => {
    // More CPU than the kwok node has: the pod is never scheduled, the rollout never progresses.
    const created = await rest.apply<Resource>(cr('unschedulable', { size: 1, resources: { requests: { cpu: '5000' } } }), 'test-user');
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'unschedulable-deployment', namespace: ns } };
    await eventually('its rollout under way', async () => (await rest.get<V1Deployment & KubernetesObject>(deployment))?.status?.observedGeneration === 1);
    // The Deployment controller's own verdict once progressDeadlineSeconds (600 s, as the construct
    // renders it) has passed, written as it writes it; it keeps it while the rollout makes no progress.
    const now = new Date().toISOString();
    await rest.request('PATCH', `/apis/apps/v1/namespaces/${ns}/deployments/unschedulable-deployment/status`, {
      contentType: 'application/strategic-merge-patch+json',
      body: { status: { conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "unschedulable-deployment-x" has timed out progressing.', lastUpdateTime: now, lastTransitionTime: now }] } },
    });
    const samples = await follow('unschedulable', created, 'Failed', 60_000);
    expect(verdicts(samples)).toEqual(['InProgress', 'Failed']);
    expect(samples.at(-1)!.cr.status?.conditions?.find((c) => c.type === 'Stalled')).toMatchObject({
      status: 'True', reason: 'ProgressDeadlineExceeded', message: expect.stringContaining('has timed out progressing'),
    });
    expectArgoAgrees(samples);
    record('progress-deadline', samples.at(-1)!.cr);
  });

  test('pods refused by a ResourceQuota are InProgress (Reconciling FailedCreate), not Failed: Current once the quota goes', async () => {
    const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'no-more-pods', namespace: ns }, spec: { hard: { pods: '0' } } };
    await rest.apply(quota, 'test-user');
    try {
      const created = await rest.apply<Resource>(cr('refused', { size: 1 }), 'test-user');
      const reconciling = async () => (await rest.get<Resource>(cr('refused')))?.status?.conditions?.find((c) => c.type === 'Reconciling');
      await eventually('Reconciling FailedCreate', async () => (await reconciling())?.reason === 'FailedCreate');
      expect((await reconciling())!.message).toContain('exceeded quota: no-more-pods');
      const refused = (await rest.get<Resource>(cr('refused')))!;
      const seen = sample(refused, 0);
      expect(seen.kstatus).toEqual({ status: 'InProgress', message: expect.stringContaining('exceeded quota') });
      expectArgoAgrees([seen]);
      record('refused', refused);
      await rest.delete(quota);
      const samples = await follow('refused', created, 'Current');
      for (const s of samples) if (s.kstatus.status === 'Current') expect(s.readyPods).toBe(1);
      expect(samples.some((s) => s.kstatus.status === 'Failed')).toBe(false);
    } finally {
      await rest.delete(quota).catch(() => undefined);
    }
  });
});

// kubectl is not built here (the control plane's module could, at the cost of a rebuild of its
// cache): these tests use the one on PATH, and say so when there is none.
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

describe('kubectl wait', () => {
  beforeAll(() => {
    if (!hasKubectl) throw new Error('kubectl is not on PATH: install it (https://kubernetes.io/docs/tasks/tools/, or apt-get install kubernetes-client)');
  });

  test('--for=condition=Ready returns once the pods are ready, not at once for a new CR', async () => {
    await rest.apply(cr('waited', { size: 2 }), 'test-user');
    const waited = await kubectl('wait', '--for=condition=Ready', `${resource}/waited`, '--timeout=60s');
    expect(waited).toEqual({ code: 0, output: `${printed}/waited condition met\n` });
    expect(await readyPods('waited')).toBe(2);
  });

  test('--for=condition=Stalled returns for a CR that cannot progress; --for=condition=Ready times out on it', async () => {
    await rest.apply(foreignDeployment(ns, 'stuck-deployment'), 'someone-else');
    await rest.apply(cr('stuck', { size: 1 }), 'test-user');
    expect(await kubectl('wait', '--for=condition=Stalled', `${resource}/stuck`, '--timeout=30s')).toEqual({ code: 0, output: `${printed}/stuck condition met\n` });
    const ready = await kubectl('wait', '--for=condition=Ready', `${resource}/stuck`, '--timeout=2s');
    expect(ready.code).toBe(1);
    expect(ready.output).toContain('timed out waiting for the condition');
  });
});

/** helm as a user runs it against the shared control plane, in the test namespace. */
const helm = (...args: string[]) => runHelm(sharedCluster().kubeconfigPath, ns, args);
const chartOf = (name: string, spec: Record<string, unknown>) => chartHolding(charts, { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name }, spec });
const charts: string[] = [];

describe('helm install --wait of a chart holding a CR', () => {
  test('returns once the app is ready', async () => {
    const installed = await helm('install', 'charted', chartOf('charted', { size: 2 }), '--wait', '--timeout', '120s');
    expect(installed.code).toBe(0);
    expect(installed.output).toContain('STATUS: deployed');
    expect(await readyPods('charted')).toBe(2);
    const ready = (await rest.get<Resource>(cr('charted')))!.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.status).toBe('True');
  });

  test('fails for a CR that can never be ready (Stalled), without waiting out its --timeout', async () => {
    await rest.apply(foreignDeployment(ns, 'blocked-deployment'), 'someone-else');
    const installed = await helm('install', 'blocked', chartOf('blocked', { size: 1 }), '--wait', '--timeout', '300s');
    expect(installed.code).toBe(1);
    // Helm 4 stops waiting on an object kstatus calls Failed, and names it with the Stalled message.
    expect(installed.output).toContain(`resource ${kind.kind}/${ns}/blocked not ready. status: Failed, message: Deployment ${ns}/blocked-deployment`);
    expect(installed.output).not.toContain('context deadline exceeded');
  });
});
