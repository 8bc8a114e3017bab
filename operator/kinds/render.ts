import { App, Chart } from 'cdk8s';
import { AppKind, ContainerApp, ContainerAppProps, ContainerSecurity } from 'cdk8s-appkind';

/** The spec of a CR of any app kind. Every field is optional; the kind supplies the defaults. */
export interface AppSpec {
  /** Number of pods (Deployment replicas). @default 1 */
  readonly size?: number;
  /** Container image. @default the kind's image */
  readonly image?: string;
  /** Container and Service port. @default the kind's port */
  readonly port?: number;
  /** Fixed NodePort (30000-32767). @default allocated by the API server */
  readonly nodePort?: number;
}

/** A CR of an app kind as read from the API server (or written in a sample). */
export interface AppResource {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly generation?: number;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly spec?: AppSpec;
}

/** A plain Kubernetes object as rendered (apiVersion, kind, metadata, and the rest). */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
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
    securityContext: securityOf(appKind),
  };
}

/**
 * The kind's pod security, never the CR's (the CRD has no such fields; the API server prunes them).
 * runAsNonRoot stands for all the "restricted" Pod Security Standard asks of the pod spec.
 */
function securityOf(appKind: AppKind): ContainerSecurity | undefined {
  const { runAsNonRoot, runAsUser, readOnlyRootFilesystem } = appKind;
  if (runAsNonRoot === undefined && runAsUser === undefined && readOnlyRootFilesystem === undefined) return undefined;
  return {
    runAsNonRoot,
    runAsUser,
    readOnlyRootFilesystem,
    ...(runAsNonRoot ? { dropAllCapabilities: true, seccompRuntimeDefault: true } : {}),
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
