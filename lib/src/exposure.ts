/** How the app's Service is reached. */
export enum ServiceType {
  /** A port on every node (30000-32767), and a cluster IP. */
  NODE_PORT = 'NodePort',
  /** A cluster IP only: reached from inside the cluster. */
  CLUSTER_IP = 'ClusterIP',
}

/**
 * A PodDisruptionBudget for the app's pods: how many a voluntary disruption (a node drain) may take
 * at once. Give at most one of the two; each is a number (`"1"`) or a percentage (`"50%"`).
 */
export interface PodDisruptionBudgetOptions {
  /**
   * Pods that must stay available.
   * @default none (maxUnavailable applies)
   */
  readonly minAvailable?: string;
  /**
   * Pods that may be unavailable.
   * @default "1" when minAvailable is not set
   */
  readonly maxUnavailable?: string;
}

/** A label selector by exact labels, as in the Kubernetes `matchLabels`. */
export interface LabelSelector {
  /**
   * Labels an object must all carry; empty selects every object.
   * @default {} (every object)
   */
  readonly matchLabels?: { [key: string]: string };
}

/** An IP range, as in the Kubernetes NetworkPolicy `ipBlock`. */
export interface IpBlock {
  /** The range, e.g. `10.0.0.0/16`. */
  readonly cidr: string;
  /**
   * Ranges inside it that are left out.
   * @default none
   */
  readonly except?: string[];
}

/**
 * Who may reach the app's port, as a Kubernetes NetworkPolicy peer: pods (in the app's namespace, or
 * in the namespaces selected), namespaces, or an IP range. Give podSelector and/or namespaceSelector, or ipBlock.
 */
export interface NetworkPolicyPeer {
  /**
   * Pods with these labels.
   * @default none: every pod of the selected namespaces
   */
  readonly podSelector?: LabelSelector;
  /**
   * Namespaces with these labels.
   * @default none: the app's namespace
   */
  readonly namespaceSelector?: LabelSelector;
  /**
   * An IP range (e.g. the nodes', for NodePort traffic that kube-proxy forwards from a node address).
   * @default none
   */
  readonly ipBlock?: IpBlock;
}

/** A NetworkPolicy that lets only the given peers reach the app's port; all other ingress to its pods is refused. */
export interface NetworkPolicyOptions {
  /** Peers that may reach the port; an empty list lets none in. */
  readonly from: NetworkPolicyPeer[];
}

/** What the scheduler does with a pod that a topology spread constraint cannot place. */
export enum WhenUnsatisfiable {
  /** Place it anyway, preferring the domains that reduce the skew. */
  SCHEDULE_ANYWAY = 'ScheduleAnyway',
  /** Leave it pending. */
  DO_NOT_SCHEDULE = 'DoNotSchedule',
}

/**
 * Spread the app's pods evenly over the domains of a node label (Kubernetes
 * `topologySpreadConstraints`); the constraint counts the app's own pods (its selector labels).
 */
export interface TopologySpreadConstraint {
  /** Node label whose values are the domains, e.g. `topology.kubernetes.io/zone` or `kubernetes.io/hostname`. */
  readonly topologyKey: string;
  /**
   * Most the number of the app's pods may differ between two domains.
   * @default 1
   */
  readonly maxSkew?: number;
  /**
   * What to do with a pod that would break the constraint.
   * @default WhenUnsatisfiable.SCHEDULE_ANYWAY
   */
  readonly whenUnsatisfiable?: WhenUnsatisfiable;
  /**
   * Fewest eligible domains (only with WhenUnsatisfiable.DO_NOT_SCHEDULE).
   * @default - none: the domains that have nodes
   */
  readonly minDomains?: number;
}

/** Keep the app's pods apart: no two (or preferably no two) on one node or in one domain of a node label. */
export interface PodAntiAffinity {
  /**
   * Node label whose domains hold at most one of the app's pods.
   * @default "kubernetes.io/hostname" (one pod a node)
   */
  readonly topologyKey?: string;
  /**
   * A hard rule (`requiredDuringScheduling...`): a pod with no free domain stays pending. Otherwise a
   * preference of weight 100 that the scheduler breaks when it must.
   * @default false
   */
  readonly required?: boolean;
}
