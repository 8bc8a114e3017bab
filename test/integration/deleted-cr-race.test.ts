// A CR deleted while the operator's CR cache still holds it, after the garbage collector deleted its
// children and the child caches saw it (the CR watch and the child watches are separate streams with
// no order between them; the CR watch carries every status write and lags under load). A reconcile
// then finds the CR cached and its children absent. Unless DeletedChildren sends it to read the CR
// live, it creates them again, owned by a CR that no longer exists, and the garbage collector deletes
// them a second time (a Service ADDED, DELETED, ADDED, DELETED, as a leader's SIGKILL under load shows).
// Reproduced deterministically: a Reconciler whose CR cache listed and then stopped watching, with
// live Deployment and Service caches that tell DeletedChildren what they saw deleted, against the
// real API server and garbage collector. A child deleted by hand while its CR exists is still
// created again.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment, V1Service } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { ResourceCache } from '../../operator/runtime/cache.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { DeletedChildren } from '../../operator/controller/deleted-children.js';
import { CachedResource, Reconciler } from '../../operator/controller/reconcile.js';
import { controllerOf, refKey } from '../../operator/runtime/ref.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually } from './cluster.js';
import { ReconcilerRig } from './reconciler-rig.js';

const kind: AppKind = SAMPLE_KIND;
let rig: ReconcilerRig;
let rest: RestClient;
let ns: string;

const deploymentRef = (name: string): KubernetesObject => rig.deploymentRef(name);
const serviceRef = (name: string): KubernetesObject => rig.serviceRef(name);

/**
 * A Reconciler with live child caches (their events feed `deleted`, as Operator's handlers do) and a
 * CR cache that listed the namespace and then stopped watching: it never sees a CR's deletion.
 */
async function staleCrReconciler(deleted: DeletedChildren | undefined): Promise<{ reconciler: Reconciler; deployments: ResourceCache<V1Deployment>; services: ResourceCache<V1Service> }> {
  const children = await rig.childInformers((kindName) => (type, obj) => deleted?.observed(kindName, obj, type === 'delete'));
  const deployments = new ResourceCache([children.deployments]);
  const services = new ResourceCache([children.services]);
  const crInformer = await rig.crInformer<CachedResource>();
  crInformer.stop();
  const reconciler = rig.reconciler({ crs: new ResourceCache([crInformer]), deployments, services, deletedChildren: deleted });
  return { reconciler, deployments, services };
}

/** A CR whose children exist (created by a Reconciler with live caches), and its uid. */
async function convergedCr(name: string): Promise<string> {
  const cr = (await rest.apply(crObject(kind, ns, name, { size: 1 }), 'test-user')) as CachedResource;
  const crs = new ResourceCache([await rig.crInformer<CachedResource>()]);
  await eventually(`${name} cached`, async () => crs.get(ns, name)?.metadata.uid === cr.metadata.uid);
  await rig.reconciler({ crs }).reconcile(refKey({ kind: kind.kind, namespace: ns, name }));
  for (const ref of [deploymentRef(`${name}-deployment`), serviceRef(`${name}-svc`)]) expect(controllerOf((await rest.get(ref))!)?.uid).toBe(cr.metadata.uid);
  return cr.metadata.uid!;
}

/** Creates of `name`'s children after `since`, from the audit log. */
async function childCreates(name: string, since: string): Promise<string[]> {
  return (await rig.writesTo([`${name}-deployment`, `${name}-svc`], since, ['create', 'patch'])).sort();
}

/** Deletes the CR (background: the garbage collector deletes the children) and waits until both caches saw them go. */
async function deleteCrAndWaitForGc(name: string, caches: { deployments: ResourceCache<V1Deployment>; services: ResourceCache<V1Service> }): Promise<void> {
  await rest.delete(crObject(kind, ns, name));
  await eventually(`${name}'s children deleted by the garbage collector, seen by the child caches`, async () =>
    !caches.deployments.get(ns, `${name}-deployment`) && !caches.services.get(ns, `${name}-svc`) &&
    !(await rest.get(deploymentRef(`${name}-deployment`))) && !(await rest.get(serviceRef(`${name}-svc`))), 60_000);
}

beforeAll(async () => {
  rig = await ReconcilerRig.start('gone', kind);
  ({ rest, ns } = rig);
});

afterAll(() => rig?.stop());

describe('a CR deleted whose deletion the CR cache has not seen, its children deleted by the garbage collector and seen deleted', () => {
  test('without DeletedChildren: its children are created again for a CR that no longer exists', async () => {
    const uid = await convergedCr('before');
    const caches = await staleCrReconciler(undefined);
    const { reconciler } = caches;
    await deleteCrAndWaitForGc('before', caches);
    const since = new Date().toISOString();
    await reconciler.reconcile(refKey({ kind: kind.kind, namespace: ns, name: 'before' })).catch(() => undefined);
    // The race DeletedChildren closes: created again, owned by the deleted CR's uid (the garbage collector deletes them again).
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
