import { EnvFromSource, EnvVar } from './env';
import { NetworkPolicyOptions, PodAntiAffinity, PodDisruptionBudgetOptions, ServiceType, TopologySpreadConstraint } from './exposure';
import { Probe } from './probe';
import { ImagePullPolicy, ResourceRequirements } from './resources';
import { LocalObjectReference, Volume, VolumeMount } from './volume';

/**
 * What an app's container, pods and Service need beyond an image and a port, with the names and
 * shapes of the Kubernetes container and pod spec. The props of a ContainerApp and the settings of an
 * AppKind (which every CR of the kind gets, unless its `overrides` let the CR change them) are both this.
 */
export interface AppSettings {
  /**
   * Entrypoint of the container, replacing the image's ENTRYPOINT (Kubernetes `command`).
   * @default the image's ENTRYPOINT
   */
  readonly command?: string[];
  /**
   * Arguments of the entrypoint, replacing the image's CMD (Kubernetes `args`), e.g. `["-m", "64"]`.
   * @default the image's CMD
   */
  readonly args?: string[];
  /**
   * Environment variables of the container, in order: plain values, or values from a ConfigMap key, a
   * Secret key or a pod field (Kubernetes `env`). The Secret is read by the kubelet only.
   * @default none
   */
  readonly env?: EnvVar[];
  /**
   * Variables from every key of ConfigMaps and Secrets (Kubernetes `envFrom`); `env` wins on a clash.
   * @default none
   */
  readonly envFrom?: EnvFromSource[];
  /**
   * Probe whose failure takes the pod out of the Service and keeps the app (and its CR) not Ready.
   * @default none: a pod is ready once its container started
   */
  readonly readinessProbe?: Probe;
  /**
   * Probe whose failure restarts the container.
   * @default none
   */
  readonly livenessProbe?: Probe;
  /**
   * Probe that holds the other probes back until it passes once (slow starters).
   * @default none
   */
  readonly startupProbe?: Probe;
  /**
   * Volumes of the pod: emptyDir, ConfigMap, Secret or PersistentVolumeClaim (no hostPath).
   * @default none (besides the writable /tmp, see tmpVolume)
   */
  readonly volumes?: Volume[];
  /**
   * Where the volumes appear in the container.
   * @default none
   */
  readonly volumeMounts?: VolumeMount[];
  /**
   * Mount a writable emptyDir named "tmp" at /tmp when the root filesystem is read-only and no
   * volumeMount is at /tmp already.
   * @default true
   */
  readonly tmpVolume?: boolean;
  /**
   * CPU, memory and ephemeral-storage requests and limits, as Kubernetes quantities.
   * @default none: the namespace's LimitRange or the scheduler's defaults apply
   */
  readonly resources?: ResourceRequirements;
  /**
   * Secrets holding registry credentials to pull the image (Kubernetes `imagePullSecrets`).
   * @default none
   */
  readonly imagePullSecrets?: LocalObjectReference[];
  /**
   * ServiceAccount the pods run as.
   * @default the namespace's "default" ServiceAccount
   */
  readonly serviceAccountName?: string;
  /**
   * Mount the ServiceAccount's API token into the pods. Most apps never call the Kubernetes API.
   * @default false
   */
  readonly automountServiceAccountToken?: boolean;
  /**
   * How the Service is reached: a NodePort on every node, or a cluster IP only.
   * @default ServiceType.NODE_PORT
   */
  readonly serviceType?: ServiceType;
  /**
   * When the kubelet pulls the image.
   * @default ImagePullPolicy.IF_NOT_PRESENT
   */
  readonly imagePullPolicy?: ImagePullPolicy;
  /**
   * Name of the Service port; meshes and some ingress controllers read it as the protocol
   * (`http`, `grpc`, `tcp-memcache`...). An IANA service name: at most 15 lower-case letters, digits and "-".
   * @default "http"
   */
  readonly portName?: string;
  /**
   * Application protocol of the Service port (Kubernetes `appProtocol`), e.g. `http`, `kubernetes.io/h2c`
   * or `tcp`; read by meshes and gateways before the port name.
   * @default - none: the port name or the implementation decides
   */
  readonly appProtocol?: string;
  /**
   * Render a PodDisruptionBudget `<name>-pdb` selecting the app's pods.
   * @default - none: a node drain may evict every pod at once
   */
  readonly podDisruptionBudget?: PodDisruptionBudgetOptions;
  /**
   * Render a NetworkPolicy `<name>-ingress` that lets only the given peers reach the port.
   * @default - none: every pod and node may reach it
   */
  readonly networkPolicy?: NetworkPolicyOptions;
  /**
   * Spread the pods over the domains of node labels (Kubernetes `topologySpreadConstraints`, the
   * label selector being the app's).
   * @default - none: the scheduler's default spreading
   */
  readonly topologySpreadConstraints?: TopologySpreadConstraint[];
  /**
   * Keep the pods apart (a pod anti-affinity to the app's own pods).
   * @default - none: several pods may share a node
   */
  readonly podAntiAffinity?: PodAntiAffinity;
}
