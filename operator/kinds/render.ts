// render(): one CR of an app kind in, the Kubernetes objects the construct gives for it out, with what
// the CR may set bounded by what its kind allows.
import { App, Chart } from 'cdk8s';
import {
  AppKind,
  ContainerApp,
  ContainerAppProps,
  ContainerSecurity,
  EnvFromSource,
  EnvVar,
  PodDisruptionBudgetOptions,
  ResourceList,
  ResourceRequirements,
} from 'cdk8s-appkind';

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
  /** Arguments, replacing the kind's (when the kind's overrides allow args). @default the kind's */
  readonly args?: string[];
  /** Variables merged into the kind's by name (when the kind allows env). @default the kind's */
  readonly env?: EnvVar[];
  /** Sources added after the kind's (when the kind allows envFrom). @default the kind's */
  readonly envFrom?: EnvFromSource[];
  /** Requests and limits merged into the kind's (when the kind allows resources). @default the kind's */
  readonly resources?: ResourceRequirements;
  /** ServiceAccount of the pods (when the kind allows it). @default the kind's */
  readonly serviceAccountName?: string;
  /** A PodDisruptionBudget replacing the kind's (when the kind allows it). @default the kind's */
  readonly podDisruptionBudget?: PodDisruptionBudgetOptions;
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

/** The kind's env with the CR's merged in by name: a CR variable replaces the kind's of that name, new ones follow. */
function mergeEnv(kind: EnvVar[] | undefined, cr: EnvVar[] | undefined): EnvVar[] | undefined {
  if (!cr?.length) return kind;
  const byName = new Map(cr.map((e) => [e.name, e]));
  const merged = (kind ?? []).map((e) => byName.get(e.name) ?? e);
  return [...merged, ...cr.filter((e) => !(kind ?? []).some((k) => k.name === e.name))];
}

function mergeResources(kind: ResourceRequirements | undefined, cr: ResourceRequirements | undefined): ResourceRequirements | undefined {
  if (!cr) return kind;
  const list = (a: ResourceList | undefined, b: ResourceList | undefined) => (a || b ? { ...a, ...b } : undefined);
  return { requests: list(kind?.requests, cr.requests), limits: list(kind?.limits, cr.limits) };
}

/**
 * The construct props for one CR: the kind's settings, with what the CR sets where the kind's
 * `overrides` allow it. A field the kind does not allow is ignored here even if a CR carries it
 * (its CRD has no such field, so the API server prunes it anyway).
 */
export function appPropsFor(appKind: AppKind, cr: AppResource): ContainerAppProps {
  const spec = cr.spec ?? {};
  const allowed = appKind.overrides ?? {};
  return {
    name: cr.metadata.name,
    namespace: cr.metadata.namespace,
    appName: appKind.appName,
    image: spec.image ?? appKind.image,
    port: spec.port ?? appKind.port,
    replicas: spec.size ?? 1,
    nodePort: spec.nodePort,
    securityContext: securityOf(appKind),
    command: appKind.command,
    args: (allowed.args && spec.args) || appKind.args,
    env: allowed.env ? mergeEnv(appKind.env, spec.env) : appKind.env,
    envFrom: allowed.envFrom && spec.envFrom?.length ? [...(appKind.envFrom ?? []), ...spec.envFrom] : appKind.envFrom,
    readinessProbe: appKind.readinessProbe,
    livenessProbe: appKind.livenessProbe,
    startupProbe: appKind.startupProbe,
    volumes: appKind.volumes,
    volumeMounts: appKind.volumeMounts,
    tmpVolume: appKind.tmpVolume,
    resources: allowed.resources ? mergeResources(appKind.resources, spec.resources) : appKind.resources,
    imagePullSecrets: appKind.imagePullSecrets,
    serviceAccountName: (allowed.serviceAccountName && spec.serviceAccountName) || appKind.serviceAccountName,
    automountServiceAccountToken: appKind.automountServiceAccountToken,
    serviceType: appKind.serviceType,
    portName: appKind.portName,
    appProtocol: appKind.appProtocol,
    imagePullPolicy: appKind.imagePullPolicy,
    podDisruptionBudget: (allowed.podDisruptionBudget && spec.podDisruptionBudget) || appKind.podDisruptionBudget,
    networkPolicy: appKind.networkPolicy,
    topologySpreadConstraints: appKind.topologySpreadConstraints,
    podAntiAffinity: appKind.podAntiAffinity,
  };
}

const QUANTITY_SUFFIX: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A Kubernetes quantity as a number (`500m` is 0.5, `1Gi` 2^30), or NaN when it is not one. */
export function quantityValue(q: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$/.exec(q);
  const factor = m ? QUANTITY_SUFFIX[m[2]!] : undefined;
  return m && factor !== undefined ? Number(m[1]) * factor : NaN;
}

/**
 * What a CR sets beyond what its kind allows: a reserved env name, resources above the kind's bounds.
 * The CRD refuses these at admission; this holds for CRs stored before the kind tightened its limits.
 */
export function overrideProblems(appKind: AppKind, cr: AppResource): string[] {
  const spec = cr.spec ?? {};
  const allowed = appKind.overrides ?? {};
  const out: string[] = [];
  const deny = new Set(allowed.env?.deny ?? []);
  for (const e of allowed.env ? (spec.env ?? []) : []) {
    if (deny.has(e.name)) out.push(`spec.env sets ${e.name}, which the kind ${appKind.kind} reserves; remove it from the ${appKind.kind}`);
  }
  const bounds: [keyof ResourceList, string | undefined][] = [
    ['cpu', allowed.resources?.maxCpu],
    ['memory', allowed.resources?.maxMemory],
  ];
  for (const [resource, max] of allowed.resources ? bounds : []) {
    for (const part of ['requests', 'limits'] as const) {
      const asked = spec.resources?.[part]?.[resource];
      if (max !== undefined && asked !== undefined && !(quantityValue(asked) <= quantityValue(max))) {
        out.push(`spec.resources.${part}.${resource} ${asked} is above the kind's most, ${max}; ask for at most ${max}`);
      }
    }
  }
  return out;
}

/**
 * The kind's pod security, never the CR's (the CRD has no such fields; the API server prunes them).
 * runAsNonRoot stands for all the "restricted" Pod Security Standard asks of the pod spec.
 */
function securityOf(appKind: AppKind): ContainerSecurity | undefined {
  const { runAsNonRoot, runAsUser, runAsGroup, readOnlyRootFilesystem } = appKind;
  if (runAsNonRoot === undefined && runAsUser === undefined && runAsGroup === undefined && readOnlyRootFilesystem === undefined)
    return undefined;
  return {
    runAsNonRoot,
    runAsUser,
    runAsGroup,
    readOnlyRootFilesystem,
    ...(runAsNonRoot ? { dropAllCapabilities: true, seccompRuntimeDefault: true } : {}),
  };
}

/**
 * The objects one CR stands for: CR in, plain Kubernetes objects out. Pure: each call builds the
 * construct in a fresh cdk8s App and Chart and writes nothing to disk.
 */
export function render(appKind: AppKind, cr: AppResource, props: ContainerAppProps = appPropsFor(appKind, cr)): KubeObject[] {
  const problems = overrideProblems(appKind, cr);
  if (problems.length > 0) throw new Error(`${appKind.kind} ${cr.metadata.namespace ?? ''}/${cr.metadata.name}: ${problems.join('; ')}`);
  const chart = new Chart(new App(), 'render', { disableResourceNameHashes: true });
  new ContainerApp(chart, cr.metadata.name, props);
  return chart.toJson() as KubeObject[];
}
