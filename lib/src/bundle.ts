import { ApiObject, Chart, JsonPatch, Yaml } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { addChildAdmissionPolicies } from './admission-policy';
import { AppKind } from './appkind';
import { AppKindApiCrd } from './appkind-api';
import { AppKindCrd } from './crd';
import { addCrdAdmissionPolicies, builtInGroupProblem } from './crd-policy';
import { labelSelectorProblem, servesNoAppKinds } from './label-selector';
import { OPERATOR_SETTINGS as SETTINGS, SettingRow } from './operator-settings';
import { ImagePullPolicy, ResourceList, ResourceRequirements } from './resources';

/** APPKIND_LOG_LEVEL of the operator. */
export enum LogLevel {
  /** Every request, cache event and reconcile step. */
  DEBUG = 'debug',
  /** Changes made and lifecycle events. */
  INFO = 'info',
  /** Problems the operator recovers from. */
  WARN = 'warn',
  /** Failures only. */
  ERROR = 'error',
}

/** Default operator image: the walkthrough's OPERATOR_IMAGE, built from this repository's Dockerfile. */
const DEFAULT_OPERATOR_IMAGE = 'appkind-operator:0.1.0';
/** Default namespace of the operator. */
const DEFAULT_OPERATOR_NAMESPACE = 'appkind-system';
/** Default name of the operator's ServiceAccount, Deployment, RBAC objects and Lease. */
const DEFAULT_OPERATOR_NAME = 'appkind-operator';
/** The user the image runs as (distroless "nonroot"); the Dockerfile uses the same. */
const OPERATOR_UID = 65532;
/** Container ports of the operator: /metrics over HTTPS (kubebuilder's 8443), the probes over plain HTTP. */
const METRICS_PORT = SETTINGS.metricsPort.default;
const HEALTH_PORT = SETTINGS.healthPort.default;
/** Where the metrics certificate Secret is mounted (APPKIND_METRICS_CERT_DIR), when one is given: beside the kinds ConfigMap's folder, not inside it (a mount inside a ConfigMap volume makes runc create its mount point in that volume). */
const METRICS_CERT_DIR = '/etc/appkind-metrics-cert';
/** Where the kinds ConfigMap is mounted, and its one key: the operator reads APPKIND_CONFIG there and again at every change. */
const KINDS_DIR = '/etc/appkind';
const KINDS_KEY = 'kinds.yaml';

/** Props of an {@link OperatorBundle}. */
export interface OperatorBundleProps {
  /** App kinds the operator serves; one CRD is rendered for each. */
  readonly kinds: AppKind[];
  /**
   * Operator container image (the walkthrough's OPERATOR_IMAGE).
   * @default "appkind-operator:0.1.0"
   */
  readonly image?: string;
  /**
   * When the kubelet pulls the image.
   * @default ImagePullPolicy.IF_NOT_PRESENT
   */
  readonly imagePullPolicy?: ImagePullPolicy;
  /**
   * Namespace the operator runs in (also where its Lease lives).
   * @default "appkind-system"
   */
  readonly namespace?: string;
  /**
   * Render the Namespace object itself, enforcing the "restricted" Pod Security Standard.
   * @default true
   */
  readonly createNamespace?: boolean;
  /**
   * Name of the ServiceAccount, Deployment, Roles/ClusterRole, bindings and Lease.
   * @default "appkind-operator"
   */
  readonly name?: string;
  /**
   * Render the CRDs of the kinds and of the AppKind API (leave out when they are installed separately).
   * @default true
   */
  readonly crds?: boolean;
  /**
   * Render the AppKind API: its CRD (`appkinds.appkind.io`) and the ClusterRole `<name>-appkinds`
   * (bound to the operator) to read AppKinds, write their status and finalizer, and make, change and
   * delete the CRDs they declare, so that `kubectl apply` of an AppKind serves its kind (the
   * ClusterRole not with appKindSelector `none`).
   * @default true
   */
  readonly appKindApi?: boolean;
  /**
   * Namespaces whose CRs are reconciled; empty means all, with a ClusterRole instead of Roles.
   * @default [] (all)
   */
  readonly watchNamespaces?: string[];
  /**
   * Operator pods; leader election is always on, so extra replicas are hot standbys.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * CPU and memory requests and limits. The default memory limit covers about 1000 CRs (docs/benchmark.md
   * has the operator's memory against the number of CRs); raise it for more.
   * @default requests 50m/128Mi, limits 500m/512Mi
   */
  readonly resources?: ResourceRequirements;
  /**
   * Parallel reconciles (APPKIND_WORKERS).
   * @default 8
   */
  readonly workers?: number;
  /**
   * APPKIND_LOG_LEVEL of the operator.
   * @default LogLevel.INFO
   */
  readonly logLevel?: LogLevel;
  /**
   * APPKIND_LEASE_DURATION_SECONDS: how long a standby waits for a silent leader.
   * @default 15
   */
  readonly leaseDurationSeconds?: number;
  /**
   * APPKIND_RENEW_DEADLINE_SECONDS: the leader steps down when it could not renew for this long.
   * @default 10
   */
  readonly renewDeadlineSeconds?: number;
  /**
   * APPKIND_RETRY_PERIOD_SECONDS: time between lease attempts.
   * @default 2
   */
  readonly retryPeriodSeconds?: number;
  /**
   * APPKIND_SHUTDOWN_GRACE_SECONDS: longest wait for in-flight reconciles on SIGTERM.
   * @default 20
   */
  readonly shutdownGraceSeconds?: number;
  /**
   * Render, for each kind, the ClusterRoles `<plural>.<group>-view` and `<plural>.<group>-edit`, labelled
   * to aggregate into the built-in `view`, `edit` and `admin` roles, so admins grant CR authoring as usual.
   * @default true
   */
  readonly authoringRoles?: boolean;
  /**
   * Render ValidatingAdmissionPolicies and their bindings (`<name>-deployments`, `<name>-services`,
   * Kubernetes 1.30 or later) that refuse, for writes by the operator's ServiceAccount only, any
   * Deployment or Service the construct could not have rendered for a CR of a served kind: no
   * controller reference to such a CR, privileged or privilege-escalating containers, added
   * capabilities, host ports, host namespaces, hostPath, volumes, Secrets, a ServiceAccount, a
   * mounted token or an image the kind does not render. Whoever holds the ServiceAccount can then
   * run nothing but the kinds' apps.
   * @default true
   */
  readonly admissionPolicy?: boolean;
  /**
   * API groups whose kinds AppKind objects may define: the operator creates, updates and deletes CRDs
   * (labelled `appkind.io/appkind`) in these groups only, reads their CRs and writes their status, and
   * the `<group>-view`/`-edit` ClusterRoles let namespace users author them. Never a Kubernetes group
   * (`*.k8s.io`, `*.kubernetes.io`) or `appkind.io`; use groups of your own, dedicated to AppKinds (the
   * operator's rules cover every resource of a listed group). With `admissionPolicy`, the policy
   * `<name>-crds` refuses any other CRD write of the operator's ServiceAccount.
   * @default [] - AppKinds may use no group: the operator makes no CRD at all.
   */
  readonly kindGroups?: string[];
  /**
   * Which AppKind objects this operator serves (APPKIND_APPKIND_SELECTOR), a Kubernetes label selector such as `team=payments`.
   *
   * Two operators in one cluster (two teams) each serve their own: the operator lists and watches only
   * the AppKinds it selects and never writes to the others. `none` serves no AppKind (the kinds file
   * only) and leaves out the ClusterRole `<name>-appkinds` (the AppKind CRD stays, for the operators
   * that serve them). An AppKind that stops matching is no longer served, and its CRD, CRs and finalizer stay
   * (docs/configuration.md).
   * @default "" - every AppKind in the cluster
   */
  readonly appKindSelector?: string;
  /**
   * A `kubernetes.io/tls` Secret in the operator's namespace (e.g. made by cert-manager for the
   * Service `<name>-metrics`) whose `tls.crt` and `tls.key` serve /metrics; the operator reads them
   * again when the Secret changes (APPKIND_METRICS_CERT_DIR).
   * @default none: the operator makes a self-signed certificate at start (scrapers skip verification)
   */
  readonly metricsCertSecret?: string;
  /**
   * Render a NetworkPolicy that admits to the operator pods only the metrics port (where each scrape
   * is authenticated and authorized); the kubelet's probes come from the node, which NetworkPolicies
   * always admit. Egress is left open (the operator talks to the API server only).
   * @default true
   */
  readonly networkPolicy?: boolean;
}

/** RBAC rule: exact verbs, never `*`. */
type Rule = k8s.PolicyRule;

// Exactly what the reconciler sends: list/watch (caches), get (a same-named object it does not cache),
// patch + create (server-side apply that creates), delete (prune). It never sends update.
const CHILD_VERBS = ['get', 'list', 'watch', 'create', 'patch', 'delete'];

/** Rules the reconciler needs wherever it reconciles CRs (cluster-wide or in one namespace). */
function reconcileRules(kinds: AppKind[]): Rule[] {
  const byGroup = new Map<string, string[]>();
  for (const k of kinds) byGroup.set(k.group, [...(byGroup.get(k.group) ?? []), k.plural]);
  const crRules = [...byGroup.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([group, plurals]) => {
      const resources = [...new Set(plurals)].sort();
      return [
        // CRs are only read; the operator writes nothing but their status (a merge patch).
        { apiGroups: [group], resources, verbs: ['get', 'list', 'watch'] },
        { apiGroups: [group], resources: resources.map((p) => `${p}/status`), verbs: ['patch'] },
        // Children carry ownerReferences with blockOwnerDeletion; where the OwnerReferencesPermissionEnforcement
        // admission plugin runs (OpenShift, hardened clusters) that needs update on the owner's finalizers.
        { apiGroups: [group], resources: resources.map((p) => `${p}/finalizers`), verbs: ['update'] },
      ];
    });
  return [
    ...crRules,
    { apiGroups: ['apps'], resources: ['deployments'], verbs: CHILD_VERBS },
    { apiGroups: [''], resources: ['services'], verbs: CHILD_VERBS },
    // Rendered only for kinds that ask for them (podDisruptionBudget, networkPolicy); cached and pruned as the others.
    { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: CHILD_VERBS },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: CHILD_VERBS },
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
    // Status lists only the pods of ReplicaSets the CR's own Deployment controls.
    { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['list', 'watch'] },
    // core/v1 Events: a create per new reason, a patch raising its count (aggregated as client-go does).
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  ];
}

/**
 * Rules of the AppKind source, cluster-wide whatever the watched namespaces (AppKinds and CRDs are
 * cluster-scoped): read AppKinds, set their finalizer (a patch of the object) and status. Its Events go
 * to the namespace "default", as every cluster-scoped object's. The CRDs they declare: crdRules.
 */
const APPKIND_API_RULES: Rule[] = [
  { apiGroups: [AppKindApiCrd.GROUP], resources: [AppKindApiCrd.PLURAL], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [AppKindApiCrd.GROUP], resources: [`${AppKindApiCrd.PLURAL}/status`], verbs: ['patch'] },
  { apiGroups: [AppKindApiCrd.GROUP], resources: [`${AppKindApiCrd.PLURAL}/finalizers`], verbs: ['update'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
];
// CRDs it made for AppKinds: created and changed with server-side apply (create + patch), status
// (storedVersions) updated, deleted for an AppKind deleted with deletionPolicy Delete. Without groups, read only.
function crdRules(kindGroups: string[]): Rule[] {
  const crds = { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'] };
  if (kindGroups.length === 0) return [{ ...crds, verbs: ['get', 'list', 'watch'] }];
  return [
    { ...crds, verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'] },
    { ...crds, resources: ['customresourcedefinitions/status'], verbs: ['get', 'patch', 'update'] },
  ];
}

/**
 * Rules on the CRs of kinds served from AppKinds: the kinds are not known at install, so every
 * resource of the allowed groups, as reconcileRules grants a listed kind's (read, status, finalizers),
 * and update for storage migrations.
 */
function kindGroupRules(kindGroups: string[]): Rule[] {
  if (kindGroups.length === 0) return [];
  const apiGroups = [...kindGroups].sort();
  return [
    // update: a storage migration writes each CR back unchanged at the new storage version.
    { apiGroups, resources: ['*'], verbs: ['get', 'list', 'watch', 'update'] },
    { apiGroups, resources: ['*/status'], verbs: ['patch'] },
    { apiGroups, resources: ['*/finalizers'], verbs: ['update'] },
  ];
}

/** Label keys by which the built-in `view`, `edit` and `admin` ClusterRoles aggregate other ClusterRoles. */
const AGGREGATE_TO = (role: 'view' | 'edit' | 'admin') => `rbac.authorization.k8s.io/aggregate-to-${role}`;

/**
 * Rules of a kind's `-view` and `-edit` ClusterRoles, as Kubernetes grants its own kinds: view reads CRs
 * and their status and scale; edit adds writing CRs and scaling them, never writing their status (the
 * operator's). Neither reaches the Deployments, Services or pods the operator makes.
 */
function authoringRules(group: string, plural: string): { view: Rule[]; edit: Rule[] } {
  const apiGroups = [group];
  return {
    view: [{ apiGroups, resources: [plural, `${plural}/status`, `${plural}/scale`], verbs: ['get', 'list', 'watch'] }],
    edit: [
      { apiGroups, resources: [plural], verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
      { apiGroups, resources: [`${plural}/scale`], verbs: ['update', 'patch'] },
    ],
  };
}

/** Rules for leader election on the one Lease: create cannot be limited by name, get/update can. */
function leaseRules(leaseName: string): Rule[] {
  return [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [leaseName], verbs: ['get', 'update'] },
  ];
}

/**
 * Rules for the metrics endpoint's reviews (controller-runtime's filters.WithAuthenticationAndAuthorization):
 * each scrape's token is checked with a TokenReview and its user with a SubjectAccessReview. Both
 * are cluster-scoped, so even a namespace-scoped install needs this ClusterRole; it grants nothing else.
 */
const METRICS_AUTH_RULES: Rule[] = [
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/** What a scraper (Prometheus' ServiceAccount) is bound to: reading /metrics, nothing else. */
const METRICS_READER_RULES: Rule[] = [{ nonResourceUrLs: ['/metrics'], verbs: ['get'] }];

/** cdk8s gives every object its chart's namespace; a cluster-scoped object must not carry one. */
function clusterScoped<T extends ApiObject>(obj: T): T {
  if (Chart.of(obj).namespace) obj.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
  return obj;
}

function quantities(list: ResourceList | undefined): { [name: string]: k8s.Quantity } | undefined {
  if (!list) return undefined;
  const out: { [name: string]: k8s.Quantity } = {};
  if (list.cpu) out.cpu = k8s.Quantity.fromString(list.cpu);
  if (list.memory) out.memory = k8s.Quantity.fromString(list.memory);
  return out;
}

const shutdownGraceSeconds = (props: OperatorBundleProps) => props.shutdownGraceSeconds ?? SETTINGS.shutdownGraceSeconds.default;

/**
 * Everything a cluster admin applies to run the operator in-cluster: the CRDs, an optional
 * Namespace, a ServiceAccount, least-privilege RBAC (a ClusterRole when watching all namespaces,
 * a Role per namespace otherwise, and a Role for the Lease) and the operator Deployment with
 * probes, resources, a restrictive security context and the same env settings as local runs.
 * Leader election is always on: even one replica overlaps with its successor during a rolling update.
 *
 * @example
 * import { App, Chart } from 'cdk8s';
 * import { OperatorBundle } from 'cdk8s-appkind';
 *
 * const app = new App();
 * // `kubectl apply -f` the synthesized file installs the operator serving the kind.
 * new OperatorBundle(new Chart(app, 'appkind-operator'), 'operator', {
 *   image: 'registry.example.com/appkind-operator:0.1.0',
 *   kinds: [{
 *     group: 'maho.takara.org', version: 'v1alpha1', kind: 'Takara', plural: 'takaras',
 *     image: 'memcached:1.6-alpine', port: 11211, appName: 'takara', runAsNonRoot: true, runAsUser: 11211,
 *   }],
 * });
 * app.synth();
 */
export class OperatorBundle extends Construct {
  /** Namespace the operator runs in. */
  public readonly namespace: string;
  /** Name shared by the ServiceAccount, Deployment, RBAC objects and Lease. */
  public readonly name: string;
  /** The operator Deployment. */
  public readonly deployment: k8s.KubeDeployment;
  /**
   * The ConfigMap `<name>-kinds` holding the kinds (key `kinds.yaml`, the APPKIND_CONFIG file format),
   * mounted into the operator: an edit is served without a restart, a bad one is refused with an Event
   * on it and the kinds before it stay served. A new kind's CRD and RBAC are installed separately.
   */
  public readonly kindsConfigMap: k8s.KubeConfigMap;
  /** The operator's ServiceAccount. */
  public readonly serviceAccount: k8s.KubeServiceAccount;
  /** Labels selecting the operator pods. */
  public readonly selectorLabels: { [key: string]: string };
  /** The Service `<name>-metrics` (ClusterIP, port `https` 8443) scrapers reach /metrics through. */
  public readonly metricsService: k8s.KubeService;

  constructor(scope: Construct, id: string, props: OperatorBundleProps) {
    super(scope, id);
    if (props.kinds.length === 0) throw new Error('OperatorBundle: kinds is empty; give at least one app kind');
    const kindGroups = [...new Set(props.kindGroups ?? [])];
    for (const group of kindGroups) {
      const problem = builtInGroupProblem(group);
      if (problem) throw new Error(`OperatorBundle: kindGroups: ${problem}; list API groups of your own (e.g. apps.example.com)`);
    }
    const selectorProblem = servesNoAppKinds(props.appKindSelector) ? undefined : labelSelectorProblem(props.appKindSelector ?? '');
    if (selectorProblem) {
      throw new Error(`OperatorBundle: appKindSelector "${props.appKindSelector}" is not a label selector: ${selectorProblem}; write one such as team=payments, or none to serve no AppKind`);
    }
    this.namespace = props.namespace ?? DEFAULT_OPERATOR_NAMESPACE;
    this.name = props.name ?? DEFAULT_OPERATOR_NAME;
    this.selectorLabels = { 'app.kubernetes.io/name': this.name, 'app.kubernetes.io/component': 'operator' };

    if ((props.appKindApi ?? true) && (props.crds ?? true)) new AppKindApiCrd(this, 'AppKindApi');
    if (props.crds ?? true) for (const appKind of props.kinds) clusterScoped(new AppKindCrd(this, AppKindCrd.nameOf(appKind), { appKind }).crd);
    if (props.createNamespace ?? true) {
      // The operator pod meets the "restricted" Pod Security Standard; enforcing it keeps it that way.
      const labels = { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' };
      clusterScoped(new k8s.KubeNamespace(this, 'Namespace', { metadata: { name: this.namespace, labels } }));
    }
    this.serviceAccount = new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata: this.meta() });
    this.kindsConfigMap = new k8s.KubeConfigMap(this, 'Kinds', {
      metadata: this.meta(this.namespace, `${this.name}-kinds`),
      data: { [KINDS_KEY]: Yaml.stringify({ kinds: props.kinds }) },
    });
    this.addRbac(props, kindGroups);
    if (props.authoringRoles ?? true) {
      for (const appKind of props.kinds) this.addAuthoringRoles(AppKindCrd.nameOf(appKind), authoringRules(appKind.group, appKind.plural));
      // Kinds of AppKinds are not known at install: every resource of the group (its CRDs are all the operator's).
      for (const group of kindGroups) this.addAuthoringRoles(group, authoringRules(group, '*'));
    }
    if (props.admissionPolicy ?? true) {
      const labels = this.meta().labels!;
      const username = `system:serviceaccount:${this.namespace}:${this.name}`;
      for (const obj of addChildAdmissionPolicies(this, this.name, labels, username, props.kinds, kindGroups)) clusterScoped(obj);
      for (const obj of addCrdAdmissionPolicies(this, this.name, labels, username, kindGroups)) clusterScoped(obj);
    }
    this.deployment = new k8s.KubeDeployment(this, 'Deployment', { metadata: this.meta(), spec: this.deploymentSpec(props) });
    this.metricsService = new k8s.KubeService(this, 'MetricsService', {
      metadata: this.meta(this.namespace, `${this.name}-metrics`),
      spec: {
        type: 'ClusterIP',
        selector: this.selectorLabels,
        ports: [{ name: 'https', port: METRICS_PORT, targetPort: k8s.IntOrString.fromString('metrics'), protocol: 'TCP' }],
      },
    });
    if (props.networkPolicy ?? true) {
      new k8s.KubeNetworkPolicy(this, 'NetworkPolicy', {
        metadata: this.meta(),
        spec: {
          podSelector: { matchLabels: this.selectorLabels },
          policyTypes: ['Ingress'],
          ingress: [{ ports: [{ port: k8s.IntOrString.fromNumber(METRICS_PORT), protocol: 'TCP' }] }],
        },
      });
    }
  }

  private meta(namespace = this.namespace, name = this.name): k8s.ObjectMeta {
    return { name, namespace, labels: { ...this.selectorLabels, 'app.kubernetes.io/part-of': 'cdk8s-appkind' } };
  }

  private addRbac(props: OperatorBundleProps, kindGroups: string[]): void {
    const subjects: k8s.Subject[] = [{ kind: 'ServiceAccount', name: this.name, namespace: this.namespace }];
    const rules = [...reconcileRules(props.kinds), ...kindGroupRules(kindGroups)];
    const watch = [...new Set(props.watchNamespaces ?? [])];
    if (watch.length === 0) {
      const { labels } = this.meta();
      clusterScoped(new k8s.KubeClusterRole(this, 'ClusterRole', { metadata: { name: this.name, labels }, rules }));
      clusterScoped(
        new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
          metadata: { name: this.name, labels },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: this.name },
          subjects,
        }),
      );
    }
    for (const ns of watch) this.addRole(`Role-${ns}`, this.meta(ns), rules, subjects);
    this.addRole('LeaderElectionRole', this.meta(this.namespace, `${this.name}-leader-election`), leaseRules(this.name), subjects);

    const { labels } = this.meta();
    // A ClusterRole bound to the operator, for what is cluster-scoped whatever the watched namespaces.
    const boundClusterRole = (id: string, name: string, roleRules: Rule[]) => {
      clusterScoped(new k8s.KubeClusterRole(this, `${id}Role`, { metadata: { name, labels }, rules: roleRules }));
      clusterScoped(
        new k8s.KubeClusterRoleBinding(this, `${id}RoleBinding`, {
          metadata: { name, labels },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
          subjects,
        }),
      );
    };
    // CRDs are cluster-scoped: a ClusterRole even when the operator watches some namespaces.
    boundClusterRole('Crd', `${this.name}-crds`, crdRules(kindGroups));
    boundClusterRole('MetricsAuth', `${this.name}-metrics-auth`, METRICS_AUTH_RULES);
    // An operator that serves no AppKind (appKindSelector none) never reads or writes one: no rights to.
    if ((props.appKindApi ?? true) && !servesNoAppKinds(props.appKindSelector)) {
      boundClusterRole('AppKinds', `${this.name}-appkinds`, APPKIND_API_RULES);
    }
    // Bound by whoever scrapes (no binding here): `kubectl create clusterrolebinding ... --clusterrole=<name>-metrics-reader`.
    clusterScoped(
      new k8s.KubeClusterRole(this, 'MetricsReaderRole', { metadata: { name: `${this.name}-metrics-reader`, labels }, rules: METRICS_READER_RULES }),
    );
  }

  /** `<prefix>-view` aggregates into view, edit and admin; `<prefix>-edit` into edit and admin (edit includes view). */
  private addAuthoringRoles(prefix: string, rules: { view: Rule[]; edit: Rule[] }): void {
    const role = (suffix: 'view' | 'edit', aggregateTo: ('view' | 'edit' | 'admin')[]) => {
      const labels = { 'app.kubernetes.io/part-of': 'cdk8s-appkind', ...Object.fromEntries(aggregateTo.map((r) => [AGGREGATE_TO(r), 'true'])) };
      const name = `${prefix}-${suffix}`;
      clusterScoped(new k8s.KubeClusterRole(this, `ClusterRole-${name}`, { metadata: { name, labels }, rules: rules[suffix] }));
    };
    role('view', ['view', 'edit', 'admin']);
    role('edit', ['edit', 'admin']);
  }

  private addRole(id: string, metadata: k8s.ObjectMeta, rules: Rule[], subjects: k8s.Subject[]): void {
    new k8s.KubeRole(this, id, { metadata, rules });
    new k8s.KubeRoleBinding(this, `${id}Binding`, {
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: metadata.name! },
      subjects,
    });
  }

  /** Same variables and defaults as a local run (the table in operator-settings.ts), so one configuration story fits both. */
  private env(props: OperatorBundleProps): k8s.EnvVar[] {
    const fromField = (row: SettingRow, fieldPath: string): k8s.EnvVar => ({ name: row.env, valueFrom: { fieldRef: { fieldPath } } });
    const value = (row: SettingRow, v: string | number | boolean): k8s.EnvVar => ({ name: row.env, value: String(v) });
    return [
      value(SETTINGS.config, `${KINDS_DIR}/${KINDS_KEY}`),
      value(SETTINGS.configMap, this.kindsConfigMap.name),
      value(SETTINGS.namespaces, (props.watchNamespaces ?? []).join(',')),
      value(SETTINGS.kindGroups, [...new Set(props.kindGroups ?? [])].join(',')),
      // Only when set: an install that serves every AppKind keeps the env it always had.
      ...(props.appKindSelector?.trim() ? [value(SETTINGS.appKindSelector, props.appKindSelector.trim())] : []),
      value(SETTINGS.workers, props.workers ?? SETTINGS.workers.default),
      value(SETTINGS.logLevel, props.logLevel ?? SETTINGS.logLevel.default),
      value(SETTINGS.metricsPort, METRICS_PORT),
      ...(props.metricsCertSecret ? [value(SETTINGS.metricsCertDir, METRICS_CERT_DIR)] : []),
      value(SETTINGS.healthPort, HEALTH_PORT),
      value(SETTINGS.leaderElect, true),
      value(SETTINGS.leaseName, this.name),
      value(SETTINGS.leaseDurationSeconds, props.leaseDurationSeconds ?? SETTINGS.leaseDurationSeconds.default),
      value(SETTINGS.renewDeadlineSeconds, props.renewDeadlineSeconds ?? SETTINGS.renewDeadlineSeconds.default),
      value(SETTINGS.retryPeriodSeconds, props.retryPeriodSeconds ?? SETTINGS.retryPeriodSeconds.default),
      value(SETTINGS.shutdownGraceSeconds, shutdownGraceSeconds(props)),
      // The Lease lives in the pod's namespace (operator/settings.ts), which is where the lease Role grants access.
      fromField(SETTINGS.identity, 'metadata.name'),
      fromField(SETTINGS.podNamespace, 'metadata.namespace'),
    ];
  }

  private deploymentSpec(props: OperatorBundleProps): k8s.DeploymentSpec {
    const resources = props.resources ?? { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '500m', memory: '512Mi' } };
    const probe = (path: string, periodSeconds: number): k8s.Probe => ({
      httpGet: { path, port: k8s.IntOrString.fromString('health') },
      periodSeconds,
      timeoutSeconds: 2,
      failureThreshold: 3,
    });
    return {
      replicas: props.replicas ?? 1,
      selector: { matchLabels: this.selectorLabels },
      template: {
        metadata: { labels: this.meta().labels },
        spec: {
          serviceAccountName: this.serviceAccount.name,
          automountServiceAccountToken: true,
          // Longer than APPKIND_SHUTDOWN_GRACE_SECONDS so in-flight reconciles finish and the lease is released.
          terminationGracePeriodSeconds: shutdownGraceSeconds(props) + 10,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: OPERATOR_UID,
            runAsGroup: OPERATOR_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'operator',
              image: props.image ?? DEFAULT_OPERATOR_IMAGE,
              imagePullPolicy: props.imagePullPolicy ?? ImagePullPolicy.IF_NOT_PRESENT,
              command: ['node', 'build/operator/main.js'],
              env: this.env(props),
              ports: [
                { name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' },
                { name: 'health', containerPort: HEALTH_PORT, protocol: 'TCP' },
              ],
              livenessProbe: probe('/healthz', 10),
              readinessProbe: probe('/readyz', 5),
              resources: { requests: quantities(resources.requests), limits: quantities(resources.limits) },
              securityContext: {
                runAsNonRoot: true,
                runAsUser: OPERATOR_UID,
                runAsGroup: OPERATOR_UID,
                readOnlyRootFilesystem: true,
                allowPrivilegeEscalation: false,
                privileged: false,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              // The root filesystem is read-only; Node and its libraries may still want a scratch /tmp.
              volumeMounts: [
                { name: 'tmp', mountPath: '/tmp' },
                { name: 'kinds', mountPath: KINDS_DIR, readOnly: true },
                ...(props.metricsCertSecret ? [{ name: 'metrics-cert', mountPath: METRICS_CERT_DIR, readOnly: true }] : []),
              ],
            },
          ],
          volumes: [
            { name: 'tmp', emptyDir: { sizeLimit: k8s.Quantity.fromString('16Mi') } },
            { name: 'kinds', configMap: { name: this.kindsConfigMap.name } },
            ...(props.metricsCertSecret ? [{ name: 'metrics-cert', secret: { secretName: props.metricsCertSecret } }] : []),
          ],
        },
      },
    };
  }
}
