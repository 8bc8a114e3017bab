import { App, Chart } from 'cdk8s';
import { ContainerApp, ContainerAppProps } from './app.js';
import { AppKind, AppResource } from './appkind.js';

/** A plain Kubernetes object as rendered (apiVersion, kind, metadata, and the rest). */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly [field: string]: unknown;
}

/** The construct props for one CR: the CR's spec where set, the kind's defaults elsewhere. */
export function appPropsFor(appKind: AppKind, cr: AppResource): ContainerAppProps {
  const spec = cr.spec ?? {};
  return {
    name: cr.metadata.name,
    namespace: cr.metadata.namespace,
    appName: appKind.appName,
    image: spec.image ?? appKind.image,
    port: spec.port ?? appKind.port,
    replicas: spec.size ?? 1,
    nodePort: spec.nodePort,
    // The kind's, never the CR's: the CRD has no such fields, so the API server prunes them from CRs.
    runAsNonRoot: appKind.runAsNonRoot,
    runAsUser: appKind.runAsUser,
    readOnlyRootFilesystem: appKind.readOnlyRootFilesystem,
  };
}

/**
 * The objects one CR stands for: CR in, plain Kubernetes objects out. Pure: each call builds the
 * construct in a fresh cdk8s App and Chart and writes nothing to disk.
 */
export function render(appKind: AppKind, cr: AppResource): KubeObject[] {
  const chart = new Chart(new App(), 'render', { disableResourceNameHashes: true });
  new ContainerApp(chart, cr.metadata.name, appPropsFor(appKind, cr));
  return chart.toJson() as KubeObject[];
}
