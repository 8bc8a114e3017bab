import { AppKindOverrides } from './overrides';
import { RolloutOptions } from './rollout';
import { AppSettings } from './settings';

/** One version of an app kind's API (`AppKind.versions`). */
export interface AppKindVersion {
  /** Version name, e.g. `v1`. */
  readonly name: string;
  /**
   * Whether the API server serves this version.
   * @default true
   */
  readonly served?: boolean;
  /**
   * Whether CRs are stored at this version; exactly one version of the list is.
   * @default false
   */
  readonly storage?: boolean;
}

/**
 * An app kind: a custom resource kind whose every object runs one container image behind a NodePort
 * Service. This is the whole of what a user declares; everything else is derived.
 */
export interface AppKind extends AppSettings {
  /** API group, a DNS subdomain, e.g. `swallowlab.com`. */
  readonly group: string;
  /**
   * API version, e.g. `v1alpha1`: the version the operator reads CRs at and names in its children's
   * owner references. With `versions`, it must be one of them and served.
   */
  readonly version: string;
  /**
   * Every version of the kind's API, all with the same schema (conversion `None`): several may be
   * served, exactly one is the storage version. Changing the storage version moves the stored CRs to it
   * (a storage migration); a version still in the CRD's `status.storedVersions` cannot be removed or
   * stop being served.
   * @default only `version`, served and stored
   */
  readonly versions?: AppKindVersion[];
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
   * GID the container runs as. CRs cannot change it.
   * @default the image's group
   */
  readonly runAsGroup?: number;
  /**
   * Mount the container's root filesystem read-only (hardening; no Pod Security level depends on it).
   * CRs cannot change it.
   * @default false
   */
  readonly readOnlyRootFilesystem?: boolean;
  /**
   * What CRs may set beside size, image, port and nodePort, and within which limits.
   * @default none
   */
  readonly overrides?: AppKindOverrides;
  /**
   * How a change of the kind's settings reaches its running apps: in waves of at most
   * `maxConcurrent`, a failing wave stopping the rollout (see RolloutOptions).
   * @default - waves of 10% of the kind's apps (at least 1), 300 s for each app to become Ready
   */
  readonly rollout?: RolloutOptions;
}
