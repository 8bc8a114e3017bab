// The Helm chart charts/appkind-operator is written as a chart; what a Go template cannot compute is
// rendered here by the constructs: for each set of kinds and kind groups, their CRDs, the operator's
// rules for them and for CRDs, their -view/-edit ClusterRoles and the admission policies (kindValues). The chart's own kinds
// have theirs in files/kinds.yaml (npm run chart); other kinds come as values (npm run kinds --
// --helm-values). `npm run release` copies the chart, with the image and kinds it was given.
import type { KubernetesObject, V1ClusterRole } from '@kubernetes/client-node';
import type { AppKind } from 'cdk8s-appkind';
import { ConfigError } from 'appkind-operator/kinds';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument, stringify } from 'yaml';
import { bundleObjects } from './manifests.js';

export const CHART_NAME = 'appkind-operator';
/** The chart's folder in the repository. */
export const CHART_DIR = join(import.meta.dirname, '..', '..', 'charts', CHART_NAME);
/** The chart's file of its own kinds' objects. */
export const KIND_OBJECTS_FILE = join('files', 'kinds.yaml');
/** The chart's file of OperatorMonitoring's objects (the value monitoring.enabled renders them). */
export const MONITORING_FILE = join('files', 'monitoring.yaml');
/** A stand-in namespace: valid where it stands, and never a real value (templates/monitoring.yaml replaces it). */
const NS = 'appkind-chart-stand-in-namespace';
/** What OperatorMonitoring adds to the bundle. */
const isMonitoringObject = (o: KubernetesObject, name: string) =>
  o.kind === 'ServiceMonitor' || o.kind === 'PrometheusRule' || (o.kind === 'ConfigMap' && o.metadata!.name === `${name}-dashboard`);

/** The bundle's objects that the kinds shape and nothing else does (the reconcile rules aside). */
const isKindObject = (o: KubernetesObject, name: string) =>
  o.kind === 'CustomResourceDefinition' || o.kind!.startsWith('ValidatingAdmissionPolicy') || (o.kind === 'ClusterRole' && o.metadata!.name !== name && !o.metadata!.name!.startsWith(`${name}-`));

/** What serving `kinds` with AppKinds in `kindGroups` installs: both, the operator's rules for them and for CRDs, and the objects. */
export interface KindObjects {
  readonly kinds: AppKind[];
  readonly kindGroups: string[];
  readonly rules: unknown[];
  readonly crdRules: unknown[];
  readonly objects: KubernetesObject[];
}

/** The chart values for `kinds` and `kindGroups`: both and kindObjects; the operator's namespace is a template in them. */
export function kindValues(kinds: AppKind[], name = CHART_NAME, kindGroups: string[] = []): { kinds: AppKind[]; kindGroups: string[]; kindObjects: KindObjects } {
  const objects = bundleObjects({ kinds, namespace: NS, name, kindGroups });
  const rulesOf = (role: string) => (objects.find((o) => o.kind === 'ClusterRole' && o.metadata!.name === role) as V1ClusterRole).rules!;
  const rules = rulesOf(name);
  const crdRules = rulesOf(`${name}-crds`);
  const text = JSON.stringify(objects.filter((o) => isKindObject(o, name)), (_, v: unknown) => {
    if (typeof v === 'string' && /\{\{|\}\}/.test(v)) throw new ConfigError(`a kind's rendering holds "{{" or "}}" (${v.slice(0, 80)}), which Helm would read as a template`);
    return v;
  });
  const templated = JSON.parse(text, (_, v: unknown) => (typeof v === 'string' ? v.replaceAll(NS, '{{ include "appkind-operator.namespace" . }}') : v)) as KubernetesObject[];
  return { kinds, kindGroups, kindObjects: { kinds, kindGroups, rules, crdRules, objects: templated } };
}

/** files/kinds.yaml of a chart serving `kinds`, AppKinds allowed `kindGroups`. */
export function kindObjectsFile(kinds: AppKind[], kindGroups: string[] = []): string {
  const header = [
    "# What serving values.yaml's kinds and kindGroups installs: their CRDs, the operator's rules for them",
    '# and for CRDs, their -view/-edit ClusterRoles and the admission policies, rendered by the',
    '# cdk8s-appkind constructs. Written by `npm run chart` from values.yaml; do not edit.',
  ];
  return `${header.join('\n')}\n${stringify(kindValues(kinds, CHART_NAME, kindGroups).kindObjects, { lineWidth: 0 })}`;
}

/**
 * files/monitoring.yaml: OperatorMonitoring's ServiceMonitor, PrometheusRule and dashboard ConfigMap
 * for the operator in the stand-in namespace. The alerts and the dashboard hold Prometheus' and
 * Grafana's own `{{ }}` templates, so the chart reads this file without tpl and replaces the namespace.
 */
export function monitoringFile(kinds: AppKind[], name = CHART_NAME): string {
  const objects = bundleObjects({ kinds, namespace: NS, name }, true).filter((o) => isMonitoringObject(o, name));
  const header = [
    "# OperatorMonitoring's ServiceMonitor, PrometheusRule and Grafana dashboard ConfigMap, rendered by the",
    '# cdk8s-appkind construct for the operator in a stand-in namespace, which templates/monitoring.yaml',
    "# replaces with the operator's. Written by `npm run chart`; do not edit.",
  ];
  return `${header.join('\n')}\n${stringify({ objects }, { lineWidth: 0 })}`;
}

/** The kinds of a chart folder's values.yaml. */
export function chartKinds(dir = CHART_DIR): AppKind[] {
  return (parseDocument(readFileSync(join(dir, 'values.yaml'), 'utf8')).toJS() as { kinds: AppKind[] }).kinds;
}

/** The kindGroups of a chart folder's values.yaml. */
export function chartKindGroups(dir = CHART_DIR): string[] {
  return (parseDocument(readFileSync(join(dir, 'values.yaml'), 'utf8')).toJS() as { kindGroups?: string[] }).kindGroups ?? [];
}

/**
 * Copies the chart to `dir` with `image`, `kinds` and `kindGroups` (and, with `monitoring`,
 * monitoring.enabled; with `appKindSelector`, appKindSelector) as its defaults: values.yaml keeps its comments, and files/kinds.yaml is rendered
 * again when the kinds or kind groups differ from the chart's.
 */
export function writeChart(dir: string, image: string, kinds: AppKind[], monitoring = false, kindGroups: string[] = [], appKindSelector?: string): void {
  cpSync(CHART_DIR, dir, { recursive: true });
  const values = parseDocument(readFileSync(join(dir, 'values.yaml'), 'utf8'));
  values.set('image', image);
  if (appKindSelector) values.set('appKindSelector', appKindSelector);
  if (monitoring) values.setIn(['monitoring', 'enabled'], true);
  if (JSON.stringify(kinds) !== JSON.stringify(chartKinds()) || JSON.stringify(kindGroups) !== JSON.stringify(chartKindGroups())) {
    values.set('kinds', kinds);
    values.set('kindGroups', kindGroups);
    writeFileSync(join(dir, KIND_OBJECTS_FILE), kindObjectsFile(kinds, kindGroups));
  }
  writeFileSync(join(dir, 'values.yaml'), values.toString({ lineWidth: 0 }));
}
