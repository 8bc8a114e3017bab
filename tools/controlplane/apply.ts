// Applies objects (server-side apply) to the control plane; CRDs first, waiting until they
// are Established so custom resources in the same batch can follow.
import { ApiextensionsV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { RestClient } from 'appkind-operator/runtime';
import { waitFor } from './readiness.js';

const FIELD_MANAGER = 'appkind-start';

const isCrd = (obj: KubernetesObject): boolean =>
  obj.kind === 'CustomResourceDefinition' && obj.apiVersion?.startsWith('apiextensions.k8s.io/') === true;

async function crdEstablished(kc: KubeConfig, name: string): Promise<boolean> {
  const crd = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name });
  return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
}

/** Server-side apply of each object as written (client-node's typed patch would drop CRD `default`s). */
export async function applyObjects(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const client = new RestClient(kc);
  for (const obj of objects) await client.apply(obj, FIELD_MANAGER);
}

/** Applies CRDs, waits for them to be Established, then applies everything else. */
export async function applyManifests(kc: KubeConfig, objects: KubernetesObject[], timeoutMs = 60_000): Promise<void> {
  const crds = objects.filter(isCrd);
  await applyObjects(kc, crds);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    await waitFor(`CRD ${name} Established`, () => crdEstablished(kc, name), { timeoutMs });
  }
  await applyObjects(kc, objects.filter((obj) => !isCrd(obj)));
}
