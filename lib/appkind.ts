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
  /** Largest `spec.size` the API server accepts. @default 100 */
  readonly maxSize?: number;
  /**
   * Images a CR may ask for in `spec.image`, besides the kind's own image: exact references, or
   * prefixes ending in `*` such as `registry.example.com/*` or `takeyan/flask:*` (see ImagePolicy).
   * The CRD refuses other images at admission and the operator refuses to apply them.
   * @default none: CRs run the kind's image only
   */
  readonly allowedImages?: string[];
  /**
   * Pods run as non-root with all capabilities dropped and seccomp RuntimeDefault: they meet the
   * "restricted" Pod Security Standard. CRs cannot change it. @default false: the pods meet "baseline"
   */
  readonly runAsNonRoot?: boolean;
  /** UID the container runs as; CRs cannot change it. @default the image's user */
  readonly runAsUser?: number;
  /** Read-only root filesystem for the container; CRs cannot change it. @default false */
  readonly readOnlyRootFilesystem?: boolean;
}

/** The API version string of an app kind, `group/version`. */
export function apiVersionOf(kind: Pick<AppKind, 'group' | 'version'>): string {
  return `${kind.group}/${kind.version}`;
}

/** Default largest `spec.size`. */
export const DEFAULT_MAX_SIZE = 100;

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
