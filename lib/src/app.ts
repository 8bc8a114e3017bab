import { ApiObject, JsonPatch, Names } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { PodAntiAffinity, ServiceType, WhenUnsatisfiable } from './exposure';
import { addsTmpVolume, containerFields, exposureProblems, intOrPercent, intPort, placementProblems, podSpecProblems, volumesOf } from './podspec';
import { ContainerSecurity, ImagePullPolicy, ResourceList, ResourceRequirements } from './resources';
import { AppSettings } from './settings';

/** Names of an app's Deployment and Service. */
export interface AppObjectNames {
  /** Name of the Deployment, `<name>-deployment`. */
  readonly deployment: string;
  /** Name of the Service, `<name>-svc`. */
  readonly service: string;
  /** Name of the PodDisruptionBudget (when asked for), `<name>-pdb`. */
  readonly podDisruptionBudget: string;
  /** Name of the NetworkPolicy (when asked for), `<name>-ingress`. */
  readonly networkPolicy: string;
}

/** Props of a {@link ContainerApp}. */
export interface ContainerAppProps extends AppSettings {
  /**
   * Base name: the objects are `<name>-deployment` and `<name>-svc`; also the instance label.
   * Give it when the names must be fixed (the operator uses the CR's name).
   * @default a DNS label derived from the construct path with a hash of it (like cdk8s object names,
   * but hashed even in charts with `disableResourceNameHashes`), so it is unique across charts
   */
  readonly name?: string;
  /**
   * Namespace of both objects.
   * @default none (the chart's namespace, or the one applied to)
   */
  readonly namespace?: string;
  /** Container image to run, e.g. `nginx:1.27`. */
  readonly image: string;
  /** Port the container listens on; also the Service port and target port. */
  readonly port: number;
  /**
   * Number of pods.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * Value of the `app.kubernetes.io/name` label and the container name.
   * @default the name
   */
  readonly appName?: string;
  /**
   * Extra labels on the Deployment, Service and pods (never part of the selector).
   * @default none
   */
  readonly labels?: { [key: string]: string };
  /**
   * Extra annotations on the Deployment, Service and pods.
   * @default none
   */
  readonly annotations?: { [key: string]: string };
  /**
   * Fixed NodePort, 30000-32767 (only with ServiceType.NODE_PORT).
   * @default allocated by the API server
   */
  readonly nodePort?: number;
  /**
   * Container security context; unset fields keep their defaults.
   * @default root allowed, writable root filesystem, not privileged, no privilege escalation
   */
  readonly securityContext?: ContainerSecurity;
  /**
   * Value of the `app.kubernetes.io/managed-by` label (part of the selector).
   * @default "cdk8s-appkind"
   */
  readonly managedBy?: string;
}

/**
 * One app: a Deployment of a single container and a NodePort Service in front of it.
 * Built on cdk8s-plus-27 with each of its defaults that would break an arbitrary image overridden.
 *
 * @example
 * import { App, Chart } from 'cdk8s';
 * import { ContainerApp } from 'cdk8s-appkind';
 *
 * const app = new App();
 * const chart = new Chart(app, 'shop');
 * // A Deployment "backend-deployment" of 2 pods and a NodePort Service "backend-svc" on port 5000.
 * new ContainerApp(chart, 'backend', {
 *   name: 'backend',
 *   image: 'takeyan/flask:0.0.3',
 *   port: 5000,
 *   replicas: 2,
 *   resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
 *   securityContext: { runAsNonRoot: true, runAsUser: 1000 },
 * });
 * app.synth();
 */
export class ContainerApp extends Construct {
  /** Label key of the app name (part of the selector). */
  public static readonly NAME_LABEL = 'app.kubernetes.io/name';
  /** Label key of the instance, the base name (part of the selector). */
  public static readonly INSTANCE_LABEL = 'app.kubernetes.io/instance';
  /** Label key of the manager (part of the selector). */
  public static readonly MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
  /** Default value of the `app.kubernetes.io/managed-by` label. */
  public static readonly DEFAULT_MANAGED_BY = 'cdk8s-appkind';

  /**
   * Names of an app's Deployment and Service, from its base name.
   * @param name the base name (`ContainerAppProps.name`)
   */
  public static objectNames(name: string): AppObjectNames {
    return { deployment: `${name}-deployment`, service: `${name}-svc`, podDisruptionBudget: `${name}-pdb`, networkPolicy: `${name}-ingress` };
  }

  /**
   * Labels that select an app's pods. They depend only on the props, never on the construct path.
   * @param name the base name (`ContainerAppProps.name`)
   * @param appName the app name (`ContainerAppProps.appName`)
   * @param managedBy the manager (`ContainerAppProps.managedBy`)
   */
  public static selectorLabelsOf(name: string, appName: string, managedBy?: string): { [key: string]: string } {
    return {
      [ContainerApp.NAME_LABEL]: appName,
      [ContainerApp.INSTANCE_LABEL]: name,
      [ContainerApp.MANAGED_BY_LABEL]: managedBy ?? ContainerApp.DEFAULT_MANAGED_BY,
    };
  }

  /** Base name of the objects (the `name` prop, or the one derived from the construct path). */
  public readonly name: string;
  /** Name of the Deployment. */
  public readonly deploymentName: string;
  /** Name of the Service. */
  public readonly serviceName: string;
  /** Labels that select the app's pods (Deployment selector and Service selector). */
  public readonly selectorLabels: { [key: string]: string };
  /** The Deployment. */
  public readonly deployment: kplus.Deployment;
  /** The Service. */
  public readonly service: kplus.Service;
  /** The PodDisruptionBudget, when `podDisruptionBudget` is given. */
  public readonly podDisruptionBudget?: kplus.k8s.KubePodDisruptionBudget;
  /** The NetworkPolicy, when `networkPolicy` is given. */
  public readonly networkPolicy?: kplus.k8s.KubeNetworkPolicy;

  constructor(scope: Construct, id: string, props: ContainerAppProps) {
    super(scope, id);
    // A Service name is a DNS label of at most 63 characters, and "-svc" takes four of them.
    this.name = props.name ?? Names.toDnsLabel(this, { maxLen: 59 });
    const name = this.name;
    const appName = props.appName ?? name;
    const replicas = props.replicas ?? 1;
    const security = props.securityContext ?? {};
    const tmp = addsTmpVolume(props, security.readOnlyRootFilesystem ?? false, props.tmpVolume ?? true);
    checkProps(this.node.path, props, replicas, tmp);

    const names = ContainerApp.objectNames(name);
    this.deploymentName = names.deployment;
    this.serviceName = names.service;
    this.selectorLabels = ContainerApp.selectorLabelsOf(name, appName, props.managedBy);
    const labels = { ...props.labels, ...this.selectorLabels };
    const metadata = { namespace: props.namespace, labels, annotations: props.annotations };

    this.deployment = new kplus.Deployment(this, 'Deployment', {
      metadata: { ...metadata, name: this.deploymentName },
      podMetadata: { labels, annotations: props.annotations },
      // Not the path-derived cdk8s.io/metadata.addr selector: a Deployment selector is immutable.
      select: false,
      replicas,
      securityContext: { ensureNonRoot: security.runAsNonRoot ?? false },
      containers: [{
        name: appName,
        image: props.image,
        portNumber: props.port,
        resources: {},
        // Same strings as cdk8s-plus-27's enum.
        imagePullPolicy: (props.imagePullPolicy ?? ImagePullPolicy.IF_NOT_PRESENT) as string as kplus.ImagePullPolicy,
        securityContext: {
          ensureNonRoot: security.runAsNonRoot ?? false,
          readOnlyRootFilesystem: security.readOnlyRootFilesystem ?? false,
          privileged: security.privileged ?? false,
          allowPrivilegeEscalation: security.allowPrivilegeEscalation ?? false,
          user: security.runAsUser,
          group: security.runAsGroup,
        },
      }],
    });
    this.deployment.select(kplus.LabelSelector.of({ labels: this.selectorLabels }));
    const deploymentObject = ApiObject.of(this.deployment);
    // cdk8s-plus adds these whatever the props say; remove them so the output depends on the props only.
    deploymentObject.addJsonPatch(JsonPatch.remove('/spec/template/metadata/labels/cdk8s.io~1metadata.addr'));
    // A TCP startup probe fails images that take over 30 s to listen; the app kind promises any image.
    deploymentObject.addJsonPatch(JsonPatch.remove('/spec/template/spec/containers/0/startupProbe'));
    // cdk8s-plus-27 has no "ALL" capability and no seccomp field.
    if (security.dropAllCapabilities) deploymentObject.addJsonPatch(JsonPatch.add('/spec/template/spec/containers/0/securityContext/capabilities', { drop: ['ALL'] }));
    if (security.seccompRuntimeDefault) deploymentObject.addJsonPatch(JsonPatch.add('/spec/template/spec/securityContext/seccompProfile', { type: 'RuntimeDefault' }));
    // Quantities are passed through as written, so any cdk8s-plus version's values fit. The patch is
    // applied before KubeDeployment's typed serialization, which reads Quantity objects.
    const resources = toResources(props.resources);
    if (resources) deploymentObject.addJsonPatch(JsonPatch.add('/spec/template/spec/containers/0/resources', resources));
    // Kubernetes shapes as given (env, probes, volumes...): written as JSON, not through cdk8s-plus's own models.
    for (const [field, value] of Object.entries(containerFields(props, props.port, tmp))) {
      deploymentObject.addJsonPatch(JsonPatch.add(`/spec/template/spec/containers/0/${field}`, value));
    }
    const pod = {
      serviceAccountName: props.serviceAccountName,
      automountServiceAccountToken: props.automountServiceAccountToken,
      imagePullSecrets: props.imagePullSecrets?.length ? props.imagePullSecrets.map((r) => ({ name: r.name })) : undefined,
      volumes: volumesOf(props, tmp),
    };
    for (const [field, value] of Object.entries(pod)) {
      if (value !== undefined) deploymentObject.addJsonPatch(JsonPatch.add(`/spec/template/spec/${field}`, value));
    }
    const placement = placementOf(props, this.selectorLabels);
    for (const [field, value] of Object.entries(placement)) deploymentObject.addJsonPatch(JsonPatch.add(`/spec/template/spec/${field}`, value));

    this.service = new kplus.Service(this, 'Service', {
      metadata: { ...metadata, name: this.serviceName },
      // Same strings as cdk8s-plus-27's enum.
      type: (props.serviceType ?? ServiceType.NODE_PORT) as string as kplus.ServiceType,
      ports: [{ name: props.portName ?? 'http', port: props.port, targetPort: props.port, nodePort: props.nodePort }],
    });
    // cdk8s-plus-27's ServicePort has no appProtocol.
    if (props.appProtocol !== undefined) ApiObject.of(this.service).addJsonPatch(JsonPatch.add('/spec/ports/0/appProtocol', props.appProtocol));
    for (const [key, value] of Object.entries(this.selectorLabels)) this.service.selectLabel(key, value);
    // An empty externalIPs list would be applied and owned for nothing.
    ApiObject.of(this.service).addJsonPatch(JsonPatch.remove('/spec/externalIPs'));

    const selector = { matchLabels: this.selectorLabels };
    if (props.podDisruptionBudget) {
      const { minAvailable, maxUnavailable } = props.podDisruptionBudget;
      const budget = minAvailable !== undefined ? { minAvailable: intOrPercent(minAvailable) } : { maxUnavailable: intOrPercent(maxUnavailable ?? '1') };
      this.podDisruptionBudget = new kplus.k8s.KubePodDisruptionBudget(this, 'PodDisruptionBudget', {
        metadata: { ...metadata, name: names.podDisruptionBudget },
        spec: { selector, ...budget },
      });
    }
    if (props.networkPolicy) {
      const from = props.networkPolicy.from.map((p) => ({
        ...(p.podSelector && { podSelector: { matchLabels: { ...p.podSelector.matchLabels } } }),
        ...(p.namespaceSelector && { namespaceSelector: { matchLabels: { ...p.namespaceSelector.matchLabels } } }),
        ...(p.ipBlock && { ipBlock: { cidr: p.ipBlock.cidr, ...(p.ipBlock.except && { except: [...p.ipBlock.except] }) } }),
      }));
      this.networkPolicy = new kplus.k8s.KubeNetworkPolicy(this, 'NetworkPolicy', {
        metadata: { ...metadata, name: names.networkPolicy },
        spec: { podSelector: selector, policyTypes: ['Ingress'] },
      });
      // An empty `from` would admit every peer: no peer at all is an ingress rule list that is empty.
      const ingress = from.length > 0 ? [{ from, ports: [{ protocol: 'TCP', port: intPort(props.port) }] }] : [];
      ApiObject.of(this.networkPolicy).addJsonPatch(JsonPatch.add('/spec/ingress', ingress));
    }
  }
}

/** The container's `resources`, or undefined when no quantity is set. */
function toResources(r: ResourceRequirements | undefined): kplus.k8s.ResourceRequirements | undefined {
  const list = (l: ResourceList | undefined): { [name: string]: kplus.k8s.Quantity } | undefined => {
    const out: { [name: string]: kplus.k8s.Quantity } = {};
    if (l?.cpu !== undefined) out.cpu = kplus.k8s.Quantity.fromString(l.cpu);
    if (l?.memory !== undefined) out.memory = kplus.k8s.Quantity.fromString(l.memory);
    if (l?.ephemeralStorage !== undefined) out['ephemeral-storage'] = kplus.k8s.Quantity.fromString(l.ephemeralStorage);
    return Object.keys(out).length > 0 ? out : undefined;
  };
  const requests = list(r?.requests);
  const limits = list(r?.limits);
  if (!requests && !limits) return undefined;
  return { ...(limits && { limits }), ...(requests && { requests }) };
}

/** The pod's `topologySpreadConstraints` and `affinity` (Kubernetes JSON), only those asked for; both count the app's own pods. */
function placementOf(props: ContainerAppProps, selectorLabels: { [key: string]: string }): { [field: string]: unknown } {
  const labelSelector = { matchLabels: { ...selectorLabels } };
  const out: { [field: string]: unknown } = {};
  if (props.topologySpreadConstraints?.length) {
    out.topologySpreadConstraints = props.topologySpreadConstraints.map((c) => ({
      maxSkew: c.maxSkew ?? 1,
      topologyKey: c.topologyKey,
      whenUnsatisfiable: c.whenUnsatisfiable ?? WhenUnsatisfiable.SCHEDULE_ANYWAY,
      labelSelector,
      ...(c.minDomains !== undefined && { minDomains: c.minDomains }),
    }));
  }
  if (props.podAntiAffinity) out.affinity = { podAntiAffinity: antiAffinityOf(props.podAntiAffinity, labelSelector) };
  return out;
}

function antiAffinityOf(a: PodAntiAffinity, labelSelector: { matchLabels: { [key: string]: string } }): { [field: string]: unknown } {
  const term = { labelSelector, topologyKey: a.topologyKey ?? 'kubernetes.io/hostname' };
  return a.required
    ? { requiredDuringSchedulingIgnoredDuringExecution: [term] }
    : { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: term }] };
}

function checkProps(path: string, props: ContainerAppProps, replicas: number, tmp: boolean): void {
  const fail = (what: string) => {
    throw new Error(`ContainerApp ${path}: ${what}`);
  };
  if (!props.image || /\s/.test(props.image)) fail(`image "${props.image}" is empty or contains white space; give an image reference such as "nginx:1.27"`);
  if (!Number.isInteger(props.port) || props.port < 1 || props.port > 65535) fail(`port ${props.port} is not an integer from 1 to 65535`);
  if (!Number.isInteger(replicas) || replicas < 0) fail(`replicas ${replicas} is not a non-negative integer`);
  const security = props.securityContext ?? {};
  if (security.runAsNonRoot && security.runAsUser === 0) fail('securityContext.runAsNonRoot is set but runAsUser is 0 (root); give a non-zero UID or leave runAsUser unset');
  if (props.nodePort !== undefined && (!Number.isInteger(props.nodePort) || props.nodePort < 30000 || props.nodePort > 32767)) {
    fail(`nodePort ${props.nodePort} is outside 30000-32767; leave it unset to let the API server allocate one`);
  }
  if (props.nodePort !== undefined && props.serviceType === ServiceType.CLUSTER_IP) fail('nodePort is set but serviceType is ClusterIP; leave nodePort unset or use ServiceType.NODE_PORT');
  const problems = [...podSpecProblems(props, tmp), ...exposureProblems(props.podDisruptionBudget, props.networkPolicy), ...placementProblems(props)];
  if (problems.length > 0) fail(problems.join('; '));
}
