// What an edit of the installed operator's kinds ConfigMap needs installed (`npm run kinds`): the
// kinds' CRDs, the operator's RBAC for them and their -view/-edit roles (manifests.ts kindsObjects),
// read from the cluster: the operator Deployment names its ConfigMap and watched namespaces. The
// kinds are checked as the operator checks them first, so a bad edit installs nothing.
import { KubeConfig, type KubernetesObject, type V1ConfigMap, type V1Deployment } from '@kubernetes/client-node';
import { basename } from 'node:path';
import type { AppKind } from 'cdk8s-appkind';
import { ConfigError, kindsFromDocument } from 'appkind-operator/kinds';
import { RestClient } from 'appkind-operator/runtime';
import { parse } from 'yaml';
import { waitFor } from '../controlplane/readiness.js';
import { kindsObjects } from './manifests.js';

const FIELD_MANAGER = 'appkind-kinds';

export interface Installed {
  readonly kinds: AppKind[];
  readonly watchNamespaces: string[];
  readonly kindGroups: string[];
  readonly configMap: string;
}

/** The installed operator's kinds (its ConfigMap), watched namespaces and kind groups (its Deployment's env). */
export async function installedKinds(rest: RestClient, namespace: string, name: string): Promise<Installed> {
  const deployment = await rest.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name } });
  if (!deployment) throw new ConfigError(`no Deployment ${namespace}/${name}: install the operator first (kubectl apply -f release/install.yaml), or give --namespace and --name`);
  const env = (v: string) => deployment.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === v)?.value;
  const configMap = env('APPKIND_CONFIG_MAP');
  const file = env('APPKIND_CONFIG');
  if (!configMap || !file) throw new ConfigError(`Deployment ${namespace}/${name} reads no kinds ConfigMap (APPKIND_CONFIG_MAP, APPKIND_CONFIG unset)`);
  const cm = await rest.get<V1ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace, name: configMap } });
  const text = cm?.data?.[basename(file)];
  if (!text) throw new ConfigError(`ConfigMap ${namespace}/${configMap} has no key ${basename(file)}`);
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new ConfigError(`ConfigMap ${namespace}/${configMap}: ${basename(file)} is not valid YAML (${(e as Error).message})`);
  }
  const watchNamespaces = (env('APPKIND_WATCH_NAMESPACE') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const kindGroups = (env('APPKIND_KIND_GROUPS') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return { kinds: kindsFromDocument(doc, `ConfigMap ${namespace}/${configMap}`), watchNamespaces, kindGroups, configMap };
}

/** Applies the installed kinds' objects (server-side apply); resolves once their CRDs are Established. */
export async function installKinds(kc: KubeConfig, namespace = 'appkind-system', name = 'appkind-operator'): Promise<KubernetesObject[]> {
  const rest = new RestClient(kc);
  try {
    const { kinds, watchNamespaces, kindGroups } = await installedKinds(rest, namespace, name);
    const objects = kindsObjects({ kinds, namespace, name, watchNamespaces, kindGroups });
    for (const obj of objects) await rest.apply(obj, FIELD_MANAGER);
    for (const crd of objects.filter((o) => o.kind === 'CustomResourceDefinition')) {
      await waitFor(`CRD ${crd.metadata!.name} Established`, async () => {
        const live = await rest.get<KubernetesObject & { status?: { conditions?: { type: string; status: string }[] } }>(crd);
        return live?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
      }, { timeoutMs: 60_000 });
    }
    return objects;
  } finally {
    rest.close();
  }
}
