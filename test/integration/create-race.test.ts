// A foreign object created a moment before its CR is reconciled, which the operator's caches have not
// seen yet: the reconciler's first apply of a child the cache says is absent is create-only (a
// resourceVersion precondition no object meets, see RestClient.apply), so the
// foreign object is neither adopted nor overwritten, and the CR is Degraded NameConflict as when the
// cache has seen it. Reproduced deterministically: a Reconciler over Deployment and Service caches that
// listed the namespace and then stopped watching, against the real API server.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment, V1Service } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { ResourceCache } from '../../operator/runtime/cache.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { CachedResource, Reconciler, ReconcileError } from '../../operator/controller/reconcile.js';
import { controllerOf, refKey } from '../../operator/runtime/ref.js';
import { ApiError, isCreateOnlyRefusal, RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, FOREIGN_IMAGE, foreignDeployment } from './cluster.js';
import { MANAGER, ReconcilerRig } from './reconciler-rig.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = CachedResource & { status?: { conditions?: Condition[] } };

const kind: AppKind = SAMPLE_KIND;
let rig: ReconcilerRig;
let rest: RestClient;
let ns: string;

const deploymentRef = (name: string): KubernetesObject => rig.deploymentRef(name);
const serviceRef = (name: string): KubernetesObject => rig.serviceRef(name);
const managers = (obj: KubernetesObject | undefined) => (obj?.metadata?.managedFields ?? []).map((m) => `${m.manager}/${m.operation}`);
/** The managedFields entries of `manager` (the Deployment controller writes status beside them). */
const entriesOf = (obj: KubernetesObject | undefined, manager: string) => managers(obj).filter((m) => m.startsWith(`${manager}/`));

/**
 * A Reconciler whose Deployment and Service caches listed the namespace and then stopped watching:
 * they never see what is created afterwards. The CRs are watched as usual.
 */
async function staleReconciler(): Promise<{ reconciler: Reconciler; crs: ResourceCache<Resource> }> {
  const { deployments, services } = await rig.childInformers();
  deployments.stop();
  services.stop();
  const crs = new ResourceCache([await rig.crInformer<Resource>()]);
  const reconciler = rig.reconciler({ crs: crs as ResourceCache<CachedResource>, deployments: new ResourceCache([deployments]), services: new ResourceCache([services]) });
  return { reconciler, crs };
}

/** Creates a CR and waits until the reconciler's CR cache holds it. */
async function createCr(crs: ResourceCache<Resource>, name: string): Promise<Resource> {
  const cr = await rest.apply(crObject(kind, ns, name, { size: 1 }), 'test-user') as Resource;
  await eventually(`${name} in the CR cache`, async () => crs.get(ns, name)?.metadata.uid === cr.metadata.uid);
  return cr;
}

/** The failure a reconcile ended with, or undefined when it converged. */
async function reconcileFailure(reconciler: Reconciler, name: string): Promise<ReconcileError['failure'] | undefined> {
  try {
    await reconciler.reconcile(refKey({ kind: kind.kind, namespace: ns, name }));
    return undefined;
  } catch (e) {
    if (e instanceof ReconcileError) return e.failure;
    throw e;
  }
}

beforeAll(async () => {
  rig = await ReconcilerRig.start('race', kind);
  ({ rest, ns } = rig);
});

afterAll(() => rig?.stop());

describe('the API server on a create-only apply (the guard of a first apply)', () => {
  test('absent: created, and what the apply owns is as without the guard; present: 409, left as it was', async () => {
    const created = await rest.apply(foreignDeployment(ns, 'probe-deployment'), MANAGER, { createOnly: true });
    const entry = created.metadata!.managedFields!.find((m) => m.manager === MANAGER)!;
    expect(entry.operation).toBe('Apply');
    // The same field set as a plain apply of the same body gives (no resourceVersion in it).
    const plain = await rest.apply(foreignDeployment(ns, 'plain-deployment'), MANAGER);
    expect(entry.fieldsV1).toEqual(plain.metadata!.managedFields!.find((m) => m.manager === MANAGER)!.fieldsV1);
    expect(JSON.stringify(entry.fieldsV1)).toContain('f:replicas');

    // Present: refused whatever the body changes, for any manager, and nothing written.
    const changed = { ...foreignDeployment(ns, 'probe-deployment'), spec: { ...foreignDeployment(ns, 'probe-deployment').spec!, replicas: 3 } };
    const err = await rest.apply(changed, 'another-manager', { createOnly: true }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(409);
    expect(isCreateOnlyRefusal(err)).toBe(true);
    const after = (await rest.get<V1Deployment>(deploymentRef('probe-deployment')))!;
    expect(after.metadata!.uid).toBe(created.metadata!.uid);
    expect(after.metadata!.generation).toBe(1);
    expect(after.spec!.replicas).toBe(0);
    expect(entriesOf(after, 'another-manager')).toEqual([]);
    // Without the guard the same apply adopts the fields: what the guard is for.
    await rest.apply(changed, 'another-manager');
    expect((await rest.get<V1Deployment>(deploymentRef('probe-deployment')))!.spec!.replicas).toBe(3);
  });

  test('metadata.uid is no such guard: it asks for an existing object, and refuses to create one', async () => {
    const body = { ...foreignDeployment(ns, 'uid-probe-deployment'), metadata: { name: 'uid-probe-deployment', namespace: ns, uid: '00000000-0000-0000-0000-00000000abcd' } };
    const err = await rest.apply(body, MANAGER).then(() => undefined, (e: unknown) => e);
    expect((err as ApiError).code).toBe(409);
    expect((err as ApiError).message).toMatch(/uid mismatch: the provided object specified uid 00000000-0000-0000-0000-00000000abcd, and no existing object was found/);
    expect(await rest.get(deploymentRef('uid-probe-deployment'))).toBeUndefined();
  });
});

describe('a foreign object the caches have not seen', () => {
  test('a Deployment and a Service created just before their CR is reconciled: NameConflict, neither adopted nor overwritten', async () => {
    const { reconciler, crs } = await staleReconciler();
    // Created after the caches stopped: the reconciler's caches say these names are free.
    await rest.apply(foreignDeployment(ns, 'late-deployment'), 'someone-else');
    await rest.apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'later-svc', namespace: ns }, spec: { ports: [{ port: 81 }] } }, 'someone-else');
    const late = await createCr(crs, 'late');
    const later = await createCr(crs, 'later');

    expect(await reconcileFailure(reconciler, 'late')).toEqual({
      reason: 'NameConflict',
      message: `Deployment ${ns}/late-deployment already exists and is not owned by ${kind.kind} ${ns}/late; delete or rename it, or rename the ${kind.kind}`,
    });
    expect(await reconcileFailure(reconciler, 'later')).toEqual({
      reason: 'NameConflict',
      message: `Service ${ns}/later-svc already exists and is not owned by ${kind.kind} ${ns}/later; delete or rename it, or rename the ${kind.kind}`,
    });

    const deployment = (await rest.get<V1Deployment>(deploymentRef('late-deployment')))!;
    expect(deployment.metadata!.ownerReferences).toBeUndefined();
    expect(deployment.metadata!.labels).toBeUndefined();
    expect(deployment.spec!.replicas).toBe(0);
    expect(deployment.spec!.template.spec!.containers.map((c) => c.image)).toEqual([FOREIGN_IMAGE]);
    expect(entriesOf(deployment, MANAGER)).toEqual([]);
    const service = (await rest.get<V1Service>(serviceRef('later-svc')))!;
    expect(service.metadata!.ownerReferences).toBeUndefined();
    expect(service.spec!.ports!.map((p) => p.port)).toEqual([81]);
    expect(entriesOf(service, MANAGER)).toEqual([]);
    // The CRs' other children were created as usual, controlled by them.
    expect(controllerOf((await rest.get(serviceRef('late-svc')))!)?.uid).toBe(late.metadata.uid);
    expect(controllerOf((await rest.get(deploymentRef('later-deployment')))!)?.uid).toBe(later.metadata.uid);
    // And the status says so, as when the cache has seen the foreign object.
    const degraded = (await rest.get<Resource>(crObject(kind, ns, 'late')))!.status!.conditions!.find((c) => c.type === 'Degraded')!;
    expect(degraded).toMatchObject({ status: 'True', reason: 'NameConflict' });
  });

  test('its own child the caches have not seen: the same process compares with what it created and writes nothing; another process (its caches as far behind) applies as usual; no conflict, owned by our Apply entry', async () => {
    const { reconciler, crs } = await staleReconciler();
    // Another process whose caches are as far behind (they too listed before the children existed).
    const { reconciler: other, crs: otherCrs } = await staleReconciler();
    const own = await createCr(crs, 'own');
    await eventually('own in the other CR cache', async () => otherCrs.get(ns, 'own')?.metadata.uid === own.metadata.uid);
    const since = new Date().toISOString();
    expect(await reconcileFailure(reconciler, 'own')).toBeUndefined();
    // Again with the same caches, which still lack both children: what the creates returned stands in.
    expect(await reconcileFailure(reconciler, 'own')).toBeUndefined();
    const childWrites = () => rig.writesTo(['own-deployment', 'own-svc'], since, ['create', 'patch', 'update']);
    expect((await childWrites()).sort()).toEqual(['patch own-deployment 201', 'patch own-svc 201']);
    // A process that did not create them (another replica after a failover, its caches behind): the
    // create-only apply is refused, the read shows they are its CR's, and it applies as usual.
    expect(await reconcileFailure(other, 'own')).toBeUndefined();
    expect((await childWrites()).filter((w) => w.endsWith(' 409')).sort()).toEqual(['patch own-deployment 409', 'patch own-svc 409']);
    for (const ref of [deploymentRef('own-deployment'), serviceRef('own-svc')]) {
      const child = (await rest.get(ref))!;
      expect(controllerOf(child)?.uid).toBe(own.metadata.uid);
      expect(entriesOf(child, MANAGER)).toEqual([`${MANAGER}/Apply`]);
    }
  });
});
