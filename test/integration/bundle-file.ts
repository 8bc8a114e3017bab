// The operator install bundle exactly as a user gets it: `npx cdk8s synth` writes
// appkind-operator.k8s.yaml, and tests read the operator's pod from that file (not from a second copy
// of its settings).
import type { KubernetesObject, V1ConfigMap, V1Container, V1Deployment, V1PodSpec } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import type { AppKind } from 'cdk8s-appkind';
import { parse, parseAllDocuments } from 'yaml';
import { kindsFromDocument } from 'appkind-operator/kinds';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

/** The bundle's file name in the synth output folder. */
export const BUNDLE_FILE = 'appkind-operator.k8s.yaml';

/** Settings `cdk8s synth` reads from the environment; left out so the defaults a user gets apply. */
const SYNTH_SETTINGS = ['GROUPNAME', 'VERSION', 'CRKIND', 'IMAGENAME', 'CLUSTERPORT', 'APPNAME', 'APPKIND_CONFIG', 'APPKIND_KINDS', 'APPKIND_OPERATOR_IMAGE', 'APPKIND_OPERATOR_NAMESPACE', 'APPKIND_WATCH_NAMESPACE', 'APPKIND_KIND_GROUPS'];

/** `npx cdk8s synth` as a user runs it, into `out`, with `settings` (e.g. APPKIND_KIND_GROUPS); returns the bundle file's path. */
export async function synthBundle(out: string, settings: Record<string, string> = {}): Promise<string> {
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !SYNTH_SETTINGS.includes(k))), ...settings };
  await run('npx', ['cdk8s', 'synth', '--check-upgrade=false', '--output', out], { cwd: root, env });
  return join(out, BUNDLE_FILE);
}

/** Every object of a synthesized bundle file, in file order. */
export function readBundle(file: string): KubernetesObject[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as KubernetesObject);
}

/** The operator's pod as the bundle's Deployment defines it. */
export interface OperatorPod {
  readonly deployment: V1Deployment;
  readonly namespace: string;
  readonly spec: V1PodSpec;
  /** The operator container (the pod's only one). */
  readonly container: V1Container;
  /** The data of the bundle's ConfigMaps, by name (what a configMap volume of the pod holds). */
  readonly configMaps: Record<string, Record<string, string>>;
}

export function operatorPod(bundle: KubernetesObject[]): OperatorPod {
  const deployments = bundle.filter((o): o is V1Deployment => o.kind === 'Deployment' && o.apiVersion === 'apps/v1');
  if (deployments.length !== 1) throw new Error(`the bundle has ${deployments.length} Deployments; expected the operator's only`);
  const deployment = deployments[0]!;
  const spec = deployment.spec?.template.spec;
  if (!spec || spec.containers.length !== 1) throw new Error('the operator Deployment has no pod spec with exactly one container');
  const configMaps = Object.fromEntries(
    bundle.filter((o): o is V1ConfigMap => o.kind === 'ConfigMap').map((c) => [c.metadata!.name!, c.data ?? {}]),
  );
  return { deployment, namespace: deployment.metadata!.namespace!, spec, container: spec.containers[0]!, configMaps };
}

/** The operator container's environment as the kubelet gives it to the pod `podName`: the downward API filled in. */
export function podEnv(pod: OperatorPod, podName: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of pod.container.env ?? []) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    if (e.value !== undefined) env[e.name] = e.value;
    else if (field === 'metadata.name') env[e.name] = podName;
    else if (field === 'metadata.namespace') env[e.name] = pod.namespace;
    else throw new Error(`operator env ${e.name}: no value and no known fieldRef`);
  }
  return env;
}

/** The kinds the operator pod serves: the file APPKIND_CONFIG names, in the ConfigMap APPKIND_CONFIG_MAP names. */
export function podKinds(pod: OperatorPod): AppKind[] {
  const env = (name: string) => pod.container.env?.find((e) => e.name === name)?.value;
  const file = env('APPKIND_CONFIG');
  const configMap = env('APPKIND_CONFIG_MAP');
  const text = file && configMap ? pod.configMaps[configMap]?.[basename(file)] : undefined;
  if (!text) throw new Error(`the operator pod's kinds: no ConfigMap ${configMap} with the key of ${file}`);
  return kindsFromDocument(parse(text), `ConfigMap ${configMap}`);
}
