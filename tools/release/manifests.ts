// The release's manifests, from the same OperatorBundle construct `npx cdk8s synth` uses:
// install.yaml (the whole bundle, with OperatorMonitoring's objects when asked), and the part of it a kinds edit needs (the kinds' CRDs, the
// operator's RBAC covering them, their authoring roles), which `npm run kinds` applies.
import type { KubernetesObject } from '@kubernetes/client-node';
import { App, Chart, Yaml } from 'cdk8s';
import { OperatorBundle, OperatorBundleProps, OperatorMonitoring } from 'cdk8s-appkind';
import { kindGroups, loadAppKinds, watchNamespaces } from 'appkind-operator/kinds';
import { appKindSelector, withPrefixedSettings } from 'appkind-operator/settings';

/** The bundle's props from the configuration: kinds, APPKIND_OPERATOR_IMAGE/NAMESPACE, APPKIND_WATCH_NAMESPACE, APPKIND_KIND_GROUPS, APPKIND_APPKIND_SELECTOR. */
export function bundleProps(given: NodeJS.ProcessEnv, image?: string): OperatorBundleProps {
  const { env } = withPrefixedSettings(given);
  return {
    kinds: loadAppKinds(env),
    image: image ?? (env.APPKIND_OPERATOR_IMAGE || undefined),
    namespace: env.APPKIND_OPERATOR_NAMESPACE || undefined,
    watchNamespaces: watchNamespaces(env),
    kindGroups: kindGroups(env),
    appKindSelector: appKindSelector(env),
  };
}

/**
 * The bundle's objects in file order (the Namespace before what lives in it); with `monitoring`,
 * OperatorMonitoring's ServiceMonitor, PrometheusRule and dashboard ConfigMap after them.
 */
export function bundleObjects(props: OperatorBundleProps, monitoring = false): KubernetesObject[] {
  const app = new App();
  const chart = new Chart(app, 'appkind-operator', { disableResourceNameHashes: true });
  const bundle = new OperatorBundle(chart, 'bundle', props);
  if (monitoring) new OperatorMonitoring(chart, 'monitoring', { bundle });
  return chart.toJson() as KubernetesObject[];
}

/** install.yaml: the whole bundle; with `monitoring`, the objects a Prometheus Operator user adds (its CRDs must be installed). */
export function installYaml(env: NodeJS.ProcessEnv, image?: string, monitoring = false): string {
  return Yaml.stringify(...bundleObjects(bundleProps(env, image), monitoring));
}

const RBAC = ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const DEFAULT_NAME = 'appkind-operator';

type Rbac = KubernetesObject & { roleRef?: { name: string } };

/**
 * What serving `kinds` needs beside the operator itself: their CRDs, the operator's reconcile RBAC
 * for them, the bundle's child admission policies admitting them, and their -view/-edit roles. The reconcile RBAC is the bundle's own (a ClusterRole, or a
 * Role in each watched namespace) under the name `<name>-kinds`, bound to the same ServiceAccount, so
 * re-applying install.yaml never takes a later kind's rights away. The lease Role, the metrics
 * ClusterRoles, Namespace, ServiceAccount, ConfigMap, Deployment, metrics Service and NetworkPolicy are left out: a kinds edit does not touch them;
 * nor what the kindGroups alone shape (the CRD rules and policies, the groups' roles).
 */
export function kindsObjects(props: OperatorBundleProps): KubernetesObject[] {
  const name = props.name ?? DEFAULT_NAME;
  const renamed = (o: Rbac): Rbac => ({
    ...o,
    metadata: { ...o.metadata, name: `${name}-kinds` },
    ...(o.roleRef ? { roleRef: { ...o.roleRef, name: `${name}-kinds` } } : {}),
  });
  // What depends on its kindGroups, not on its kinds (CRD rules and policies, the groups' roles): a kinds edit leaves it.
  // (The AppKind children's policy names the kinds too, which it leaves to their own rules: re-rendered.)
  const crdObjects = [`${name}-crds`, `${name}-appkind-crds`];
  const groupRoles = (props.kindGroups ?? []).flatMap((g) => [`${g}-view`, `${g}-edit`]);
  return bundleObjects(props).flatMap((o: Rbac) => {
    // The child admission policies name the kinds they admit: re-rendered with every kind, in place.
    if (o.kind?.startsWith('ValidatingAdmissionPolicy')) return crdObjects.includes(o.metadata?.name ?? '') ? [] : [o];
    if (o.kind === 'CustomResourceDefinition') return [o];
    if (!RBAC.includes(o.kind!)) return [];
    if (o.metadata?.name === name) return [renamed(o)];
    // the kinds' authoring roles; not the lease Role and its binding, nor the metrics reviews', the
    // readers' or the CRD roles (they serve no kind: `kinds --print | kubectl delete -f -` must leave them)
    const own = [...['-leader-election', '-metrics-auth', '-metrics-reader', '-crds'].map((suffix) => `${name}${suffix}`), ...groupRoles];
    return own.includes(o.metadata?.name ?? '') ? [] : [o];
  });
}

/** kinds.yaml of the release: the configured kinds' part of the bundle. */
export function kindsYaml(env: NodeJS.ProcessEnv): string {
  return Yaml.stringify(...kindsObjects(bundleProps(env)));
}
