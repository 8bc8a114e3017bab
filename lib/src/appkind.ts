import { EnvFromSource, EnvVar } from './env';
import { ServiceType } from './exposure';
import { AppKindOverrides } from './overrides';
import { Probe } from './probe';
import { ResourceRequirements } from './resources';
import { LocalObjectReference, Volume, VolumeMount } from './volume';

/**
 * An app kind: a custom resource kind whose every object runs one container image behind a NodePort
 * Service. This is the whole of what a user declares; everything else is derived.
 */
export interface AppKind {
  /** API group, a DNS subdomain, e.g. `swallowlab.com`. */
  readonly group: string;
  /** API version, e.g. `v1alpha1`. */
  readonly version: string;
  /** Kind, UpperCamelCase, e.g. `EchoFlask`. */
  readonly kind: string;
  /** Plural resource name, lower case, e.g. `echoflasks`. */
  readonly plural: string;
  /** Container image run by every CR of this kind unless the CR sets `spec.image`. */
  readonly image: string;
  /** Container port, also the Service port, unless the CR sets `spec.port`. */
  readonly port: number;
  /** Short app name, used in labels and the container name, e.g. `echoflask`. */
  readonly appName: string;
  /**
   * Short names for `kubectl get`, lower-case DNS labels; `[]` for none.
   * @default the initials of the kind's words when there are two or more (`EchoFlask`: `ef`), else none
   */
  readonly shortNames?: string[];
  /**
   * Largest `spec.size` the API server accepts.
   * @default 100
   */
  readonly maxSize?: number;
  /**
   * Images a CR may ask for in `spec.image`, besides the kind's own image: exact references, or
   * prefixes ending in `*` such as `registry.example.com/*` or `takeyan/flask:*` (see ImagePolicy).
   * The CRD refuses other images at admission and the operator refuses to apply them.
   * @default none: CRs run the kind's image only
   */
  readonly allowedImages?: string[];
  /**
   * Run the pods as non-root with every capability dropped and seccomp `RuntimeDefault`, so they meet
   * the "restricted" Pod Security Standard (the image must run as a non-root UID, or set `runAsUser`).
   * CRs cannot change it.
   * @default false: the pods meet "baseline" (root allowed, the runtime's capabilities and seccomp)
   */
  readonly runAsNonRoot?: boolean;
  /**
   * UID the container runs as. CRs cannot change it.
   * @default the image's user
   */
  readonly runAsUser?: number;
  /**
   * Mount the container's root filesystem read-only (hardening; no Pod Security level depends on it).
   * CRs cannot change it.
   * @default false
   */
  readonly readOnlyRootFilesystem?: boolean;
  /**
   * Entrypoint of the container (Kubernetes `command`).
   * @default the image's ENTRYPOINT
   */
  readonly command?: string[];
  /**
   * Arguments of the entrypoint (Kubernetes `args`), e.g. `["-m", "64"]`.
   * @default the image's CMD
   */
  readonly args?: string[];
  /**
   * Environment variables: plain values, or from a ConfigMap key, a Secret key or a pod field.
   * @default none
   */
  readonly env?: EnvVar[];
  /**
   * Variables from every key of ConfigMaps and Secrets.
   * @default none
   */
  readonly envFrom?: EnvFromSource[];
  /**
   * Readiness probe: with one, a CR is Ready only when its pods pass it.
   * @default none
   */
  readonly readinessProbe?: Probe;
  /**
   * Liveness probe.
   * @default none
   */
  readonly livenessProbe?: Probe;
  /**
   * Startup probe.
   * @default none
   */
  readonly startupProbe?: Probe;
  /**
   * Volumes of the pods (emptyDir, ConfigMap, Secret, PersistentVolumeClaim).
   * @default none
   */
  readonly volumes?: Volume[];
  /**
   * Where the volumes appear in the container.
   * @default none
   */
  readonly volumeMounts?: VolumeMount[];
  /**
   * Mount a writable emptyDir at /tmp when readOnlyRootFilesystem is set.
   * @default true
   */
  readonly tmpVolume?: boolean;
  /**
   * CPU and memory requests and limits.
   * @default none
   */
  readonly resources?: ResourceRequirements;
  /**
   * Registry credentials for the image.
   * @default none
   */
  readonly imagePullSecrets?: LocalObjectReference[];
  /**
   * ServiceAccount the pods run as.
   * @default the namespace's "default"
   */
  readonly serviceAccountName?: string;
  /**
   * Mount the ServiceAccount's API token into the pods.
   * @default false
   */
  readonly automountServiceAccountToken?: boolean;
  /**
   * The Service type of every CR.
   * @default ServiceType.NODE_PORT
   */
  readonly serviceType?: ServiceType;
  /**
   * What CRs may set beside size, image, port and nodePort, and within which limits.
   * @default none
   */
  readonly overrides?: AppKindOverrides;
}
