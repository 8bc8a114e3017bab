/** CPU, memory and ephemeral storage as Kubernetes quantity strings, e.g. `{ cpu: '50m', memory: '128Mi' }`. */
export interface ResourceList {
  /**
   * CPU quantity, e.g. `100m` or `1`.
   * @default none
   */
  readonly cpu?: string;
  /**
   * Memory quantity, e.g. `128Mi`.
   * @default none
   */
  readonly memory?: string;
  /**
   * Local ephemeral storage (container writable layer, logs, emptyDirs not in memory), Kubernetes
   * `ephemeral-storage`, e.g. `1Gi`.
   * @default none
   */
  readonly ephemeralStorage?: string;
}

/** CPU, memory and ephemeral-storage requests and limits of a container, as in the Kubernetes `resources` field. */
export interface ResourceRequirements {
  /**
   * What the scheduler reserves for the container.
   * @default none
   */
  readonly requests?: ResourceList;
  /**
   * The most the container may use.
   * @default none
   */
  readonly limits?: ResourceList;
}

/** When the kubelet pulls a container image. */
export enum ImagePullPolicy {
  /** Pull on every pod start. */
  ALWAYS = 'Always',
  /** Pull only when the node does not have the image. */
  IF_NOT_PRESENT = 'IfNotPresent',
  /** Never pull; the image must be on the node. */
  NEVER = 'Never',
}

/** A container's security settings (the Kubernetes `securityContext` fields this construct manages). */
export interface ContainerSecurity {
  /**
   * Require the container to run as a non-root user.
   * @default false
   */
  readonly runAsNonRoot?: boolean;
  /**
   * User ID the container runs as.
   * @default the image's user
   */
  readonly runAsUser?: number;
  /**
   * Group ID the container runs as.
   * @default the image's group
   */
  readonly runAsGroup?: number;
  /**
   * Mount the root filesystem read-only.
   * @default false
   */
  readonly readOnlyRootFilesystem?: boolean;
  /**
   * Run privileged.
   * @default false
   */
  readonly privileged?: boolean;
  /**
   * Allow a process to gain more privileges than its parent.
   * @default false
   */
  readonly allowPrivilegeEscalation?: boolean;
  /**
   * Drop every Linux capability (`capabilities.drop: [ALL]`), as the "restricted" Pod Security Standard asks.
   * @default false: the container runtime's default capabilities
   */
  readonly dropAllCapabilities?: boolean;
  /**
   * Give the pod the container runtime's default seccomp profile (`RuntimeDefault`), as the
   * "restricted" Pod Security Standard asks.
   * @default false: no profile set (the kubelet's default, usually Unconfined)
   */
  readonly seccompRuntimeDefault?: boolean;
}
