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
   * Largest `spec.size` the API server accepts.
   * @default 100
   */
  readonly maxSize?: number;
}
