/** A file made from one key of a ConfigMap or Secret volume. */
export interface KeyToPath {
  /** The key. */
  readonly key: string;
  /** Relative path of the file in the volume. */
  readonly path: string;
  /**
   * File mode bits, e.g. 0o400 (256).
   * @default the volume's defaultMode
   */
  readonly mode?: number;
}

/** A scratch directory that lives as long as the pod. */
export interface EmptyDirVolumeSource {
  /**
   * "Memory" for a tmpfs.
   * @default "": the node's disk
   */
  readonly medium?: string;
  /**
   * Largest size, as a Kubernetes quantity, e.g. `64Mi`.
   * @default no limit
   */
  readonly sizeLimit?: string;
}

/** A ConfigMap's keys as files. */
export interface ConfigMapVolumeSource {
  /** Name of the ConfigMap, in the app's namespace. */
  readonly name: string;
  /**
   * Only these keys, at these paths.
   * @default every key, as a file of its name
   */
  readonly items?: KeyToPath[];
  /**
   * File mode bits of the files, e.g. 0o644 (420).
   * @default 0o644
   */
  readonly defaultMode?: number;
  /**
   * Start the pod even when the ConfigMap does not exist.
   * @default false
   */
  readonly optional?: boolean;
}

/** A Secret's keys as files. The kubelet reads the Secret, never the operator. */
export interface SecretVolumeSource {
  /** Name of the Secret, in the app's namespace. */
  readonly secretName: string;
  /**
   * Only these keys, at these paths.
   * @default every key, as a file of its name
   */
  readonly items?: KeyToPath[];
  /**
   * File mode bits of the files, e.g. 0o400 (256).
   * @default 0o644
   */
  readonly defaultMode?: number;
  /**
   * Start the pod even when the Secret does not exist.
   * @default false
   */
  readonly optional?: boolean;
}

/** A PersistentVolumeClaim mounted into the pod. */
export interface PersistentVolumeClaimVolumeSource {
  /** Name of the claim, in the app's namespace. */
  readonly claimName: string;
  /**
   * Mount it read-only.
   * @default false
   */
  readonly readOnly?: boolean;
}

/**
 * A volume of the pod, as in the Kubernetes pod spec: a name and exactly one source. Node paths
 * (`hostPath`) are deliberately not offered.
 */
export interface Volume {
  /** Name of the volume, a DNS label; volumeMounts refer to it. */
  readonly name: string;
  /**
   * A scratch directory.
   * @default none
   */
  readonly emptyDir?: EmptyDirVolumeSource;
  /**
   * A ConfigMap's keys as files.
   * @default none
   */
  readonly configMap?: ConfigMapVolumeSource;
  /**
   * A Secret's keys as files.
   * @default none
   */
  readonly secret?: SecretVolumeSource;
  /**
   * A PersistentVolumeClaim.
   * @default none
   */
  readonly persistentVolumeClaim?: PersistentVolumeClaimVolumeSource;
}

/** Where a volume appears in the container, as in the Kubernetes container `volumeMounts`. */
export interface VolumeMount {
  /** Name of the volume (one of `volumes`). */
  readonly name: string;
  /** Absolute path in the container. */
  readonly mountPath: string;
  /**
   * Path inside the volume to mount instead of its root.
   * @default "": the volume's root
   */
  readonly subPath?: string;
  /**
   * Mount it read-only.
   * @default false
   */
  readonly readOnly?: boolean;
}

/** A reference to an object in the same namespace by name, e.g. an image pull Secret. */
export interface LocalObjectReference {
  /** Name of the object. */
  readonly name: string;
}
