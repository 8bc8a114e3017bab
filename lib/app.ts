import { ApiObject, JsonPatch } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import { Construct } from 'constructs';

/** Label keys that select an app's pods. They depend only on the props, never on the construct path. */
export const NAME_LABEL = 'app.kubernetes.io/name';
export const INSTANCE_LABEL = 'app.kubernetes.io/instance';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';

/** Default value of the `app.kubernetes.io/managed-by` label. */
export const DEFAULT_MANAGED_BY = 'cdk8s-appkind';

/** Names of an app's Deployment and Service, from its base name. */
export function appObjectNames(name: string): { deployment: string; service: string } {
  return { deployment: `${name}-deployment`, service: `${name}-svc` };
}

/** Labels that select an app's pods. */
export function appSelectorLabels(name: string, appName: string, managedBy = DEFAULT_MANAGED_BY): Record<string, string> {
  return { [NAME_LABEL]: appName, [INSTANCE_LABEL]: name, [MANAGED_BY_LABEL]: managedBy };
}

export interface ContainerAppProps {
  /** Base name: the objects are `<name>-deployment` and `<name>-svc`; also the instance label. @default the construct id */
  readonly name?: string;
  /** Namespace of both objects. @default none (the chart's namespace, or the one applied to) */
  readonly namespace?: string;
  /** Container image to run. */
  readonly image: string;
  /** Port the container listens on; also the Service port and target port. */
  readonly port: number;
  /** Number of pods. @default 1 */
  readonly replicas?: number;
  /** Value of the `app.kubernetes.io/name` label and the container name. @default the name */
  readonly appName?: string;
  /** Environment variables of the container. @default none */
  readonly env?: Record<string, string>;
  /** CPU and memory requests and limits. @default none: the namespace's LimitRange or the scheduler's defaults apply */
  readonly resources?: kplus.ContainerResources;
  /** Extra labels on the Deployment, Service and pods (never part of the selector). @default none */
  readonly labels?: Record<string, string>;
  /** Extra annotations on the Deployment, Service and pods. @default none */
  readonly annotations?: Record<string, string>;
  /** Fixed NodePort, 30000-32767. @default allocated by the API server */
  readonly nodePort?: number;
  /** When the kubelet pulls the image. @default kplus.ImagePullPolicy.IF_NOT_PRESENT */
  readonly imagePullPolicy?: kplus.ImagePullPolicy;
  /**
   * Run as a non-root user, with every capability dropped and the runtime's default seccomp profile:
   * the pods then meet the "restricted" Pod Security Standard (the image must run as a non-root UID,
   * or `runAsUser` must give one). Unset, the pods meet "baseline".
   * @default false
   */
  readonly runAsNonRoot?: boolean;
  /** UID the container runs as. @default the image's user */
  readonly runAsUser?: number;
  /** Mount the container's root filesystem read-only. Hardening only; no Pod Security level depends on it. @default false */
  readonly readOnlyRootFilesystem?: boolean;
  /**
   * Container security context, applied over what `runAsNonRoot`, `runAsUser` and `readOnlyRootFilesystem` give.
   * @default root allowed, writable root filesystem, not privileged, no privilege escalation
   */
  readonly securityContext?: kplus.ContainerSecurityContextProps;
  /** Value of the `app.kubernetes.io/managed-by` label (part of the selector). @default "cdk8s-appkind" */
  readonly managedBy?: string;
}

/**
 * One app: a Deployment of a single container and a NodePort Service in front of it.
 * Built on cdk8s-plus-27 with each of its defaults that would break an arbitrary image overridden.
 */
export class ContainerApp extends Construct {
  /** Name of the Deployment. */
  public readonly deploymentName: string;
  /** Name of the Service. */
  public readonly serviceName: string;
  /** Labels that select the app's pods (Deployment selector and Service selector). */
  public readonly selectorLabels: Record<string, string>;
  /** The Deployment. */
  public readonly deployment: kplus.Deployment;
  /** The Service. */
  public readonly service: kplus.Service;

  constructor(scope: Construct, id: string, props: ContainerAppProps) {
    super(scope, id);
    const name = props.name ?? id;
    const appName = props.appName ?? name;
    const replicas = props.replicas ?? 1;
    const runAsNonRoot = props.runAsNonRoot ?? false;
    checkProps(this.node.path, props, replicas);

    const names = appObjectNames(name);
    this.deploymentName = names.deployment;
    this.serviceName = names.service;
    this.selectorLabels = appSelectorLabels(name, appName, props.managedBy);
    const labels = { ...props.labels, ...this.selectorLabels };
    const metadata = { namespace: props.namespace, labels, annotations: props.annotations };

    this.deployment = new kplus.Deployment(this, 'Deployment', {
      metadata: { ...metadata, name: this.deploymentName },
      podMetadata: { labels, annotations: props.annotations },
      // Not the path-derived cdk8s.io/metadata.addr selector: a Deployment selector is immutable.
      select: false,
      replicas,
      securityContext: { ensureNonRoot: runAsNonRoot },
      containers: [{
        name: appName,
        image: props.image,
        portNumber: props.port,
        envVariables: toEnv(props.env),
        resources: props.resources ?? {},
        imagePullPolicy: props.imagePullPolicy ?? kplus.ImagePullPolicy.IF_NOT_PRESENT,
        securityContext: {
          ensureNonRoot: runAsNonRoot,
          readOnlyRootFilesystem: props.readOnlyRootFilesystem ?? false,
          privileged: false,
          allowPrivilegeEscalation: false,
          ...(props.runAsUser !== undefined ? { user: props.runAsUser } : {}),
          ...props.securityContext,
        },
      }],
    });
    this.deployment.select(kplus.LabelSelector.of({ labels: this.selectorLabels }));
    const deploymentObject = ApiObject.of(this.deployment);
    // cdk8s-plus adds these whatever the props say; remove them so the output depends on the props only.
    deploymentObject.addJsonPatch(JsonPatch.remove('/spec/template/metadata/labels/cdk8s.io~1metadata.addr'));
    // A TCP startup probe fails images that take over 30 s to listen; the app kind promises any image.
    deploymentObject.addJsonPatch(JsonPatch.remove('/spec/template/spec/containers/0/startupProbe'));
    if (runAsNonRoot) {
      // The rest of "restricted" (cdk8s-plus-27 has no "ALL" capability and no seccomp field).
      deploymentObject.addJsonPatch(JsonPatch.add('/spec/template/spec/containers/0/securityContext/capabilities', { drop: ['ALL'] }));
      deploymentObject.addJsonPatch(JsonPatch.add('/spec/template/spec/securityContext/seccompProfile', { type: 'RuntimeDefault' }));
    }

    this.service = new kplus.Service(this, 'Service', {
      metadata: { ...metadata, name: this.serviceName },
      type: kplus.ServiceType.NODE_PORT,
      ports: [{ name: 'http', port: props.port, targetPort: props.port, nodePort: props.nodePort }],
    });
    for (const [key, value] of Object.entries(this.selectorLabels)) this.service.selectLabel(key, value);
    // An empty externalIPs list would be applied and owned for nothing.
    ApiObject.of(this.service).addJsonPatch(JsonPatch.remove('/spec/externalIPs'));
  }
}

function toEnv(env: Record<string, string> | undefined): Record<string, kplus.EnvValue> {
  const out: Record<string, kplus.EnvValue> = {};
  for (const [key, value] of Object.entries(env ?? {})) out[key] = kplus.EnvValue.fromValue(value);
  return out;
}

function checkProps(path: string, props: ContainerAppProps, replicas: number): void {
  const fail = (what: string) => {
    throw new Error(`ContainerApp ${path}: ${what}`);
  };
  if (!props.image || /\s/.test(props.image)) fail(`image "${props.image}" is empty or contains white space; give an image reference such as "nginx:1.27"`);
  if (!Number.isInteger(props.port) || props.port < 1 || props.port > 65535) fail(`port ${props.port} is not an integer from 1 to 65535`);
  if (!Number.isInteger(replicas) || replicas < 0) fail(`replicas ${replicas} is not a non-negative integer`);
  if (props.runAsUser !== undefined && (!Number.isInteger(props.runAsUser) || props.runAsUser < 0 || props.runAsUser > 2147483647)) {
    fail(`runAsUser ${props.runAsUser} is not a UID from 0 to 2147483647`);
  }
  if (props.runAsNonRoot && props.runAsUser === 0) fail('runAsNonRoot is set but runAsUser is 0 (root); give a non-zero UID or leave runAsUser unset');
  if (props.nodePort !== undefined && (!Number.isInteger(props.nodePort) || props.nodePort < 30000 || props.nodePort > 32767)) {
    fail(`nodePort ${props.nodePort} is outside 30000-32767; leave it unset to let the API server allocate one`);
  }
}
