// The AppKind API on the real control plane: `kubectl apply` of an AppKind makes and serves its kind,
// `kubectl get appkinds` shows it, a bad or colliding AppKind is Ready=False with the reason and
// changes nothing served, deletion keeps (Retain) or deletes (Delete) the CRD, a restart writes
// nothing to an AppKind whose status is current, and the rollout of an AppKind's change to its apps
// (kwok makes pods Ready) shows on it: in waves, stopped by an image whose pods are refused, fixed.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { KubernetesObject, V1CustomResourceDefinition, V1Deployment, V1Service } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { AppKind, AppKindApiCrd, AppKindCrd } from 'cdk8s-appkind';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { crdObjects, SAMPLE_KIND } from 'appkind-operator/kinds';
import type { AppKindResource } from '../../operator/appkinds/types.js';
import { CHILD_SELECTOR } from '../../operator/controller/reconcile.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { crObject, eventually, sharedCluster } from './cluster.js';
import { allowPodsAgain, refusePodsOfImage } from './refuse-image.js';
import { Deployment, rolling } from './rollout-sampler.js';
import {
  appKindLabels,
  installAppKindRights,
  OperatorProcess,
  operatorWritesSince,
  prepareOperatorNamespace,
  servesAppKindsOf,
  TEST_NAMESPACE_LABEL,
} from './operator-process.js';

const exec = promisify(execFile);
const FIELD_MANAGER = 'kubectl-client-side-apply';

let rest: RestClient;
let ns: string;
let group: string;
let operator: OperatorProcess;

async function kubectl(input: string | undefined, ...args: string[]): Promise<string> {
  const child = exec('kubectl', ['--kubeconfig', sharedCluster().kubeconfigPath, ...args]);
  if (input !== undefined) {
    child.child.stdin!.write(input);
    child.child.stdin!.end();
  }
  const { stdout } = await child;
  return stdout;
}

/** An AppKind object of a kind in this test's own group. */
function appKind(name: string, spec: Record<string, unknown>): AppKindResource {
  return {
    apiVersion: AppKindApiCrd.API_VERSION,
    kind: AppKindApiCrd.KIND,
    metadata: { name, labels: appKindLabels(ns) },
    spec: { group, version: 'v1alpha1', image: 'takeyan/flask:0.0.3', port: 5000, ...spec },
  };
}

/** Whether the Deployment and Service of CR `name` in `namespace` exist. */
async function childrenExist(namespace: string, name: string): Promise<boolean> {
  const deployment = await rest.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name: `${name}-deployment` } });
  return !!deployment && !!(await rest.get<V1Service>({ apiVersion: 'v1', kind: 'Service', metadata: { namespace, name: `${name}-svc` } }));
}

/** AppKinds this file applied: deleted before its operator stops (see afterAll). */
const applied = new Set<string>();

/** `kubectl apply -f -` of one object. */
const kubectlApply = (obj: KubernetesObject) => {
  if (obj.kind === AppKindApiCrd.KIND) applied.add(obj.metadata!.name!);
  return kubectl(JSON.stringify(obj), 'apply', '-f', '-');
};

const getAppKind = (name: string) =>
  rest.get<AppKindResource>({ apiVersion: AppKindApiCrd.API_VERSION, kind: AppKindApiCrd.KIND, metadata: { name } });
const getCrd = (name: string) =>
  rest.get<V1CustomResourceDefinition>({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } });
const ready = (ak: AppKindResource | undefined) => ak?.status?.conditions?.find((c) => c.type === 'Ready');

/** Waits until the AppKind's Ready condition for its current generation has `status` (and `reason`); returns it. */
async function readyOf(name: string, status: 'True' | 'False', reason?: string): Promise<AppKindResource> {
  return statusOf(name, `Ready=${status}${reason ? ` ${reason}` : ''}`, (ak) => {
    const c = ready(ak);
    return ak?.status?.observedGeneration === ak?.metadata?.generation && c?.status === status && (!reason || c.reason === reason);
  });
}

/** The AppKind once `check` holds of it; a timeout names `what` and the status it had last. */
async function statusOf(name: string, what: string, check: (ak: AppKindResource | undefined) => boolean): Promise<AppKindResource> {
  let last: AppKindResource | undefined;
  await eventually(`AppKind ${name} ${what}`, async () => check((last = await getAppKind(name))), 90_000).catch((e: Error) => {
    throw new Error(`${e.message}; its status last: ${JSON.stringify(last?.status)}`);
  });
  return last!;
}

beforeAll(async () => {
  const prepared = await prepareOperatorNamespace('appkind-api', [SAMPLE_KIND]);
  ({ rest, ns } = prepared);
  group = `${ns}.appkind-test.com`;
  const chart = new Chart(new App(), 'api');
  new AppKindApiCrd(chart, 'api');
  // The operator makes CRDs for AppKinds in these groups (the leash), and reads and migrates their CRs.
  await installAppKindRights(prepared.kc, [SAMPLE_KIND], ns, [group, SAMPLE_KIND.group]);
  await applyManifests(prepared.kc, chart.toJson() as KubernetesObject[]);
  operator = await OperatorProcess.start(ns, servesAppKindsOf(ns));
  await operator.waitForLog((l) => l.msg === 'appkind caches synced', 60_000);
});

afterAll(async () => {
  // AppKinds are cluster-scoped: the shared control plane is left without this file's (no other file's
  // operator selects them, but they would be clutter). Deleted while this file's operator still runs,
  // so it releases its finalizer (Retain).
  for (const name of applied) {
    await rest?.delete({ apiVersion: AppKindApiCrd.API_VERSION, kind: AppKindApiCrd.KIND, metadata: { name } }).catch(() => undefined);
  }
  await eventually(
    'the AppKinds of this file gone',
    async () => {
      for (const name of applied) if (await getAppKind(name)) return false;
      return true;
    },
    60_000,
  ).catch(() => undefined);
  await operator?.stop();
  // One the operator did not release (a failed test): its finalizer goes, so nothing waits on it.
  for (const name of applied) {
    const left = await getAppKind(name).catch(() => undefined);
    if (left?.metadata?.finalizers?.length)
      await rest
        .request('PATCH', await rest.path(AppKindApiCrd.API_VERSION, AppKindApiCrd.KIND, undefined, name), {
          body: { metadata: { finalizers: null } },
          contentType: 'application/merge-patch+json',
        })
        .catch(() => undefined);
  }
  rest?.close();
});

describe('an AppKind applied with kubectl', () => {
  const name = () => `echos.${group}`;
  const kind = (): AppKind => ({
    group,
    version: 'v1alpha1',
    kind: 'Echo',
    plural: 'echos',
    image: 'takeyan/flask:0.0.3',
    port: 5000,
    appName: 'echo',
  });

  test('gets its CRD, established and labelled, and a CR of it reconciles to a Deployment and a Service', async () => {
    await kubectlApply(appKind(name(), { kind: 'Echo', plural: 'echos', appName: 'echo' }));
    const ak = await readyOf(name(), 'True', 'Serving');
    const crd = (await getCrd(name()))!;
    expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
    expect(crd.metadata?.labels).toMatchObject({ 'appkind.io/appkind': name(), 'app.kubernetes.io/managed-by': 'appkind-operator' });
    expect(ak.metadata?.finalizers).toContain('appkind.io/kind');
    expect(ak.status).toMatchObject({
      crd: name(),
      servedVersions: ['v1alpha1'],
      storageVersion: 'v1alpha1',
      storedVersions: ['v1alpha1'],
    });

    await rest.apply(crObject(kind(), ns, 'first', { size: 1 }), FIELD_MANAGER);
    await eventually("the CR's Deployment and Service", () => childrenExist(ns, 'first'));
  });

  test('a kind in the group version of a kind the operator served before it is found (discovery read again) and reconciles', async () => {
    const suffix = ns.split('-').pop()!;
    const same: AppKind = {
      group: SAMPLE_KIND.group,
      version: SAMPLE_KIND.version,
      kind: `Same${suffix}`,
      plural: `same${suffix}s`,
      image: 'takeyan/flask:0.0.3',
      port: 5000,
      appName: 'same',
    };
    const akName = AppKindCrd.nameOf(same);
    await kubectlApply(appKind(akName, { ...same }));
    await readyOf(akName, 'True', 'Serving');
    await rest.apply(crObject(same, ns, 'same', { size: 1 }), FIELD_MANAGER);
    await eventually('the Deployment and Service of a CR of a kind in swallowlab.com/v1alpha1', () => childrenExist(ns, 'same'));
    await kubectl(undefined, 'delete', 'appkinds', akName, '--wait=true', '--timeout=60s');
  });

  test('kubectl get appkinds shows Ready True, the CRD, its versions, 1 CR and its app updated', async () => {
    // Its app counted too, at the kind's pod template: no rollout waits.
    await eventually('status.resources 1, status.rollout.updated 1', async () => {
      const status = (await getAppKind(name()))?.status;
      return status?.resources === 1 && status.rollout?.updated === 1;
    });
    const out = await kubectl(undefined, 'get', 'appkinds', name());
    const [header, row] = out
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/));
    expect(header).toEqual(['NAME', 'READY', 'CRD', 'SERVED', 'STORAGE', 'CRS', 'UPDATED', 'WAITING', 'AGE']);
    expect(row!.slice(0, 8)).toEqual([name(), 'True', name(), '["v1alpha1"]', 'v1alpha1', '1', '1', '0']);
    // The short name and the Event of the change.
    expect(await kubectl(undefined, 'get', 'ak', name(), '-o', 'name')).toBe(`appkind.appkind.io/${name()}\n`);
    const described = await kubectl(undefined, 'describe', 'appkinds', name());
    expect(described).toMatch(/Normal\s+Serving\s.*serving Echo\./);
    // One status write made Ready True: its Event was recorded once, not again off a cache behind the write.
    expect(described).not.toMatch(/\(x\d+ over/);
  });

  test('a restart of the operator writes nothing to an AppKind whose status is current, nor to its CRD', async () => {
    await operator.stop();
    const since = new Date().toISOString();
    operator = await OperatorProcess.start(ns, servesAppKindsOf(ns));
    await operator.waitForLog((l) => l.msg === 'appkind caches synced', 60_000);
    // Past a resync of every AppKind (10 s), which reads the caches only.
    await new Promise((r) => setTimeout(r, 15_000));
    const writes = (await operatorWritesSince(ns, since)).filter((w) => /appkinds|customresourcedefinitions/.test(w));
    expect(writes).toEqual([]);
    expect(ready(await getAppKind(name()))?.status).toBe('True');
  });

  test("a spec the API server admits but the kinds file's checks refuse is Ready=False InvalidSpec, naming the field and the fix, and serves nothing", async () => {
    await kubectlApply(appKind(`bads.${group}`, { kind: 'Bad', plural: 'bads', runAsNonRoot: true, runAsUser: 0 }));
    const ak = await readyOf(`bads.${group}`, 'False', 'InvalidSpec');
    expect(ready(ak)!.message).toBe(
      `AppKind bads.${group}: spec.runAsUser is 0 (root) while spec.runAsNonRoot is true; give spec.runAsUser a non-zero UID or leave it unset`,
    );
    expect(await getCrd(`bads.${group}`)).toBeUndefined();
    expect(await kubectl(undefined, 'describe', 'appkinds', `bads.${group}`)).toMatch(/Warning\s+InvalidSpec/);
  });

  test('the API server itself refuses what its schema can say (port 0, a kind not UpperCamelCase)', async () => {
    await expect(kubectlApply(appKind(`zeros.${group}`, { kind: 'Zero', port: 0 }))).rejects.toThrow(/spec.port/);
    await expect(kubectlApply(appKind(`lowers.${group}`, { kind: 'lower' }))).rejects.toThrow(/spec.kind/);
  });

  test('a kind the kinds file serves already is KindConflict', async () => {
    await kubectlApply(appKind(`echoflasks.${group}`, { kind: SAMPLE_KIND.kind }));
    const ak = await readyOf(`echoflasks.${group}`, 'False', 'KindConflict');
    expect(ready(ak)!.message).toMatch(
      /served from the kinds file already; remove it from the kinds file, or give spec.kind and spec.plural other names/,
    );
    expect(await getCrd(`echoflasks.${group}`)).toBeUndefined();
  });

  test('a CRD name taken by a CRD not made for an AppKind is CRDConflict, and that CRD is left as it was', async () => {
    const foreign: AppKind = {
      group,
      version: 'v1',
      kind: 'Theirs',
      plural: 'theirs',
      image: 'example.com/theirs:1',
      port: 80,
      appName: 'theirs',
    };
    await applyManifests(sharedCluster().kubeConfig, crdObjects([foreign]));
    const before = (await getCrd(AppKindCrd.nameOf(foreign)))!;
    await kubectlApply(appKind(`mine.${group}`, { kind: 'Mine', plural: 'theirs' }));
    const ak = await readyOf(`mine.${group}`, 'False', 'CRDConflict');
    expect(ready(ak)!.message).toContain(`the CRD theirs.${group} exists and was not made for an AppKind`);
    const after = (await getCrd(AppKindCrd.nameOf(foreign)))!;
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(after.spec.names.kind).toBe('Theirs');
  });

  test('a kind whose CRs the operator may not list is Ready=False ResourcesForbidden, saying which rights to grant', async () => {
    const denied = `denieds.other-${ns}.example.com`;
    await kubectlApply(appKind(denied, { group: `other-${ns}.example.com`, kind: 'Denied', deletionPolicy: 'Delete' }));
    const ak = await readyOf(denied, 'False', 'ResourcesForbidden');
    expect(ready(ak)!.message).toContain(
      `grant the operator's ServiceAccount get, list and watch on denieds and patch on denieds/status in the API group other-${ns}.example.com`,
    );
    await kubectl(undefined, 'delete', 'appkinds', denied, '--wait=true', '--timeout=60s');
  });

  test('deleting an AppKind (deletionPolicy Retain) stops serving its kind and keeps the CRD, the CR and its Deployment', async () => {
    await kubectl(undefined, 'delete', 'appkinds', name(), '--wait=true', '--timeout=60s');
    expect(await getAppKind(name())).toBeUndefined();
    await operator.waitForLog((l) => l.msg === 'appkind deleted; kind no longer served');
    expect(await getCrd(name())).toBeDefined();
    expect(await rest.get(crObject(kind(), ns, 'first'))).toBeDefined();
    expect(await childrenExist(ns, 'first')).toBe(true);
  });

  test('deleting an AppKind with deletionPolicy Delete deletes its CRD', async () => {
    const gone = `gones.${group}`;
    await kubectlApply(appKind(gone, { kind: 'Gone', deletionPolicy: 'Delete' }));
    await readyOf(gone, 'True', 'Serving');
    expect(await getCrd(gone)).toBeDefined();
    await kubectl(undefined, 'delete', 'appkinds', gone, '--wait=true', '--timeout=60s');
    await eventually(`CRD ${gone} deleted`, async () => (await getCrd(gone)) === undefined);
  });
});

describe('versions of an AppKind: its kind moved from v1alpha1 to v1 with kubectl apply', () => {
  const CRS = 20;
  const name = () => `movers.${group}`;
  const mover = (): AppKind => ({
    group,
    version: 'v1alpha1',
    kind: 'Mover',
    plural: 'movers',
    image: 'takeyan/flask:0.0.3',
    port: 5000,
    appName: 'mover',
  });
  /** The AppKind's spec: ClusterIP (no NodePort per CR), and an override that puts spec.env into the CRs' schema. */
  const spec = (extra: Record<string, unknown> = {}) => ({
    kind: 'Mover',
    plural: 'movers',
    appName: 'mover',
    serviceType: 'ClusterIP',
    overrides: { env: {} },
    ...extra,
  });
  const both = {
    version: 'v1',
    versions: [
      { name: 'v1alpha1', served: true },
      { name: 'v1', served: true, storage: true },
    ],
  };
  const v1Only = { version: 'v1', versions: [{ name: 'v1', served: true, storage: true }] };
  const crName = (i: number) => `mv-${String(i).padStart(2, '0')}`;
  type Cr = KubernetesObject & {
    spec?: { size?: number };
    status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
  };
  const listCrs = async (version: string) => (await rest.list<Cr>(`${group}/${version}`, 'Mover', ns)).items;
  const deployments = async () =>
    new Map(
      (await rest.list<V1Deployment & KubernetesObject>('apps/v1', 'Deployment', ns, CHILD_SELECTOR)).items
        .filter((d) => d.metadata!.name!.startsWith('mv-'))
        .map((d) => [d.metadata!.name!, { generation: d.metadata!.generation, owner: d.metadata!.ownerReferences?.[0]?.apiVersion }]),
    );
  const replicaSets = async () =>
    (await rest.list<KubernetesObject>('apps/v1', 'ReplicaSet', ns, CHILD_SELECTOR)).items
      .map((r) => r.metadata!.name!)
      .filter((n) => n.startsWith('mv-'))
      .sort();
  const created = new Map<string, { generation?: number; spec: unknown }>();
  let generations: Map<string, number | undefined>;
  let replicaSetsBefore: string[];

  test(`${CRS} CRs written at v1alpha1 converge`, async () => {
    await kubectlApply(appKind(name(), spec()));
    await readyOf(name(), 'True', 'Serving');
    for (let i = 0; i < CRS; i++) await rest.apply(crObject(mover(), ns, crName(i), { size: i % 10 === 0 ? 1 : 0 }), FIELD_MANAGER);
    await eventually(
      'every CR Ready at its generation',
      async () => {
        const crs = await listCrs('v1alpha1');
        return (
          crs.length === CRS &&
          crs.every(
            (cr) =>
              cr.status?.observedGeneration === cr.metadata?.generation &&
              cr.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
          )
        );
      },
      120_000,
    );
    for (const cr of await listCrs('v1alpha1')) created.set(cr.metadata!.name!, { generation: cr.metadata!.generation, spec: cr.spec });
    generations = new Map([...(await deployments())].map(([n, d]) => [n, d.generation]));
    expect(generations.size).toBe(CRS);
    replicaSetsBefore = await replicaSets();
    expect((await getCrd(name()))!.status?.storedVersions).toEqual(['v1alpha1']);
  }, 180_000);

  test('retiring v1alpha1 at once, while status.storedVersions holds it, is Ready=False VersionStillStored and applies nothing', async () => {
    const before = (await getCrd(name()))!;
    await kubectlApply(appKind(name(), spec(v1Only)));
    const ak = await readyOf(name(), 'False', 'VersionStillStored');
    expect(ready(ak)!.message).toBe(
      `AppKind ${name()}: versions: cannot remove v1alpha1 while CRD ${name()} has it in status.storedVersions (CRs may be stored at it); keep it listed and served until the storage migration to v1 has finished (status.storedVersions [v1]), then retire v1alpha1 (still serving Mover.${group}/v1alpha1 as before)`,
    );
    expect((await getCrd(name()))!.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(await kubectl(undefined, 'describe', 'appkinds', name())).toMatch(/Warning\s+VersionStillStored/);
  });

  test('v1 added as the storage version: status.migration reaches the total, storedVersions [v1]; every CR keeps its spec and generation; no Deployment rolls', async () => {
    const since = new Date().toISOString();
    await kubectlApply(appKind(name(), spec(both)));
    let last: AppKindResource | undefined;
    await eventually(
      `AppKind ${name()} reports the migration done (last: ${JSON.stringify(last?.status)})`,
      async () => {
        last = await getAppKind(name());
        return (
          last?.status?.observedGeneration === last?.metadata?.generation &&
          ready(last)?.status === 'True' &&
          last?.status?.storedVersions?.join() === 'v1'
        );
      },
      120_000,
    );
    expect(last!.status).toMatchObject({
      servedVersions: ['v1alpha1', 'v1'],
      storageVersion: 'v1',
      storedVersions: ['v1'],
      migration: { version: 'v1', migrated: CRS, total: CRS },
    });
    expect(ready(last)!.message).toContain('every CR is stored at v1 (status.storedVersions [v1]): v1alpha1 may be retired');
    expect(ready(last)!.message).toContain("once kube-controller-manager's garbage collector has moved its watches off them");
    expect((await getCrd(name()))!.status?.storedVersions).toEqual(['v1']);
    // As docs/configuration.md shows it.
    expect(
      await kubectl(undefined, 'get', 'appkinds', name(), '-o', 'jsonpath={.status.migration}{" "}{.status.storedVersions}{"\\n"}'),
    ).toBe(`{"migrated":${CRS},"total":${CRS},"version":"v1"} ["v1"]\n`);
    expect(operator.logs.filter((l) => l.msg === 'storage migration finished' && l.crd === name())).toEqual([
      expect.objectContaining({ version: 'v1', migrated: CRS, total: CRS }),
    ]);
    // Progress is written now and then, not per CR.
    const statusWrites = (await operatorWritesSince(ns, since)).filter((w) => w.includes(`/appkinds/${name()}/status`));
    expect(statusWrites.length).toBeGreaterThan(0);
    expect(statusWrites.length).toBeLessThan(CRS);

    const crs = await listCrs('v1');
    expect(crs.length).toBe(CRS);
    for (const cr of crs)
      expect([cr.metadata!.name, cr.metadata!.generation, cr.spec]).toEqual([
        cr.metadata!.name,
        created.get(cr.metadata!.name!)?.generation,
        created.get(cr.metadata!.name!)?.spec,
      ]);
    // The kind is read at v1 now: the children's owner references move to it, metadata only.
    await eventually('every Deployment names its owner at v1', async () =>
      [...(await deployments()).values()].every((d) => d.owner === `${group}/v1`),
    );
    expect(new Map([...(await deployments())].map(([n, d]) => [n, d.generation]))).toEqual(generations);
    expect(await replicaSets()).toEqual(replicaSetsBefore);

    const [header, row] = (await kubectl(undefined, 'get', 'appkinds', name()))
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/));
    expect(header!.slice(0, 6)).toEqual(['NAME', 'READY', 'CRD', 'SERVED', 'STORAGE', 'CRS']);
    expect(row!.slice(0, 6)).toEqual([name(), 'True', name(), '["v1alpha1","v1"]', 'v1', String(CRS)]);
  }, 180_000);

  test('an edit that takes a field CRs may hold out of their schema is Ready=False FieldRemoved, naming the field and the setting that keeps it', async () => {
    const before = (await getCrd(name()))!;
    await kubectlApply(appKind(name(), { ...spec(both), overrides: undefined }));
    const ak = await readyOf(name(), 'False', 'FieldRemoved');
    expect(ready(ak)!.message).toContain(
      `spec.env would be removed from CRD ${name()} while CRs may hold it (the API server would drop it from them); keep overrides.env`,
    );
    expect((await getCrd(name()))!.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
  });

  test('retiring v1alpha1 after the migration is accepted: the CRD serves v1 alone; every CR is still there, no Deployment rolled', async () => {
    await kubectlApply(appKind(name(), spec(v1Only)));
    const ak = await readyOf(name(), 'True', 'Serving');
    expect(ak.status).toMatchObject({ servedVersions: ['v1'], storageVersion: 'v1', storedVersions: ['v1'] });
    expect(ready(ak)!.message).toBe(`serving Mover.${group}/v1 from CRD ${name()}`);
    expect((await getCrd(name()))!.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([['v1', true, true]]);
    const crs = await listCrs('v1');
    expect(crs.map((cr) => [cr.metadata!.name, cr.metadata!.generation, cr.spec]).sort()).toEqual(
      [...created].map(([n, c]) => [n, c.generation, c.spec]).sort(),
    );
    expect(new Map([...(await deployments())].map(([n, d]) => [n, d.generation]))).toEqual(generations);
    expect(await replicaSets()).toEqual(replicaSetsBefore);
    const row = (await kubectl(undefined, 'get', 'appkinds', name())).trim().split('\n')[1]!.trim().split(/\s+/);
    expect(row.slice(3, 5)).toEqual(['["v1"]', 'v1']);
  });

  test('a migration the API server refuses (no update on the CRs) is Ready=False StorageMigrationFailed naming the CR; once granted, it is tried again and finishes', async () => {
    const roGroup = `ro-${ns}.example.com`;
    const frozen: AppKind = {
      group: roGroup,
      version: 'v1alpha1',
      kind: 'Frozen',
      plural: 'frozens',
      image: 'takeyan/flask:0.0.3',
      port: 5000,
      appName: 'frozen',
    };
    const akName = AppKindCrd.nameOf(frozen);
    const akSpec = {
      group: roGroup,
      kind: 'Frozen',
      plural: 'frozens',
      appName: 'frozen',
      serviceType: 'ClusterIP',
      deletionPolicy: 'Delete',
    };
    // The kind's CRs readable, not writable: what a migration needs missing (the -crds rules still cover its CRD).
    const rights = (verbs: string[]) => [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: `${ns}-frozens` },
        rules: [
          { apiGroups: [roGroup], resources: ['frozens'], verbs },
          { apiGroups: [roGroup], resources: ['frozens/status'], verbs: ['patch'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `${ns}-frozens` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${ns}-frozens` },
        subjects: [{ kind: 'ServiceAccount', name: 'appkind-operator', namespace: ns }],
      },
    ];
    await applyManifests(sharedCluster().kubeConfig, rights(['get', 'list', 'watch']));
    await kubectlApply(appKind(akName, akSpec));
    await readyOf(akName, 'True', 'Serving');
    await rest.apply(crObject(frozen, ns, 'frozen-1', { size: 0 }), FIELD_MANAGER);

    await kubectlApply(appKind(akName, { ...akSpec, ...both }));
    const failed = await readyOf(akName, 'False', 'StorageMigrationFailed');
    expect(ready(failed)!.message).toContain(`serving Frozen.${roGroup}/v1 from CRD ${akName}, but moving its stored CRs to v1 failed`);
    expect(ready(failed)!.message).toContain(`Frozen ${ns}/frozen-1 not written back at ${roGroup}/v1`);
    expect(failed.status?.storedVersions).toEqual(['v1alpha1', 'v1']);

    await applyManifests(sharedCluster().kubeConfig, rights(['get', 'list', 'watch', 'update']));
    // Ready turns True as the migration may run again (its message says the CRs are moving); the CRD's
    // storedVersions, and the AppKind's after it, drop v1alpha1 once it has finished.
    const done = await statusOf(akName, 'Serving with storedVersions [v1]', (ak) => {
      const c = ready(ak);
      return c?.status === 'True' && c.reason === 'Serving' && JSON.stringify(ak?.status?.storedVersions) === '["v1"]';
    });
    expect(done.status).toMatchObject({ storedVersions: ['v1'], migration: { version: 'v1', migrated: 1, total: 1 } });
    await kubectl(undefined, 'delete', 'appkinds', akName, '--wait=true', '--timeout=60s');
  }, 150_000);
});

describe("the rollout of an AppKind's change to its apps, on the AppKind", () => {
  const CRS = 20;
  const MAX = 5;
  const BROKEN = 'example.com/rollers/web:broken';
  const name = () => `rollers.${group}`;
  const roller = (): AppKind => ({
    group,
    version: 'v1alpha1',
    kind: 'Roller',
    plural: 'rollers',
    image: 'example.com/rollers/web:1',
    port: 8080,
    appName: 'roller',
  });
  /** The AppKind's spec at `image`: ClusterIP (no NodePort per CR), at most MAX apps rolling at once. */
  const spec = (image: string) => ({
    kind: 'Roller',
    plural: 'rollers',
    appName: 'roller',
    image,
    port: 8080,
    serviceType: 'ClusterIP',
    rollout: { maxConcurrent: String(MAX), progressDeadlineSeconds: 600 },
  });
  const crName = (i: number) => `rl-${String(i).padStart(2, '0')}`;
  const policyName = () => `appkind-rollout-refuse-${ns}`;
  const deployments = async () =>
    (await rest.list<Deployment>('apps/v1', 'Deployment', ns, CHILD_SELECTOR)).items.filter((d) => d.metadata!.name!.startsWith('rl-'));
  const imageOf = (d: Deployment) => d.spec?.template.spec?.containers[0]?.image;
  const rolloutOf = async () => (await getAppKind(name()))?.status?.rollout;
  const condition = (ak: AppKindResource | undefined, type: string) => ak?.status?.conditions?.find((c) => c.type === type);
  /** `kubectl get appkinds <name>` (with `-o wide`): its header and row, column by column. */
  const table = async (...args: string[]) => {
    const [header, row] = (await kubectl(undefined, 'get', 'appkinds', name(), ...args))
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s{2,}/));
    return Object.fromEntries(header!.map((h, i) => [h, row![i]]));
  };

  /** `eventually`, its timeout saying what the AppKind's status.rollout was last. */
  async function eventuallyRollout(what: string, check: (ak: AppKindResource | undefined) => Promise<boolean>): Promise<void> {
    let last: AppKindResource | undefined;
    await eventually(what, async () => check((last = await getAppKind(name()))), 300_000).catch((e: Error) => {
      throw new Error(`${e.message}; status.rollout last ${JSON.stringify(last?.status?.rollout)}`);
    });
  }

  /**
   * Samples the AppKind until every app runs `image` and its status reports the rollout done; resolves
   * with the most apps it showed waiting and in flight.
   */
  async function sampleRollout(image: string): Promise<void> {
    await eventuallyRollout(`every app at ${image} and the AppKind saying so`, async (ak) => {
      const rollout = ak?.status?.rollout;
      const all = await deployments();
      return (
        all.length === CRS &&
        all.every((d) => imageOf(d) === image && !rolling(d)) &&
        ak?.status?.observedGeneration === ak?.metadata?.generation &&
        rollout?.updated === CRS &&
        rollout.waiting === 0 &&
        rollout.inFlight === 0 &&
        rollout.failed === 0
      );
    });
  }

  /**
   * `kubectl get appkinds <name> --watch` from its first line on: every version of the AppKind, as
   * `[waiting, inFlight]` of its status.rollout, until stop() (a watch misses no write; sampling would).
   */
  async function watchRollout(): Promise<{ stop: () => [number, number][] }> {
    const child = spawn('kubectl', [
      '--kubeconfig',
      sharedCluster().kubeconfigPath,
      'get',
      'appkinds',
      name(),
      '--watch',
      '-o',
      'jsonpath={.status.rollout.waiting} {.status.rollout.inFlight}{"\\n"}',
    ]);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await eventually('kubectl get --watch prints the AppKind', async () => out.includes('\n'));
    return {
      stop: () => {
        child.kill();
        return out
          .trim()
          .split('\n')
          .map((l) => l.split(' ').map(Number) as [number, number]);
      },
    };
  }

  afterAll(async () => {
    await allowPodsAgain(rest, policyName());
  });

  test(`${CRS} CRs of an AppKind with rollout.maxConcurrent ${MAX} converge, every app counted updated`, async () => {
    if (!sharedCluster().hasScheduler)
      throw new Error(
        'the shared control plane has no kube-scheduler or kwok: bash tools/controlplane/build.sh builds them (or add them to KUBEBUILDER_ASSETS)',
      );
    await kubectlApply(appKind(name(), spec(roller().image)));
    await readyOf(name(), 'True', 'Serving');
    for (let i = 0; i < CRS; i++) await rest.apply(crObject(roller(), ns, crName(i), { size: 1 }), FIELD_MANAGER);
    await sampleRollout(roller().image);
    expect(await rolloutOf()).toEqual({ updated: CRS, inFlight: 0, waiting: 0, failed: 0, failedApps: [] });
    expect(condition(await getAppKind(name()), 'RolloutStopped')).toMatchObject({ status: 'False', reason: 'RollingInWaves' });
  }, 360_000);

  test('an image change applied with kubectl rolls in waves: the AppKind shows apps waiting, then every app updated; kubectl get appkinds shows it', async () => {
    const image = 'example.com/rollers/web:2';
    const watch = await watchRollout();
    await kubectlApply(appKind(name(), spec(image)));
    await sampleRollout(image);
    const seen = watch.stop();
    expect(Math.max(...seen.map(([waiting]) => waiting))).toBeGreaterThan(0);
    expect(Math.max(...seen.map(([, inFlight]) => inFlight))).toBeLessThanOrEqual(MAX);
    expect(await table()).toMatchObject({ NAME: name(), READY: 'True', CRS: String(CRS), UPDATED: String(CRS), WAITING: '0' });
    // -o wide: ROLLOUT, the last column, empty while nothing stopped it.
    const wide = await table('-o', 'wide');
    expect(wide.REASON).toBe('Serving');
    expect(wide.ROLLOUT ?? '').toBe('');
  }, 360_000);

  test('an image whose pods are refused stops the rollout: the AppKind names the failed apps (RolloutStopped, -o wide, an Event); a fix rolls the rest', async () => {
    // Pods of the broken image are refused at admission, as a policy of the cluster would refuse them.
    await refusePodsOfImage(rest, ns, policyName(), BROKEN);

    await kubectlApply(appKind(name(), spec(BROKEN)));
    let stopped: AppKindResource | undefined;
    await eventuallyRollout('the AppKind says the rollout stopped, its wave settled', async (ak) => {
      stopped = ak;
      const r = ak?.status?.rollout;
      return ak?.status?.observedGeneration === ak?.metadata?.generation && !!r?.stopped && r.inFlight === 0;
    });
    const wave = (await deployments())
      .filter((d) => imageOf(d) === BROKEN)
      .map((d) => d.metadata!.name!.replace(/-deployment$/, ''))
      .sort();
    expect(wave.length).toBeGreaterThanOrEqual(1);
    expect(wave.length).toBeLessThanOrEqual(MAX);
    const rollout = stopped!.status!.rollout!;
    expect(rollout).toMatchObject({ updated: 0, inFlight: 0, waiting: CRS - wave.length, failed: wave.length });
    // Each failed app named with its reason; the others keep serving at the image before.
    expect(rollout.failedApps).toEqual(wave.map((n) => `${ns}/${n} (FailedCreate)`));
    expect(rollout.stopped).toBe(
      `${rollout.failedApps.join(', ')} did not become Ready at the new pod template; fix or revert the kind's settings`,
    );
    expect(condition(stopped, 'RolloutStopped')).toMatchObject({
      status: 'True',
      reason: 'KindRolloutStopped',
      message: `the Roller rollout stopped: ${rollout.stopped}`,
    });
    expect(ready(stopped)?.status).toBe('True');
    expect((await deployments()).filter((d) => imageOf(d) === 'example.com/rollers/web:2')).toHaveLength(CRS - wave.length);
    expect(await table()).toMatchObject({ UPDATED: '0', WAITING: String(CRS - wave.length) });
    expect((await table('-o', 'wide')).ROLLOUT).toBe(rollout.stopped);
    await eventually('a Warning Event KindRolloutStopped on the AppKind', async () =>
      /Warning\s+KindRolloutStopped\s.*the Roller rollout stopped: .*\(FailedCreate\)/.test(
        await kubectl(undefined, 'describe', 'appkinds', name()),
      ),
    );

    const fixed = 'example.com/rollers/web:3';
    await kubectlApply(appKind(name(), spec(fixed)));
    await sampleRollout(fixed);
    const done = await getAppKind(name());
    expect(done!.status!.rollout).toEqual({ updated: CRS, inFlight: 0, waiting: 0, failed: 0, failedApps: [] });
    expect(condition(done, 'RolloutStopped')).toMatchObject({ status: 'False', reason: 'RollingInWaves' });
    expect((await table('-o', 'wide')).ROLLOUT ?? '').toBe('');
  }, 600_000);

  test('once the rollout is done, resyncs and a restart of the operator write nothing to the AppKind', async () => {
    await new Promise((r) => setTimeout(r, 3_000)); // the last status write lands in the audit log
    const before = (await getAppKind(name()))!;
    const since = new Date().toISOString();
    // Past a resync of every AppKind (10 s).
    await new Promise((r) => setTimeout(r, 15_000));
    await operator.stop();
    operator = await OperatorProcess.start(ns, servesAppKindsOf(ns));
    await operator.waitForLog((l) => l.msg === 'appkind caches synced', 60_000);
    // The restarted operator reconciles every app again and every AppKind at least once more.
    await new Promise((r) => setTimeout(r, 15_000));
    expect((await operatorWritesSince(ns, since)).filter((w) => w.includes('/appkinds/'))).toEqual([]);
    const after = (await getAppKind(name()))!;
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(after.status?.rollout).toEqual({ updated: CRS, inFlight: 0, waiting: 0, failed: 0, failedApps: [] });
  }, 120_000);
});

describe('two operators in one cluster, each serving the AppKinds its APPKIND_APPKIND_SELECTOR picks', () => {
  let other: { ns: string; group: string; operator: OperatorProcess };
  let none: OperatorProcess;
  /** An AppKind of kind `kind` (plural `<kind>s`, lower case) in the group `g`, labelled `labels`; deletionPolicy Delete, so a finalize would show. */
  const selected = (kind: string, g: string, labels: Record<string, string>): AppKindResource => {
    const plural = `${kind.toLowerCase()}s`;
    const ak = appKind(`${plural}.${g}`, { group: g, kind, plural, appName: kind.toLowerCase(), serviceType: 'ClusterIP', deletionPolicy: 'Delete' });
    return { ...ak, metadata: { name: `${plural}.${g}`, labels } };
  };
  const ours = () => `selours.${group}`;
  const theirs = () => `seltheirs.${other.group}`;
  const nobodys = () => `selnobodys.${group}`;
  const servings = () => operator.logs.filter((l) => l.msg === 'serving appkind' && l.appkind === ours()).length;
  /** Writes by the operator of `namespace` since `since` that touch `what` (an AppKind's or a CRD's name). */
  const writesTo = async (namespace: string, since: string, what: string) => (await operatorWritesSince(namespace, since)).filter((w) => w.includes(what));

  beforeAll(async () => {
    const prepared = await prepareOperatorNamespace('appkind-sel', [SAMPLE_KIND]);
    const otherGroup = `${prepared.ns}.appkind-test.com`;
    await installAppKindRights(prepared.kc, [SAMPLE_KIND], prepared.ns, [otherGroup]);
    other = { ns: prepared.ns, group: otherGroup, operator: await OperatorProcess.start(prepared.ns, servesAppKindsOf(prepared.ns)) };
    await other.operator.waitForLog((l) => l.msg === 'appkind caches synced', 60_000);
    // Its AppKind source off: it watches the same namespace, where no CR is, and serves the kinds file alone.
    none = await OperatorProcess.start(prepared.ns, { APPKIND_APPKIND_SELECTOR: 'none' });
  });

  afterAll(async () => {
    await other?.operator.stop();
    await none?.stop();
  });

  test('each serves only its own: status, finalizer and CRD of an AppKind come from the operator that selects it; one no operator selects is untouched', async () => {
    const since = new Date().toISOString();
    await kubectlApply(selected('SelNobody', group, { [TEST_NAMESPACE_LABEL]: `nobody-${ns}` }));
    await kubectlApply(selected('SelOur', group, appKindLabels(ns)));
    await kubectlApply(selected('SelTheir', other.group, appKindLabels(other.ns)));
    await readyOf(ours(), 'True', 'Serving');
    await readyOf(theirs(), 'True', 'Serving');
    // Past a resync of every AppKind (10 s): by then an operator that listed the others would have written to them.
    await new Promise((r) => setTimeout(r, 12_000));
    expect(await writesTo(ns, since, theirs())).toEqual([]);
    expect(await writesTo(other.ns, since, ours())).toEqual([]);
    expect((await writesTo(ns, since, ours())).some((w) => w.startsWith('patch ') && w.includes(`/appkinds/${ours()}/status`))).toBe(true);
    expect((await writesTo(other.ns, since, theirs())).some((w) => w.startsWith('create ') || w.startsWith('patch '))).toBe(true);
    const untouched = (await getAppKind(nobodys()))!;
    expect([untouched.status, untouched.metadata?.finalizers]).toEqual([undefined, undefined]);
    expect(await getCrd(nobodys())).toBeUndefined();
    expect([...(await writesTo(ns, since, nobodys())), ...(await writesTo(other.ns, since, nobodys()))]).toEqual([]);
    // The operator with the source off never listed AppKinds.
    expect(none.logs.filter((l) => l.controller === 'appkind-api')).toEqual([]);
    expect(none.logs.find((l) => l.msg === 'operator starting')).toMatchObject({ appKinds: 'none' });
  }, 120_000);

  test('an AppKind (deletionPolicy Delete) relabelled away is no longer served by its operator, and its CRD, finalizer and status stay; labelled back, it is served again', async () => {
    const since = new Date().toISOString();
    const served = servings();
    await kubectl(undefined, 'label', 'appkinds', ours(), `${TEST_NAMESPACE_LABEL}=nobody-${ns}`, '--overwrite');
    await operator.waitForLog((l) => l.msg === 'appkind gone; kind no longer served' && l.appkind === ours());
    const left = (await getAppKind(ours()))!;
    expect(left.metadata?.finalizers).toContain('appkind.io/kind');
    expect(ready(left)?.status).toBe('True');
    expect(await getCrd(ours())).toBeDefined();
    await kubectl(undefined, 'label', 'appkinds', ours(), `${TEST_NAMESPACE_LABEL}=${ns}`, '--overwrite');
    await eventually('the kind served again', async () => servings() > served);
    const selOur: AppKind = { group, version: 'v1alpha1', kind: 'SelOur', plural: 'selours', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'selour', serviceType: 'ClusterIP' as AppKind['serviceType'] };
    await rest.apply(crObject(selOur, ns, 'selour', { size: 0 }), FIELD_MANAGER);
    await eventually("the CR's Deployment and Service", () => childrenExist(ns, 'selour'));
    expect((await operatorWritesSince(ns, since)).filter((w) => w.startsWith('delete ') && w.includes(ours()))).toEqual([]);
  }, 120_000);

  test('an invalid selector is refused at start, naming APPKIND_APPKIND_SELECTOR and the fix', async () => {
    await expect(OperatorProcess.start(other.ns, { APPKIND_APPKIND_SELECTOR: 'team in ()' })).rejects.toThrow(
      /APPKIND_APPKIND_SELECTOR="team in \(\)" is not a label selector: "team in \(\)" lists no value; write one such as team=payments/,
    );
  });
});
