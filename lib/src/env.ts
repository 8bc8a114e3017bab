/** A key of a ConfigMap, as in the Kubernetes `configMapKeyRef`. */
export interface ConfigMapKeySelector {
  /** Name of the ConfigMap, in the app's namespace. */
  readonly name: string;
  /** Key in the ConfigMap's data. */
  readonly key: string;
  /**
   * Start the container even when the ConfigMap or the key does not exist.
   * @default false: the pod waits for them
   */
  readonly optional?: boolean;
}

/** A key of a Secret, as in the Kubernetes `secretKeyRef`. The value is read by the kubelet, never by the operator. */
export interface SecretKeySelector {
  /** Name of the Secret, in the app's namespace. */
  readonly name: string;
  /** Key in the Secret's data. */
  readonly key: string;
  /**
   * Start the container even when the Secret or the key does not exist.
   * @default false: the pod waits for them
   */
  readonly optional?: boolean;
}

/** A field of the pod (Downward API), as in the Kubernetes `fieldRef`. */
export interface ObjectFieldSelector {
  /** Path of the field, e.g. `metadata.name`, `metadata.namespace`, `status.podIP`, `spec.nodeName`. */
  readonly fieldPath: string;
  /**
   * API version the path is written in.
   * @default "v1"
   */
  readonly apiVersion?: string;
}

/** Where an environment variable's value comes from; give exactly one. */
export interface EnvVarSource {
  /**
   * A key of a ConfigMap.
   * @default none
   */
  readonly configMapKeyRef?: ConfigMapKeySelector;
  /**
   * A key of a Secret.
   * @default none
   */
  readonly secretKeyRef?: SecretKeySelector;
  /**
   * A field of the pod (Downward API).
   * @default none
   */
  readonly fieldRef?: ObjectFieldSelector;
}

/** An environment variable of the container, as in the Kubernetes container `env`. Give `value` or `valueFrom`. */
export interface EnvVar {
  /** Name of the variable. */
  readonly name: string;
  /**
   * Plain value; `$(OTHER)` expands an earlier variable, as in Kubernetes.
   * @default "" unless valueFrom is set
   */
  readonly value?: string;
  /**
   * Value read from a ConfigMap, a Secret or the pod.
   * @default none
   */
  readonly valueFrom?: EnvVarSource;
}

/** A ConfigMap whose every key becomes a variable. */
export interface ConfigMapEnvSource {
  /** Name of the ConfigMap, in the app's namespace. */
  readonly name: string;
  /**
   * Start the container even when the ConfigMap does not exist.
   * @default false
   */
  readonly optional?: boolean;
}

/** A Secret whose every key becomes a variable. */
export interface SecretEnvSource {
  /** Name of the Secret, in the app's namespace. */
  readonly name: string;
  /**
   * Start the container even when the Secret does not exist.
   * @default false
   */
  readonly optional?: boolean;
}

/** Variables from every key of a ConfigMap or a Secret, as in the Kubernetes container `envFrom`. Give one source. */
export interface EnvFromSource {
  /**
   * Prefix added to every variable name.
   * @default none
   */
  readonly prefix?: string;
  /**
   * The ConfigMap.
   * @default none
   */
  readonly configMapRef?: ConfigMapEnvSource;
  /**
   * The Secret.
   * @default none
   */
  readonly secretRef?: SecretEnvSource;
}
