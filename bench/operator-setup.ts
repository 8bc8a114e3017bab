/**
 * What both benchmarks do before starting the operator on a fresh control plane: the kind's CRD and
 * the bundle's RBAC (no operator Deployment: the bench runs the operator as a local process under its
 * ServiceAccount's identity), the CRs' namespace, and the operator's environment.
 */
import { type KubernetesObject } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { OperatorBundle } from 'cdk8s-appkind';
import { SAMPLE_KIND } from '../operator/config.js';
import { crdObjects } from '../operator/crd-yaml.js';
import { RestClient } from '../operator/rest.js';
import { applyManifests } from '../tools/controlplane/apply.js';
import { type ControlPlane } from '../tools/controlplane/controlplane.js';
import { freePort } from '../tools/controlplane/ports.js';

export const NS = 'bench';
export const OPERATOR_NS = 'appkind-system';
export const kind = SAMPLE_KIND;

export interface OperatorSetup {
  readonly rest: RestClient;
  /** Metrics and health port of the operator process. */
  readonly port: number;
  /** The operator's environment: its ServiceAccount's kubeconfig, the port, LOG_LEVEL=warn. */
  readonly env: NodeJS.ProcessEnv;
}

export async function setUpOperator(cp: ControlPlane): Promise<OperatorSetup> {
  const kc = cp.kubeConfig();
  const rest = new RestClient(kc);
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds: [kind], namespace: OPERATOR_NS, crds: false });
  await applyManifests(kc, [...crdObjects([kind]), ...(chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment')]);
  await rest.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, 'bench');
  const kubeconfig = await cp.serviceAccountKubeconfig(OPERATOR_NS, 'appkind-operator');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig, METRICS_PORT: String(port), HEALTH_PORT: String(port), LOG_LEVEL: 'warn' };
  return { rest, port, env };
}
