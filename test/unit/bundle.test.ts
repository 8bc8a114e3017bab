import { describe, expect, it } from '@jest/globals';
import { Chart, Testing } from 'cdk8s';
import { AppKind, LogLevel, OperatorBundle, OperatorBundleProps } from 'cdk8s-appkind';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kindsFromFile, SAMPLE_KIND } from 'appkind-operator/kinds';
import { DEFAULT_WORKERS } from '../../operator/settings.js';

const TAKARA: AppKind = {
  group: 'maho.takara.org',
  version: 'v1alpha1',
  kind: 'Takara',
  plural: 'takaras',
  image: 'memcached:1.6',
  port: 11211,
  appName: 'takara',
};

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: { apiGroups?: string[]; resources?: string[]; verbs: string[]; resourceNames?: string[]; nonResourceURLs?: string[] }[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
  spec?: {
    replicas?: number;
    selector?: { matchLabels: Record<string, string> };
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    [field: string]: unknown;
  };
}

interface Container {
  image: string;
  command: string[];
  env: { name: string; value?: string; valueFrom?: unknown }[];
  ports: unknown[];
  volumeMounts: unknown[];
  livenessProbe: { httpGet: unknown };
  readinessProbe: { httpGet: unknown };
  resources: unknown;
  securityContext: unknown;
}

interface PodSpec {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  securityContext: unknown;
  containers: Container[];
  volumes: unknown[];
}

function synth(props: Partial<OperatorBundleProps> = {}, chartNamespace?: string): Manifest[] {
  const chart = new Chart(Testing.app(), 'bundle', { namespace: chartNamespace });
  new OperatorBundle(chart, 'operator', { kinds: [SAMPLE_KIND, TAKARA], ...props });
  return Testing.synth(chart) as Manifest[];
}

const only = (objs: Manifest[], kind: string) => objs.filter((o) => o.kind === kind);
const one = (objs: Manifest[], kind: string) => {
  const found = only(objs, kind);
  expect(found).toHaveLength(1);
  return found[0]!;
};
const podSpec = (objs: Manifest[]): PodSpec => one(objs, 'Deployment').spec!.template!.spec;
const container = (objs: Manifest[]): Container => podSpec(objs).containers[0]!;
const envOf = (objs: Manifest[]): Record<string, unknown> => Object.fromEntries(container(objs).env.map((e) => [e.name, e.value ?? e.valueFrom]));

const RECONCILE_RULES = [
  { apiGroups: ['maho.takara.org'], resources: ['takaras'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['maho.takara.org'], resources: ['takaras/status'], verbs: ['patch'] },
  { apiGroups: ['maho.takara.org'], resources: ['takaras/finalizers'], verbs: ['update'] },
  { apiGroups: ['swallowlab.com'], resources: ['echoflasks'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['swallowlab.com'], resources: ['echoflasks/status'], verbs: ['patch'] },
  { apiGroups: ['swallowlab.com'], resources: ['echoflasks/finalizers'], verbs: ['update'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
  { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
];

const LEASE_RULES = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['appkind-operator'], verbs: ['get', 'update'] },
];

/** The operator's own ClusterRole(s), not the CR authoring roles the bundle renders for admins. */
const operatorClusterRoles = (objs: Manifest[]) => only(objs, 'ClusterRole').filter((r) => r.metadata.name === 'appkind-operator');
const named = (objs: Manifest[], kind: string, name: string) => only(objs, kind).find((o) => o.metadata.name === name);

/** What the metrics endpoint's reviews need (controller-runtime's WithAuthenticationAndAuthorization), and nothing else. */
const METRICS_AUTH_RULES = [
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

describe('OperatorBundle', () => {
  it('matches the snapshot of the default bundle (CRDs aside: lib/src/crd.ts has its own tests)', () => {
    expect(synth().filter((o) => o.kind !== 'CustomResourceDefinition')).toMatchSnapshot();
  });

  it('keeps a chart namespace off cluster-scoped objects and its own namespace on the rest', () => {
    const objs = synth({}, 'elsewhere');
    const clusterScoped = ['CustomResourceDefinition', 'Namespace', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
    for (const o of objs) {
      if (clusterScoped.includes(o.kind)) expect(o.metadata.namespace).toBeUndefined();
      else expect(o.metadata.namespace).toBe('appkind-system');
    }
  });

  it('renders one CRD per kind, the namespace, and the service account', () => {
    const objs = synth();
    // The kinds' CRDs and the AppKind API's.
    expect(only(objs, 'CustomResourceDefinition').map((c) => c.metadata.name).sort()).toEqual(['appkinds.appkind.io', 'echoflasks.swallowlab.com', 'takaras.maho.takara.org']);
    expect(one(objs, 'Namespace').metadata).toEqual({
      name: 'appkind-system',
      labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' },
    });
    expect(one(objs, 'ServiceAccount').metadata).toMatchObject({ name: 'appkind-operator', namespace: 'appkind-system' });
    const noExtras = synth({ createNamespace: false, crds: false });
    expect(only(noExtras, 'Namespace')).toHaveLength(0);
    expect(only(noExtras, 'CustomResourceDefinition')).toHaveLength(0);
  });

  it('grants exactly the verbs the reconciler uses, cluster-wide when watching all namespaces', () => {
    const objs = synth();
    const clusterRole = operatorClusterRoles(objs)[0]!;
    expect(operatorClusterRoles(objs)).toHaveLength(1);
    expect(clusterRole.metadata.namespace).toBeUndefined();
    expect(clusterRole.rules).toEqual(RECONCILE_RULES);
    expect(named(objs, 'ClusterRoleBinding', 'appkind-operator')).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: 'appkind-operator' },
      subjects: [{ kind: 'ServiceAccount', name: 'appkind-operator', namespace: 'appkind-system' }],
    });
    // The only Role is the lease Role, in the operator's namespace.
    const role = one(objs, 'Role');
    expect(role.metadata).toMatchObject({ name: 'appkind-operator-leader-election', namespace: 'appkind-system' });
    expect(role.rules).toEqual(LEASE_RULES);
    expect(one(objs, 'RoleBinding')).toMatchObject({ metadata: { namespace: 'appkind-system' }, roleRef: { kind: 'Role', name: 'appkind-operator-leader-election' } });
  });

  it('never grants a wildcard, secrets, or anything beyond the listed resources', () => {
    for (const objs of [synth(), synth({ watchNamespaces: ['team-a'] })]) {
      const metricsAuth = named(objs, 'ClusterRole', 'appkind-operator-metrics-auth')!;
      const crds = named(objs, 'ClusterRole', 'appkind-operator-crds')!;
      const rules = [...operatorClusterRoles(objs), metricsAuth, crds, ...only(objs, 'Role')].flatMap((r) => r.rules ?? []);
      const text = JSON.stringify(rules);
      expect(text).not.toContain('*');
      expect(text).not.toContain('secrets');
      expect(text).not.toContain('configmaps');
      expect(new Set(rules.flatMap((r) => r.resources))).toEqual(
        new Set([
          'echoflasks', 'echoflasks/status', 'echoflasks/finalizers', 'takaras', 'takaras/status', 'takaras/finalizers',
          'deployments', 'services', 'poddisruptionbudgets', 'networkpolicies', 'pods', 'replicasets', 'events', 'leases', 'tokenreviews', 'subjectaccessreviews',
          'customresourcedefinitions',
        ]),
      );
    }
  });

  it('gives an operator that serves no AppKind (appKindSelector none) no right to AppKinds, and keeps their CRD for the operators that serve them', () => {
    const objs = synth({ appKindSelector: 'none' });
    expect(only(objs, 'ClusterRoleBinding').map((b) => b.roleRef!.name)).toEqual(['appkind-operator', 'appkind-operator-crds', 'appkind-operator-metrics-auth']);
    expect(named(objs, 'ClusterRole', 'appkind-operator-appkinds')).toBeUndefined();
    const rules = only(objs, 'ClusterRole').flatMap((r) => r.rules ?? []);
    expect(rules.filter((r) => r.apiGroups?.includes('appkind.io'))).toEqual([]);
    expect(only(objs, 'CustomResourceDefinition').map((c) => c.metadata.name)).toContain('appkinds.appkind.io');
    expect(envOf(objs).APPKIND_APPKIND_SELECTOR).toBe('none');
    // Spaces around it, as a values file or an env var may carry them: still none (the operator trims it).
    expect(named(synth({ appKindSelector: ' none ' }), 'ClusterRole', 'appkind-operator-appkinds')).toBeUndefined();
    // Any other selector serves some AppKinds: the role is there.
    expect(named(synth({ appKindSelector: 'team=payments' }), 'ClusterRole', 'appkind-operator-appkinds')).toBeDefined();
  });

  it('uses a Role and RoleBinding per watched namespace and no ClusterRole otherwise (but the metrics reviews\')', () => {
    const objs = synth({ watchNamespaces: ['team-a', 'team-b'] });
    expect(operatorClusterRoles(objs)).toHaveLength(0);
    // CRDs, TokenReviews and SubjectAccessReviews, AppKinds are cluster-scoped: only a ClusterRole can grant them.
    expect(only(objs, 'ClusterRoleBinding').map((b) => b.roleRef!.name)).toEqual(['appkind-operator-crds', 'appkind-operator-metrics-auth', 'appkind-operator-appkinds']);
    expect(named(objs, 'ClusterRole', 'appkind-operator-metrics-auth')!.rules).toEqual(METRICS_AUTH_RULES);
    const roles = only(objs, 'Role');
    const byNs = (ns: string) => roles.find((r) => r.metadata.namespace === ns && r.metadata.name === 'appkind-operator');
    expect(byNs('team-a')?.rules).toEqual(RECONCILE_RULES);
    expect(byNs('team-b')?.rules).toEqual(RECONCILE_RULES);
    expect(roles.find((r) => r.metadata.name === 'appkind-operator-leader-election')?.metadata.namespace).toBe('appkind-system');
    const bindings = only(objs, 'RoleBinding');
    expect(bindings.map((b) => `${b.metadata.namespace}/${b.roleRef!.name}`).sort()).toEqual([
      'appkind-system/appkind-operator-leader-election',
      'team-a/appkind-operator',
      'team-b/appkind-operator',
    ]);
    for (const b of bindings) expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'appkind-operator', namespace: 'appkind-system' }]);
    expect(envOf(objs).APPKIND_WATCH_NAMESPACE).toBe('team-a,team-b');
  });

  it("renders admission policies that judge only the operator's own writes of Deployments, Services, PodDisruptionBudgets and NetworkPolicies, and refuse with 403", () => {
    type Policy = {
      metadata: { name: string };
      spec: {
        failurePolicy: string;
        matchConstraints: { resourceRules: { resources: string[]; operations: string[] }[] };
        matchConditions: { expression: string }[];
        validations: { expression: string; message: string; reason: string }[];
      };
    };
    const objs = synth() as unknown as (Manifest & Policy & { spec: { policyName?: string; validationActions?: string[] } })[];
    const children = (o: Manifest) => !o.metadata.name.endsWith('crds');
    const policies = objs.filter((o) => o.kind === 'ValidatingAdmissionPolicy' && children(o));
    expect(policies.map((p) => p.metadata.name)).toEqual(['appkind-operator-deployments', 'appkind-operator-services', 'appkind-operator-pod-policies']);
    expect(objs.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && children(o)).map((b) => [b.metadata.name, b.spec.policyName, b.spec.validationActions])).toEqual([
      ['appkind-operator-deployments', 'appkind-operator-deployments', ['Deny']],
      ['appkind-operator-services', 'appkind-operator-services', ['Deny']],
      ['appkind-operator-pod-policies', 'appkind-operator-pod-policies', ['Deny']],
    ]);
    expect(policies.map((p) => p.spec.matchConstraints.resourceRules.flatMap((r) => r.resources))).toEqual([
      ['deployments'], ['services'], ['poddisruptionbudgets', 'networkpolicies'],
    ]);
    // A PodDisruptionBudget or NetworkPolicy not controlled by a CR of a served kind is refused: nothing else of them.
    expect(policies[2]!.spec.validations).toHaveLength(1);
    for (const p of policies) {
      expect(p.spec.failurePolicy).toBe('Fail');
      expect(p.spec.matchConditions.map((c) => c.expression)).toEqual(["request.userInfo.username == 'system:serviceaccount:appkind-system:appkind-operator'"]);
      expect([...new Set(p.spec.matchConstraints.resourceRules.flatMap((r) => r.operations))]).toEqual(['CREATE', 'UPDATE']);
      expect(new Set(p.spec.validations.map((v) => v.reason))).toEqual(new Set(['Forbidden']));
      // The first rule: a controller reference to a CR of a served kind.
      expect(p.spec.validations[0]!.expression).toBe("variables.owner in ['swallowlab.com/v1alpha1, Kind=EchoFlask', 'maho.takara.org/v1alpha1, Kind=Takara']");
    }
    const deployments = policies[0]!.spec.validations;
    expect(deployments.map((v) => v.message).join('\n')).toMatch(/hostPath volumes are never rendered/);
    // Each kind's own rules, guarded by its owner: its image, volumes, ServiceAccount, token.
    for (const kind of ['EchoFlask', 'Takara']) {
      expect(deployments.filter((v) => v.message.includes(`${kind} does not allow (`))).toHaveLength(1);
      expect(deployments.filter((v) => v.message.includes(`a ServiceAccount other than ${kind}'s (default)`))).toHaveLength(1);
    }
    expect(deployments.find((v) => v.message.includes('EchoFlask does not allow ('))!.expression).toContain("self == 'takeyan/flask:0.0.3'");
    // A kind whose CRs may name a ServiceAccount, or may mount the token, has no rule about it.
    const open = synth({ kinds: [{ ...TAKARA, automountServiceAccountToken: true, overrides: { serviceAccountName: true } }] }) as unknown as Policy[];
    expect(JSON.stringify(open)).not.toContain('a ServiceAccount other than');
    expect(JSON.stringify(open)).not.toContain('token mounted');
    expect(synth({ admissionPolicy: false }).filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
  });

  it('renders -view and -edit ClusterRoles per kind that aggregate into view, edit and admin', () => {
    const objs = synth();
    const authoring = only(objs, 'ClusterRole').filter((r) => !r.metadata.name.startsWith('appkind-operator'));
    expect(authoring.map((r) => r.metadata.name).sort()).toEqual([
      'echoflasks.swallowlab.com-edit', 'echoflasks.swallowlab.com-view', 'takaras.maho.takara.org-edit', 'takaras.maho.takara.org-view',
    ]);
    const byName = (name: string) => authoring.find((r) => r.metadata.name === name)!;
    expect(byName('echoflasks.swallowlab.com-view').metadata.labels).toEqual({
      'app.kubernetes.io/part-of': 'cdk8s-appkind',
      'rbac.authorization.k8s.io/aggregate-to-view': 'true',
      'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
      'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
    });
    expect(byName('echoflasks.swallowlab.com-edit').metadata.labels).toEqual({
      'app.kubernetes.io/part-of': 'cdk8s-appkind',
      'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
      'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
    });
    expect(byName('echoflasks.swallowlab.com-view').rules).toEqual([
      { apiGroups: ['swallowlab.com'], resources: ['echoflasks', 'echoflasks/status', 'echoflasks/scale'], verbs: ['get', 'list', 'watch'] },
    ]);
    expect(byName('echoflasks.swallowlab.com-edit').rules).toEqual([
      { apiGroups: ['swallowlab.com'], resources: ['echoflasks'], verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
      { apiGroups: ['swallowlab.com'], resources: ['echoflasks/scale'], verbs: ['update', 'patch'] },
    ]);
    // CR authors get the CRs only: no status writes, no children, no Secrets or ConfigMaps.
    const text = JSON.stringify(authoring.flatMap((r) => r.rules));
    for (const word of ['*', 'deployments', 'services', 'pods', 'secrets', 'configmaps']) expect(text).not.toContain(word);
    expect(only(synth({ authoringRoles: false }), 'ClusterRole').map((r) => r.metadata.name)).toEqual([
      'appkind-operator', 'appkind-operator-crds', 'appkind-operator-metrics-auth', 'appkind-operator-appkinds', 'appkind-operator-metrics-reader',
    ]);
  });

  it('runs the operator non-root with a read-only root filesystem, no privilege escalation and no capabilities', () => {
    const objs = synth();
    const pod = podSpec(objs);
    expect(pod.serviceAccountName).toBe('appkind-operator');
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container(objs).securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('probes /healthz and /readyz on 8081 (plain HTTP), exposes metrics on 8443 (HTTPS), and sets requests and limits', () => {
    const c = container(synth({ image: 'registry.example/appkind-operator:1.2.3' }));
    expect(c.image).toBe('registry.example/appkind-operator:1.2.3');
    expect(c.command).toEqual(['node', 'build/operator/main.js']);
    expect(c.ports).toEqual([
      { name: 'metrics', containerPort: 8443, protocol: 'TCP' },
      { name: 'health', containerPort: 8081, protocol: 'TCP' },
    ]);
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'health' });
    expect(c.resources).toEqual({ requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '500m', memory: '512Mi' } });
  });

  it('configures the operator through the same APPKIND_ env settings as a local run', () => {
    const objs = synth({ replicas: 2, logLevel: LogLevel.DEBUG, workers: 4, leaseDurationSeconds: 30 });
    const env = envOf(objs);
    expect(env).toMatchObject({
      APPKIND_CONFIG: '/etc/appkind/kinds.yaml',
      APPKIND_CONFIG_MAP: 'appkind-operator-kinds',
      APPKIND_WATCH_NAMESPACE: '',
      APPKIND_KIND_GROUPS: '',
      APPKIND_LEADER_ELECT: 'true',
      APPKIND_LEASE_NAME: 'appkind-operator',
      APPKIND_LEASE_DURATION_SECONDS: '30',
      APPKIND_METRICS_PORT: '8443',
      APPKIND_HEALTH_PORT: '8081',
      APPKIND_LOG_LEVEL: 'debug',
      APPKIND_WORKERS: '4',
      APPKIND_POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      APPKIND_POD_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
    });
    // Every name is one the operator reads: prefixed, or the six kind variables.
    for (const name of Object.keys(env)) expect(name).toMatch(/^APPKIND_/);
    expect(one(objs, 'Deployment').spec!.replicas).toBe(2);
  });

  it('lets the operator review scrapes (tokenreviews, subjectaccessreviews create) and gives scrapers a metrics-reader ClusterRole', () => {
    const objs = synth();
    expect(named(objs, 'ClusterRole', 'appkind-operator-metrics-auth')!.rules).toEqual(METRICS_AUTH_RULES);
    expect(named(objs, 'ClusterRoleBinding', 'appkind-operator-metrics-auth')).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: 'appkind-operator-metrics-auth' },
      subjects: [{ kind: 'ServiceAccount', name: 'appkind-operator', namespace: 'appkind-system' }],
    });
    // The reader role is for Prometheus' identity, bound by the admin: the bundle binds it to no one.
    expect(named(objs, 'ClusterRole', 'appkind-operator-metrics-reader')!.rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    expect(only(objs, 'ClusterRoleBinding').filter((b) => b.roleRef!.name.endsWith('-metrics-reader'))).toEqual([]);
    expect(only(objs, 'RoleBinding').filter((b) => b.roleRef!.name.endsWith('-metrics-reader'))).toEqual([]);
  });

  it('renders a ClusterIP metrics Service on 8443 and a NetworkPolicy admitting only the metrics port to the operator pods', () => {
    const objs = synth();
    const deployment = one(objs, 'Deployment');
    const selector = deployment.spec!.selector!.matchLabels;
    const service = one(objs, 'Service');
    expect(service.metadata).toMatchObject({ name: 'appkind-operator-metrics', namespace: 'appkind-system' });
    expect(service.spec).toEqual({ type: 'ClusterIP', selector, ports: [{ name: 'https', port: 8443, targetPort: 'metrics', protocol: 'TCP' }] });
    const policy = one(objs, 'NetworkPolicy');
    expect(policy.metadata).toMatchObject({ name: 'appkind-operator', namespace: 'appkind-system' });
    // Ingress only (egress stays open for the API server); no `from`: any peer, on the metrics port alone.
    // The health port is not listed: the kubelet probes from the node, which a NetworkPolicy always admits.
    expect(policy.spec).toEqual({ podSelector: { matchLabels: selector }, policyTypes: ['Ingress'], ingress: [{ ports: [{ port: 8443, protocol: 'TCP' }] }] });
    expect(only(synth({ networkPolicy: false }), 'NetworkPolicy')).toEqual([]);
  });

  it('serves /metrics with a mounted TLS Secret when one is named, else with a certificate the operator makes', () => {
    expect(envOf(synth()).APPKIND_METRICS_CERT_DIR).toBeUndefined();
    expect(podSpec(synth()).volumes).not.toContainEqual(expect.objectContaining({ name: 'metrics-cert' }));
    const objs = synth({ metricsCertSecret: 'operator-metrics-tls' });
    expect(envOf(objs).APPKIND_METRICS_CERT_DIR).toBe('/etc/appkind-metrics-cert');
    expect(podSpec(objs).volumes).toContainEqual({ name: 'metrics-cert', secret: { secretName: 'operator-metrics-tls' } });
    expect(container(objs).volumeMounts).toContainEqual({ name: 'metrics-cert', mountPath: '/etc/appkind-metrics-cert', readOnly: true });
  });

  it('holds the kinds in a ConfigMap mounted where APPKIND_CONFIG points, in the config-file format', () => {
    const objs = synth();
    const configMap = one(objs, 'ConfigMap') as Manifest & { data: Record<string, string> };
    expect(configMap.metadata).toMatchObject({ name: 'appkind-operator-kinds', namespace: 'appkind-system' });
    expect(Object.keys(configMap.data)).toEqual(['kinds.yaml']);
    const dir = mkdtempSync(join(tmpdir(), 'bundle-kinds-'));
    writeFileSync(join(dir, 'kinds.yaml'), configMap.data['kinds.yaml']!);
    expect(kindsFromFile(join(dir, 'kinds.yaml')).map((k) => k.kind)).toEqual(['EchoFlask', 'Takara']);
    rmSync(dir, { recursive: true });
    const pod = one(objs, 'Deployment').spec!.template!.spec as unknown as {
      volumes: { name: string; configMap?: { name: string } }[];
      containers: { volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
    };
    expect(pod.volumes).toContainEqual({ name: 'kinds', configMap: { name: 'appkind-operator-kinds' } });
    expect(pod.containers[0]!.volumeMounts).toContainEqual({ name: 'kinds', mountPath: '/etc/appkind', readOnly: true });
  });

  it('runs as many workers as the operator does by default', () => {
    expect(envOf(synth()).APPKIND_WORKERS).toBe(String(DEFAULT_WORKERS));
  });

  it('selects its pods by fixed labels, independent of the construct path', () => {
    const d = one(synth(), 'Deployment');
    expect(d.metadata).toMatchObject({ name: 'appkind-operator', namespace: 'appkind-system' });
    expect(d.spec!.selector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'appkind-operator', 'app.kubernetes.io/component': 'operator' } });
    expect(d.spec!.template!.metadata.labels).toMatchObject(d.spec!.selector!.matchLabels);
  });

  it('refuses an empty list of kinds', () => {
    expect(() => synth({ kinds: [] })).toThrow(/kinds is empty/);
  });
});

describe('OperatorBundle kindGroups: the power to make CRDs', () => {
  type Rule = { apiGroups?: string[]; resources?: string[]; verbs: string[] };
  type Policy = Manifest & {
    spec: {
      failurePolicy?: string;
      paramKind?: { apiVersion: string; kind: string };
      paramRef?: { selector: unknown; parameterNotFoundAction: string };
      matchConstraints?: { resourceRules: { apiGroups: string[]; resources: string[]; operations: string[] }[]; objectSelector?: unknown };
      matchConditions?: { name: string; expression: string }[];
      validations?: { expression: string; message: string; messageExpression?: string; reason: string }[];
    };
  };
  const GROUPS = ['apps.example.com', 'team.example.org'];
  const policies = (objs: Manifest[]) => objs.filter((o) => o.kind === 'ValidatingAdmissionPolicy') as Policy[];
  const policy = (objs: Manifest[], name: string) => policies(objs).find((p) => p.metadata.name === name)!;
  /** Every rule the operator's ServiceAccount is bound to. */
  const operatorRules = (objs: Manifest[]): Rule[] => {
    const bound = new Set([...only(objs, 'ClusterRoleBinding'), ...only(objs, 'RoleBinding')].map((b) => `${b.roleRef!.kind}/${b.metadata.namespace ?? ''}/${b.roleRef!.name}`));
    return [...only(objs, 'ClusterRole'), ...only(objs, 'Role')]
      .filter((r) => bound.has(`${r.kind}/${r.kind === 'Role' ? r.metadata.namespace : ''}/${r.metadata.name}`))
      .flatMap((r) => r.rules ?? []);
  };

  it('refuses a Kubernetes group, the AppKind API group or a name without a dot, naming the fix', () => {
    for (const group of ['apps.k8s.io', 'k8s.io', 'metrics.kubernetes.io', 'appkind.io', 'apps', '']) {
      expect(() => synth({ kindGroups: [group] })).toThrow(/OperatorBundle: kindGroups: .*; list API groups of your own/);
    }
    expect(() => synth({ kindGroups: ['appkind.io.example.com', 'k8s.io.example.com'] })).not.toThrow();
  });

  it('tells the operator the groups (APPKIND_KIND_GROUPS), as it is told the watched namespaces', () => {
    expect(envOf(synth({ kindGroups: [...GROUPS, GROUPS[0]!] })).APPKIND_KIND_GROUPS).toBe('apps.example.com,team.example.org');
  });

  it('without kindGroups, grants CRDs read only and the policy refuses every CRD write of the operator', () => {
    const objs = synth();
    expect(named(objs, 'ClusterRole', 'appkind-operator-crds')!.rules).toEqual([
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get', 'list', 'watch'] },
    ]);
    expect(named(objs, 'ClusterRoleBinding', 'appkind-operator-crds')).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: 'appkind-operator-crds' },
      subjects: [{ kind: 'ServiceAccount', name: 'appkind-operator', namespace: 'appkind-system' }],
    });
    const crds = policy(objs, 'appkind-operator-crds');
    expect(crds.spec.validations!.find((v) => v.message.includes('kindGroups is empty'))!.expression).toBe('variables.touched.all(o, o.spec.group in [])');
    // Nor the policies that take AppKinds as params: no AppKind gets a CRD.
    expect(policies(objs).map((p) => p.metadata.name)).toEqual([
      'appkind-operator-deployments', 'appkind-operator-services', 'appkind-operator-pod-policies', 'appkind-operator-crds',
    ]);
  });

  it('grants CRD writes and the CRs of the allowed groups only: no wildcard group, no RBAC, no admission policies, no escalate or bind', () => {
    for (const objs of [synth({ kindGroups: GROUPS }), synth({ kindGroups: GROUPS, watchNamespaces: ['team-a'] })]) {
      expect(named(objs, 'ClusterRole', 'appkind-operator-crds')!.rules).toEqual([
        { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'] },
        { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions/status'], verbs: ['get', 'patch', 'update'] },
      ]);
      const rules = operatorRules(objs);
      const wildcards = rules.filter((r) => JSON.stringify(r).includes('*'));
      expect(wildcards).toEqual([
        { apiGroups: GROUPS, resources: ['*'], verbs: ['get', 'list', 'watch', 'update'] },
        { apiGroups: GROUPS, resources: ['*/status'], verbs: ['patch'] },
        { apiGroups: GROUPS, resources: ['*/finalizers'], verbs: ['update'] },
      ]);
      const groups = new Set(rules.flatMap((r) => r.apiGroups ?? []));
      for (const g of ['*', 'rbac.authorization.k8s.io', 'admissionregistration.k8s.io']) expect(groups).not.toContain(g);
      const verbs = new Set(rules.flatMap((r) => r.verbs));
      for (const v of ['*', 'escalate', 'bind', 'impersonate']) expect(verbs).not.toContain(v);
    }
  });

  it('renders -view and -edit ClusterRoles per allowed group that aggregate into view, edit and admin', () => {
    const objs = synth({ kindGroups: GROUPS });
    const view = named(objs, 'ClusterRole', 'apps.example.com-view')!;
    const edit = named(objs, 'ClusterRole', 'apps.example.com-edit')!;
    expect(view.metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-view': 'true', 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' });
    expect(edit.metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-edit': 'true' });
    expect(edit.metadata.labels).not.toHaveProperty(['rbac.authorization.k8s.io/aggregate-to-view']);
    expect(view.rules).toEqual([{ apiGroups: ['apps.example.com'], resources: ['*', '*/status', '*/scale'], verbs: ['get', 'list', 'watch'] }]);
    expect(edit.rules).toEqual([
      { apiGroups: ['apps.example.com'], resources: ['*'], verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
      { apiGroups: ['apps.example.com'], resources: ['*/scale'], verbs: ['update', 'patch'] },
    ]);
    expect(named(objs, 'ClusterRole', 'team.example.org-view')).toBeDefined();
  });

  it("renders <name>-crds: the operator's CRD writes, status included, stay on labelled CRDs in the allowed groups, never a Kubernetes group", () => {
    const p = policy(synth({ kindGroups: GROUPS }), 'appkind-operator-crds');
    expect(p.spec.failurePolicy).toBe('Fail');
    expect(p.spec.matchConstraints!.resourceRules).toEqual([
      {
        apiGroups: ['apiextensions.k8s.io'], apiVersions: ['*'],
        resources: ['customresourcedefinitions', 'customresourcedefinitions/status'], operations: ['CREATE', 'UPDATE', 'DELETE'],
      },
    ]);
    expect(p.spec.matchConditions).toEqual([
      { name: 'operator-service-account', expression: "request.userInfo.username == 'system:serviceaccount:appkind-system:appkind-operator'" },
    ]);
    const rules = p.spec.validations!;
    expect(new Set(rules.map((v) => v.reason))).toEqual(new Set(['Forbidden']));
    const byMessage = (text: string) => rules.find((v) => v.message.includes(text))!.expression;
    expect(byMessage('label appkind.io/appkind')).toBe("variables.touched.all(o, o.metadata.?labels[?'appkind.io/appkind'].orValue('') != '')");
    expect(byMessage('add the AppKind\'s group to kindGroups')).toBe("variables.touched.all(o, o.spec.group in ['apps.example.com', 'team.example.org'])");
    expect(byMessage('Kubernetes group')).toContain("o.spec.group.endsWith('.k8s.io')");
    expect(byMessage('Kubernetes group')).toContain("o.spec.group == 'appkind.io'");
    expect(byMessage('no conversion webhook')).toContain("object.spec.scope == 'Namespaced'");
  });

  it('renders <name>-appkind-crds: deleting the CRD of an AppKind that exists is refused for all but the operator, per AppKind param', () => {
    const objs = synth({ kindGroups: GROUPS });
    const p = policy(objs, 'appkind-operator-appkind-crds');
    expect(p.spec.paramKind).toEqual({ apiVersion: 'appkind.io/v1alpha1', kind: 'AppKind' });
    expect(p.spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: ['apiextensions.k8s.io'], apiVersions: ['*'], resources: ['customresourcedefinitions'], operations: ['DELETE'] }],
      objectSelector: { matchExpressions: [{ key: 'appkind.io/appkind', operator: 'Exists' }] },
    });
    expect(p.spec.matchConditions).toEqual([
      { name: 'not-the-operator', expression: "request.userInfo.username != 'system:serviceaccount:appkind-system:appkind-operator'" },
    ]);
    expect(p.spec.validations!.map((v) => v.expression)).toEqual(["oldObject.metadata.labels['appkind.io/appkind'] != params.metadata.name"]);
    expect(p.spec.validations![0]!.messageExpression).toContain("(kubectl delete appkinds ' + params.metadata.name + ', with spec.deletionPolicy Delete");
    const binding = only(objs, 'ValidatingAdmissionPolicyBinding').find((b) => b.metadata.name === 'appkind-operator-appkind-crds') as Policy;
    expect(binding.spec).toEqual({ policyName: 'appkind-operator-appkind-crds', paramRef: { selector: {}, parameterNotFoundAction: 'Allow' }, validationActions: ['Deny'] });
    expect(synth({ admissionPolicy: false, kindGroups: GROUPS }).filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
  });

  it("admits children of CRs of the allowed groups under the generic rules, and judges them by their AppKind's image and Service type", () => {
    const objs = synth({ kindGroups: GROUPS });
    for (const name of ['appkind-operator-deployments', 'appkind-operator-services', 'appkind-operator-pod-policies']) {
      expect(policy(objs, name).spec.validations![0]!.expression).toBe(
        "variables.owner in ['swallowlab.com/v1alpha1, Kind=EchoFlask', 'maho.takara.org/v1alpha1, Kind=Takara'] || variables.ownerGroup in ['apps.example.com', 'team.example.org']",
      );
    }
    const children = policy(objs, 'appkind-operator-appkind-children');
    expect(children.spec.paramKind).toEqual({ apiVersion: 'appkind.io/v1alpha1', kind: 'AppKind' });
    expect(children.spec.matchConditions!.map((c) => c.name)).toEqual(['operator-service-account', 'owned-by-an-appkind-kind']);
    // A kinds-file kind in an allowed group (EchoFlask in swallowlab.com) is no AppKind's: its own rules judge its children.
    expect(children.spec.matchConditions![1]!.expression).toContain(
      "!((r.apiVersion + ', Kind=' + r.kind) in ['swallowlab.com/v1alpha1, Kind=EchoFlask', 'maho.takara.org/v1alpha1, Kind=Takara'])",
    );
    expect(children.spec.validations!.map((v) => v.message)).toEqual([
      'the construct renders no Deployment with an image its AppKind does not allow (spec.image, spec.allowedImages)',
      'a Service of a type its AppKind does not render (spec.serviceType)',
    ]);
    const binding = only(objs, 'ValidatingAdmissionPolicyBinding').find((b) => b.metadata.name === 'appkind-operator-appkind-children') as Policy;
    expect(binding.spec.paramRef).toEqual({ selector: {}, parameterNotFoundAction: 'Allow' });
  });
});
