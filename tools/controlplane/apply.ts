// Applies YAML manifests (server-side apply) to the control plane; CRDs first, waiting until they
// are Established so custom resources in the same folder can follow.
import { ApiextensionsV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { RestClient } from '../../operator/rest.js';
import { waitFor } from './readiness.js';

const FIELD_MANAGER = 'appkind-start';

function isObject(value: unknown): value is KubernetesObject {
  if (typeof value !== 'object' || value === null) return false;
  const obj = value as KubernetesObject;
  return typeof obj.apiVersion === 'string' && typeof obj.kind === 'string';
}

/** Every object in the *.yaml / *.yml files of `dir` (sorted by file name); none if it does not exist. */
export function readManifestDir(dir: string): KubernetesObject[] {
  if (!existsSync(dir)) return [];
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort();
  return files.flatMap((file) =>
    parseAllDocuments(readFileSync(join(dir, file), 'utf8'))
      .map((doc) => doc.toJS() as unknown)
      .filter(isObject),
  );
}

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
