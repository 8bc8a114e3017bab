// A kind's versions on the real control plane: 200 CRs written at v1alpha1, then v1 added and made the
// storage version (the CRD applied as the operator applies it), the storage migration writes every CR
// back, and v1alpha1 is retired (not served, then removed). Every CR keeps its spec and generation; no
// Deployment rolls; the operator writes no child while the storage moves, and once the kind's version
// is v1 it writes each child only to move its owner reference to v1 (a reference to a version no longer
// served leaves the child to no garbage collector). Writes are counted from the API server's audit log.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1CustomResourceDefinition, V1Deployment, V1OwnerReference, V1ReplicaSet } from '@kubernetes/client-node';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CHILD_SELECTOR } from '../../operator/controller/reconcile.js';
import { MigrationProgress, StorageMigration, storageVersionHash } from '../../operator/controller/storage-migration.js';
import { crdObjects, refusedCrdChange } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, readSharedAuditLog, sharedCluster } from './cluster.js';
import { installCrds, OperatorProcess, operatorWritesSince, prepareOperatorNamespace } from './operator-process.js';

const CRS = 200;
/** Most CRs run no pod, to keep 200 of them light; every 25th runs one, so some Deployments have pods to roll. */
const sizeOf = (i: number) => (i % 25 === 0 ? 1 : 0);
const nameOf = (i: number) => `m-${String(i).padStart(3, '0')}`;

const base: AppKind = {
  group: 'migration.example.com',
  version: 'v1alpha1',
  kind: 'Migrant',
  plural: 'migrants',
  image: 'takeyan/flask:0.0.3',
  port: 5000,
  appName: 'migrant',
  // No NodePort per CR: 200 of them would take a good part of the range the other test files share.
  serviceType: 'ClusterIP' as AppKind['serviceType'],
};
/** The kind with v1 added as its storage version; the operator reads CRs at `version`. */
const both = (version: 'v1alpha1' | 'v1', alphaServed = true): AppKind => ({
  ...base,
  version,
  versions: [{ name: 'v1alpha1', served: alphaServed }, { name: 'v1', storage: true }],
});
const crdName = AppKindCrd.nameOf(base);
const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crdName}`;

type Cr = KubernetesObject & { spec?: { size?: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] } };
/** A child as the test compares it before and after: what would change if it rolled or were rewritten. */
interface ChildState {
  readonly generation?: number;
  readonly spec: string;
  readonly owner?: V1OwnerReference;
}

let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;
let dir: string;
let kindsFile: string;

/** Replaces the kinds file in one step (as the kubelet swaps a mounted ConfigMap), so the operator never reads half of it. */
const writeKinds = (kind: AppKind) => {
  writeFileSync(`${kindsFile}.next`, stringify({ kinds: [kind] }));
  renameSync(`${kindsFile}.next`, kindsFile);
};
const readCrd = () => rest.request<V1CustomResourceDefinition>('GET', crdPath);
const listCrs = async (version: string) => (await rest.list<Cr>(`${base.group}/${version}`, base.kind, ns)).items;

/** The operator's writes to children (Deployments, Services, PDBs, NetworkPolicies) after `since`, from the audit log. */
async function childWrites(since: string): Promise<string[]> {
  return (await operatorWritesSince(ns, since)).filter((w) => /\/(deployments|services|poddisruptionbudgets|networkpolicies)\//.test(w.split('?')[0]!));
}

async function children(): Promise<Map<string, ChildState>> {
  const states = new Map<string, ChildState>();
  for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service']] as const) {
    for (const o of (await rest.list<KubernetesObject & { spec?: unknown }>(apiVersion, kind, ns, CHILD_SELECTOR)).items) {
      states.set(`${kind}/${o.metadata!.name}`, { generation: o.metadata!.generation, spec: JSON.stringify(o.spec), owner: o.metadata!.ownerReferences?.[0] });
    }
  }
  return states;
}

const replicaSets = async () => (await rest.list<V1ReplicaSet & KubernetesObject>('apps/v1', 'ReplicaSet', ns, CHILD_SELECTOR)).items.map((r) => r.metadata!.name!).sort();

/**
 * Until the operator is idle: its queue empty and its reconcile count the same over two seconds, after
 * at least `atLeast` reconciles since `before` (so the change to wait for has reached it).
 */
async function operatorIdle(before: number, atLeast: number): Promise<number> {
  const reconciles = () => operator.metric('controller_runtime_reconcile_total', { controller: base.kind });
  let last = -1;
  await eventually(`the operator reconciled at least ${atLeast} times and went idle`, async () => {
    const now = await reconciles();
    const idle = now === last && now - before >= atLeast && (await operator.metric('workqueue_depth', { name: 'appkind' })) === 0;
    last = now;
    if (!idle) await new Promise((r) => setTimeout(r, 2_000));
    return idle;
  }, 240_000);
  return last;
}

async function eachInParallel<T>(items: T[], run: (item: T) => Promise<void>, parallel = 8): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < items.length) await run(items[next++]!);
  }));
}

const converged = (cr: Cr) => cr.status?.observedGeneration === cr.metadata?.generation && cr.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

beforeAll(async () => {
  ({ kc, rest, ns } = await prepareOperatorNamespace('versions', [base]));
  dir = mkdtempSync(join(tmpdir(), 'appkind-versions-'));
  kindsFile = join(dir, 'kinds.yaml');
  writeKinds(base);
  operator = await OperatorProcess.start(ns, { APPKIND_CONFIG: kindsFile });
}, 120_000);

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('v1alpha1 to v1: 200 CRs migrated, v1alpha1 retired', () => {
  const created = new Map<string, { generation: number; resourceVersion: string; size: number }>();
  let before: Map<string, ChildState>;
  let replicaSetsBefore: string[];
  let reconciles = 0;
  let migrationStart = '';

  test('200 CRs written at v1alpha1 converge', async () => {
    await eachInParallel([...Array(CRS).keys()], async (i) => {
      await rest.apply(crObject(base, ns, nameOf(i), { size: sizeOf(i) }), 'test-user');
    });
    await eventually('every CR Ready at its generation', async () => {
      const crs = await listCrs('v1alpha1');
      return crs.length === CRS && crs.every(converged);
    }, 300_000);
    reconciles = await operatorIdle(0, CRS);
    for (const cr of await listCrs('v1alpha1')) {
      created.set(cr.metadata!.name!, { generation: cr.metadata!.generation!, resourceVersion: cr.metadata!.resourceVersion!, size: cr.spec!.size! });
    }
    before = await children();
    replicaSetsBefore = await replicaSets();
    expect(before.size).toBe(2 * CRS);
    for (const [name, child] of before) expect([name, child.owner?.apiVersion]).toEqual([name, `${base.group}/v1alpha1`]);
    expect((await readCrd()).status?.storedVersions).toEqual(['v1alpha1']);
  }, 420_000);

  test('v1 added as the storage version; retiring v1alpha1 before the migration is refused, saying why', async () => {
    migrationStart = new Date().toISOString();
    const next = both('v1alpha1');
    const desired = crdObjects([next])[0] as unknown as V1CustomResourceDefinition;
    expect(refusedCrdChange(await readCrd(), desired)).toEqual([]);
    await installCrds(kc, [next]);
    writeKinds(next);
    await operator.waitForLog((l) => l.msg === 'kinds configuration changed' && (l.changed as string[] | undefined)?.includes(base.kind) === true, 30_000);
    await eventually('the API server records v1 among the stored versions', async () => (await readCrd()).status?.storedVersions?.includes('v1') === true);
    expect((await readCrd()).status?.storedVersions).toEqual(['v1alpha1', 'v1']);

    const retired = crdObjects([{ ...base, version: 'v1', versions: [{ name: 'v1', storage: true }] }])[0] as unknown as V1CustomResourceDefinition;
    expect(refusedCrdChange(await readCrd(), retired)).toEqual([
      `versions: cannot remove v1alpha1 while CRD ${crdName} has it in status.storedVersions (CRs may be stored at it); keep it listed and served until the storage migration to v1 has finished (status.storedVersions [v1]), then retire v1alpha1`,
    ]);
    expect(refusedCrdChange(await readCrd(), crdObjects([both('v1', false)])[0] as unknown as V1CustomResourceDefinition))
      .toEqual([expect.stringMatching(/^versions: cannot stop serving v1alpha1 while CRD/)]);
  }, 120_000);

  test('the migration, cut short and started again, writes every CR back at v1 and leaves status.storedVersions [v1]; specs and generations unchanged', async () => {
    // Cut short after some CRs (as by a restart of the operator): status.storedVersions still says v1alpha1.
    const stop = new AbortController();
    const cut = new StorageMigration(rest, { signal: stop.signal, onProgress: (p) => p.migrated >= CRS / 4 && stop.abort(new Error('stopped')) });
    await expect(cut.migrate(crdName)).rejects.toThrow('stopped');
    expect((await readCrd()).status?.storedVersions).toEqual(['v1alpha1', 'v1']);

    // Started again from the CRD alone: every CR written back (the moved ones again, at no cost), then storedVersions [v1].
    const reported: MigrationProgress[] = [];
    const result = await new StorageMigration(rest, { onProgress: (p) => reported.push(p) }).migrate(crdName);
    expect(result).toEqual({ state: 'Done', progress: { version: 'v1', migrated: CRS, total: CRS } });
    expect(reported[0]).toEqual({ version: 'v1', migrated: 0, total: CRS });
    expect(reported.at(-1)).toEqual({ version: 'v1', migrated: CRS, total: CRS });
    for (let i = 1; i < reported.length; i++) expect(reported[i]!.migrated).toBeGreaterThanOrEqual(reported[i - 1]!.migrated);
    expect((await readCrd()).status?.storedVersions).toEqual(['v1']);
    // What the migration waited for: discovery's hash of the storage version is the one storageVersionHash() computes.
    const discovery = await rest.request<{ resources: { name: string; storageVersionHash?: string }[] }>('GET', `/apis/${base.group}/v1`);
    expect(discovery.resources.find((r) => r.name === base.plural)?.storageVersionHash).toBe(storageVersionHash(base.group, 'v1', base.kind));
    // Decided from the CRD: run again (as after a restart), there is nothing left to move.
    expect(await new StorageMigration(rest).migrate(crdName)).toEqual({ state: 'NotNeeded' });

    const crs = await listCrs('v1');
    expect(crs.length).toBe(CRS);
    for (const cr of crs) {
      const was = created.get(cr.metadata!.name!)!;
      // A new resourceVersion: the API server wrote each CR again (at v1), not a no-op it skipped.
      expect([cr.metadata!.name, cr.metadata!.generation, cr.spec?.size, cr.metadata!.resourceVersion === was.resourceVersion])
        .toEqual([cr.metadata!.name, was.generation, was.size, false]);
    }
    reconciles = await operatorIdle(reconciles, 1);
    expect(await childWrites(migrationStart)).toEqual([]);
    expect(await children()).toEqual(before);
  }, 300_000);

  test('the kind reads CRs at v1: each child written for its owner reference alone; nothing rolls', async () => {
    const since = new Date().toISOString();
    writeKinds(both('v1'));
    await eventually('every child names its owner at v1', async () => {
      const now = await children();
      return now.size === 2 * CRS && [...now.values()].every((c) => c.owner?.apiVersion === `${base.group}/v1`);
    }, 240_000);
    reconciles = await operatorIdle(reconciles, CRS);
    const writes = await childWrites(since);
    // Every child written, and every write one the operator made for the owner reference alone: a
    // reconcile that runs before its own apply's watch event reaches the cache may apply it twice.
    expect(new Set(writes.map((w) => w.split('?')[0])).size).toBe(2 * CRS);
    const applied = operator.logs.filter((l) => l.msg === 'applied drifted object' && OperatorProcess.timeOf(l) >= Date.parse(since));
    expect(applied.length).toBe(writes.length);
    expect(new Set(applied.map((l) => l.field))).toEqual(new Set(['metadata.ownerReferences[0].apiVersion']));
    const after = await children();
    for (const [name, child] of before) {
      expect([name, after.get(name)]).toEqual([name, { ...child, owner: { ...child.owner, apiVersion: `${base.group}/v1` } }]);
    }
  }, 300_000);

  test('v1alpha1 not served, then removed: no child written, every CR still there with its spec, storedVersions [v1]', async () => {
    // kube-controller-manager's garbage collector reads discovery every 30 s and watches each kind at
    // its preferred version: with v1alpha1 retired before it moved its watch to v1, the CR deleted in
    // the next test kept its children past two minutes. Its list or watch of v1 shows it moved.
    await eventually('the garbage collector watches migrants at v1', async () => (await readSharedAuditLog()).some((e) =>
      e.userAgent?.includes('kube-controller-manager') && ['list', 'watch'].includes(e.verb) &&
      e.requestURI.startsWith(`/apis/${base.group}/v1/${base.plural}`) && e.stageTimestamp > migrationStart), 120_000);
    const since = new Date().toISOString();
    for (const next of [both('v1', false), { ...base, version: 'v1', versions: [{ name: 'v1', storage: true }] }]) {
      const desired = crdObjects([next])[0] as unknown as V1CustomResourceDefinition;
      expect(refusedCrdChange(await readCrd(), desired)).toEqual([]);
      await installCrds(kc, [next]);
      const reloads = operator.logs.filter((l) => l.msg === 'kinds configuration changed').length;
      writeKinds(next);
      await eventually('the operator read the kinds file again', async () => operator.logs.filter((l) => l.msg === 'kinds configuration changed').length > reloads, 30_000);
    }
    const crd = await readCrd();
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([['v1', true, true]]);
    expect(crd.status?.storedVersions).toEqual(['v1']);
    await eventually('v1alpha1 is no longer served', async () => (await rest.request<{ resources?: unknown[] }>('GET', `/apis/${base.group}/v1alpha1`).then(() => false, () => true)));
    reconciles = await operatorIdle(reconciles, 1);

    const crs = await listCrs('v1');
    expect(crs.length).toBe(CRS);
    for (const cr of crs) {
      const was = created.get(cr.metadata!.name!)!;
      expect([cr.metadata!.name, cr.metadata!.generation, cr.spec?.size]).toEqual([cr.metadata!.name, was.generation, was.size]);
    }
    expect(await childWrites(since)).toEqual([]);
    const after = await children();
    for (const [name, child] of before) expect([name, after.get(name)?.generation, after.get(name)?.spec]).toEqual([name, child.generation, child.spec]);
    // No Deployment rolled: the same ReplicaSets, none added.
    expect(await replicaSets()).toEqual(replicaSetsBefore);
  }, 300_000);

  test('a CR deleted after the retirement takes its children with it (their owner references name a served version)', async () => {
    const name = nameOf(1);
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: ns, name: `${name}-deployment` } };
    expect((await rest.get<V1Deployment & KubernetesObject>(deployment))?.metadata?.ownerReferences?.[0]?.apiVersion).toBe(`${base.group}/v1`);
    await rest.delete(crObject({ ...base, version: 'v1' }, ns, name));
    await eventually(`${name}'s Deployment and Service garbage-collected`, async () =>
      !(await rest.get(deployment)) &&
      !(await rest.get({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: ns, name: `${name}-svc` } })), 120_000).catch((e: Error) => {
      const gc = readFileSync(join(sharedCluster().dir, 'logs', 'kube-controller-manager.log'), 'utf8').split('\n').filter((l) => /migrant|garbage/i.test(l)).slice(-20);
      throw new Error(`${e.message}; kube-controller-manager said:\n${gc.join('\n')}`);
    });
  }, 150_000);

  test('the operator logged no error', () => {
    expect(operator.exited).toBe(false);
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
