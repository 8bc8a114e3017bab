// A CR deleted while the operator's CR cache still holds it, after the garbage collector deleted its
// children and the child caches saw it (the CR watch and the child watches are separate streams with
// no order between them; the CR watch carries every status write and lags under load). A reconcile
// then finds the CR cached and its children absent. Before the fix it created them again, owned by a
// CR that no longer exists, and the garbage collector deleted them a second time: the Service
// ADDED, DELETED, ADDED, DELETED that faults-under-load.test.ts saw once after a leader's SIGKILL.
// Reproduced deterministically: a Reconciler whose CR cache listed and then stopped watching, with
// live Deployment and Service caches that tell DeletedChildren what they saw deleted, against the
// real API server and garbage collector. A child deleted by hand while its CR exists is still
// created again.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Deployment, V1NetworkPolicy, V1Pod, V1PodDisruptionBudget, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { OWNER_INDEX, ownerIndex, ResourceCache, withOwnManagedFields, withoutManagedFields } from '../../operator/runtime/cache.js';
import { SAMPLE_KIND } from '../../operator/kinds/config.js';
import { EventRecorder } from '../../operator/runtime/events.js';
import { Informer, InformerSource } from '../../operator/runtime/informer.js';
import { silentLogger } from '../../operator/runtime/log.js';
import { DeletedChildren } from '../../operator/controller/deleted-children.js';
import { CachedResource, Reconciler } from '../../operator/controller/reconcile.js';
import { controllerOf } from '../../operator/runtime/ref.js';
import { refKey } from '../../operator/runtime/ref.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { createTestNamespace, crObject, eventually, readSharedAuditLog, sharedCluster } from './cluster.js';
import { installCrds } from './operator-process.js';

const kind: AppKind = SAMPLE_KIND;
const MANAGER = 'appkind-operator';
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
const informers: Informer<KubernetesObject>[] = [];

const deploymentRef = (name: string): KubernetesObject => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns } });
const serviceRef = (name: string): KubernetesObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns } });

/** A started informer of one resource in the test namespace; resolves once it listed. */
async function informer<T extends KubernetesObject>(
  source: Omit<InformerSource, 'namespace'>,
  handler: (type: string, obj: T) => void,
  opts: { transform?: (o: T) => T; indexers?: Record<string, (o: T) => string[]> } = {},
): Promise<Informer<T>> {
  const i = new Informer<T>({ ...source, namespace: ns }, handler, { staleMs: 60_000, log: silentLogger, rest, ...opts });
  informers.push(i as unknown as Informer<KubernetesObject>);
  await i.start();
  return i;
}

/**
 * A Reconciler with live child caches (their events feed `deleted`, as Operator's handlers do) and a
 * CR cache that listed the namespace and then stopped watching: it never sees a CR's deletion.
 */
async function staleCrReconciler(deleted: DeletedChildren | undefined): Promise<{ reconciler: Reconciler; deployments: ResourceCache<V1Deployment>; services: ResourceCache<V1Service> }> {
  const children = { transform: withOwnManagedFields(MANAGER), indexers: { [OWNER_INDEX]: ownerIndex } };
  const feed = (kindName: string) => (type: string, obj: KubernetesObject) => deleted?.observed(kindName, obj, type === 'delete');
  const deployments = new ResourceCache([await informer<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments' }, feed('Deployment'), children)]);
  const services = new ResourceCache([await informer<V1Service>({ apiVersion: 'v1', kind: 'Service', plural: 'services' }, feed('Service'), children)]);
  const crInformer = await informer<CachedResource>({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, plural: kind.plural }, () => undefined, { transform: withoutManagedFields });
  crInformer.stop();
  const reconciler = new Reconciler({
    kinds: new Map([[kind.kind, kind]]),
    crs: new Map([[kind.kind, new ResourceCache([crInformer])]]),
    deployments,
    services,
    podDisruptionBudgets: new ResourceCache<V1PodDisruptionBudget>([]),
    networkPolicies: new ResourceCache<V1NetworkPolicy>([]),
    pods: new ResourceCache<V1Pod>([]),
    replicaSets: new ResourceCache<V1ReplicaSet>([]),
    rest,
    events: new EventRecorder(rest, MANAGER, silentLogger),
    fieldManager: MANAGER,
    log: silentLogger,
    deletedChildren: deleted,
  });
  return { reconciler, deployments, services };
}

/** A CR whose children exist (created by a Reconciler with live caches), and its uid. */
async function convergedCr(name: string): Promise<string> {
  const cr = (await rest.apply(crObject(kind, ns, name, { size: 1 }), 'test-user')) as CachedResource;
  const crs = new ResourceCache([await informer<CachedResource>({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, plural: kind.plural }, () => undefined, { transform: withoutManagedFields })]);
  await eventually(`${name} cached`, async () => crs.get(ns, name)?.metadata.uid === cr.metadata.uid);
  const creator = new Reconciler({
    kinds: new Map([[kind.kind, kind]]),
    crs: new Map([[kind.kind, crs]]),
    deployments: new ResourceCache<V1Deployment>([]),
    services: new ResourceCache<V1Service>([]),
    podDisruptionBudgets: new ResourceCache<V1PodDisruptionBudget>([]),
    networkPolicies: new ResourceCache<V1NetworkPolicy>([]),
    pods: new ResourceCache<V1Pod>([]),
    replicaSets: new ResourceCache<V1ReplicaSet>([]),
    rest,
    events: new EventRecorder(rest, MANAGER, silentLogger),
    fieldManager: MANAGER,
    log: silentLogger,
  });
  await creator.reconcile(refKey({ kind: kind.kind, namespace: ns, name }));
  for (const ref of [deploymentRef(`${name}-deployment`), serviceRef(`${name}-svc`)]) expect(controllerOf((await rest.get(ref))!)?.uid).toBe(cr.metadata.uid);
  return cr.metadata.uid!;
}

/** Creates of `name`'s children after `since`, from the audit log. */
async function childCreates(name: string, since: string): Promise<string[]> {
  return (await readSharedAuditLog())
    .filter((e) => e.stageTimestamp > since && e.objectRef?.namespace === ns && [`${name}-deployment`, `${name}-svc`].includes(e.objectRef.name ?? '') &&
      !e.objectRef.subresource && ['create', 'patch'].includes(e.verb))
    .map((e) => `${e.verb} ${e.objectRef?.name} ${e.responseStatus?.code}`)
    .sort();
}

/** Deletes the CR (background: the garbage collector deletes the children) and waits until both caches saw them go. */
async function deleteCrAndWaitForGc(name: string, caches: { deployments: ResourceCache<V1Deployment>; services: ResourceCache<V1Service> }): Promise<void> {
  await rest.delete(crObject(kind, ns, name));
  await eventually(`${name}'s children deleted by the garbage collector, seen by the child caches`, async () =>
    !caches.deployments.get(ns, `${name}-deployment`) && !caches.services.get(ns, `${name}-svc`) &&
    !(await rest.get(deploymentRef(`${name}-deployment`))) && !(await rest.get(serviceRef(`${name}-svc`))), 60_000);
}

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  rest = new RestClient(kc);
  await installCrds(kc, [kind]);
  ns = await createTestNamespace(kc, 'gone');
});

afterAll(() => {
  for (const i of informers) i.stop();
  rest?.close();
});

describe('a CR deleted whose deletion the CR cache has not seen, its children deleted by the garbage collector and seen deleted', () => {
  test('without DeletedChildren (the code before): its children are created again for a CR that no longer exists', async () => {
    const uid = await convergedCr('before');
    const caches = await staleCrReconciler(undefined);
    const { reconciler } = caches;
    await deleteCrAndWaitForGc('before', caches);
    const since = new Date().toISOString();
    await reconciler.reconcile(refKey({ kind: kind.kind, namespace: ns, name: 'before' })).catch(() => undefined);
    // The mechanism the fix is for: created again, owned by the deleted CR's uid (the garbage collector deletes them again).
    expect(await childCreates('before', since)).toEqual(['patch before-deployment 201', 'patch before-svc 201']);
    const recreated = await rest.get(serviceRef('before-svc'));
    if (recreated) expect(controllerOf(recreated)?.uid).toBe(uid);
  }, 120_000);

  test('with DeletedChildren: the reconciler reads the CR, finds it gone, and creates nothing', async () => {
    await convergedCr('gone');
    const deleted = new DeletedChildren();
    const caches = await staleCrReconciler(deleted);
    await deleteCrAndWaitForGc('gone', caches);
    const since = new Date().toISOString();
    expect(await caches.reconciler.reconcile(refKey({ kind: kind.kind, namespace: ns, name: 'gone' }))).toBeUndefined();
    expect(await childCreates('gone', since)).toEqual([]);
    expect(await rest.get(deploymentRef('gone-deployment'))).toBeUndefined();
    expect(await rest.get(serviceRef('gone-svc'))).toBeUndefined();
  }, 120_000);

  test('a child deleted by hand while its CR exists is created again (the CR read finds it)', async () => {
    const uid = await convergedCr('kept');
    const deleted = new DeletedChildren();
    const { reconciler, services } = await staleCrReconciler(deleted);
    await rest.delete(serviceRef('kept-svc'));
    await eventually('kept-svc seen deleted', async () => !services.get(ns, 'kept-svc') && deleted.seen(uid, 'Service'));
    await reconciler.reconcile(refKey({ kind: kind.kind, namespace: ns, name: 'kept' }));
    expect(controllerOf((await rest.get(serviceRef('kept-svc')))!)?.uid).toBe(uid);
    await eventually('the new Service seen added: nothing remembered', async () => !deleted.seen(uid, 'Service'));
  }, 120_000);
});
