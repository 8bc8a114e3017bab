// The release's Helm chart, generated from the same OperatorBundle construct as install.yaml: the
// bundle is rendered with stand-ins (an image, a namespace, a watched namespace), and each stand-in
// becomes the template expression of its value, so `helm template` with the default values gives
// install.yaml's objects. What the kinds shape (their CRDs, the operator's rules for them, their
// -view/-edit roles, the child admission policies) cannot be computed by a Go template: it is rendered
// here into the values (kindObjects), and `npm run -s kinds -- --helm-values` renders it for other kinds.
import type { KubernetesObject, V1ClusterRole, V1Deployment } from '@kubernetes/client-node';
import type { AppKind, OperatorBundleProps } from 'cdk8s-appkind';
import { ConfigError } from 'appkind-operator/kinds';
import { stringify } from 'yaml';
import { bundleObjects } from './manifests.js';

export const CHART_NAME = 'appkind-operator';
/** Stand-ins: valid where they stand, and never a real value. */
const NS = 'appkind-chart-stand-in-namespace';
const WATCHED = 'appkind-chart-stand-in-watched';
const IMAGE = 'appkind-chart-stand-in-image';
/** The command that renders kindObjects for other kinds; the chart names it when the two disagree. */
export const KINDS_VALUES_COMMAND = 'APPKIND_CONFIG=<your kinds file> npm run -s kinds -- --helm-values > kinds.values.yaml';

/** The bundle's objects that the kinds shape and nothing else does (the reconcile rules aside). */
const isKindObject = (o: KubernetesObject, name: string) =>
  o.kind === 'CustomResourceDefinition' ||
  o.kind!.startsWith('ValidatingAdmissionPolicy') ||
  (o.kind === 'ClusterRole' && o.metadata!.name !== name);

/** The reconcile rules: what the ClusterRole (or each watched namespace's Role) grants. */
const isReconcileRbac = (o: KubernetesObject, name: string) =>
  ['ClusterRole', 'ClusterRoleBinding'].includes(o.kind!) && o.metadata!.name === name;

/** What serving `kinds` installs, as chart values: the kinds, the operator's rules and the objects. */
export interface KindValues {
  readonly kinds: AppKind[];
  readonly kindObjects: { readonly kinds: AppKind[]; readonly rules: unknown[]; readonly objects: KubernetesObject[] };
}

/** kinds and kindObjects of the values for `kinds`; the operator's namespace is a template in them. */
export function kindValues(kinds: AppKind[], name = CHART_NAME): KindValues {
  const objects = bundleObjects({ kinds, namespace: NS, name });
  const rules = (objects.find((o) => o.kind === 'ClusterRole' && o.metadata!.name === name) as V1ClusterRole).rules!;
  const text = JSON.stringify(objects.filter((o) => isKindObject(o, name)), (_, v: unknown) => {
    if (typeof v === 'string' && /\{\{|\}\}/.test(v)) throw new ConfigError(`a kind's rendering holds "{{" or "}}" (${v.slice(0, 80)}), which Helm would read as a template`);
    return v;
  });
  const templated = JSON.parse(text.replaceAll(NS, '{{ .Values.namespace }}')) as KubernetesObject[];
  return { kinds, kindObjects: { kinds, rules, objects: templated } };
}

/** `key: value` with the value replaced by `{{ expr }}` (inline), or a YAML block rendered by `block(indent)`. */
type Hole = { inline: string } | { block: (indent: number) => string };

/** Objects as YAML with holes: each hole's token (a plain scalar) becomes its template. */
class Template {
  private readonly holes: Hole[] = [];

  hole(h: Hole): string {
    this.holes.push(h);
    return `HELMHOLE${this.holes.length - 1}X`;
  }

  yaml(obj: unknown): string {
    return stringify(obj, { lineWidth: 0 })
      .split('\n')
      .map((line) => {
        const m = /^(\s*)(- )?([^:]+): HELMHOLE(\d+)X$/.exec(line);
        const h = m && this.holes[Number(m[4])];
        if (m && h && 'block' in h) return `${m[1]}${m[2] ?? ''}${m[3]}:${h.block(m[1]!.length + (m[2]?.length ?? 0) + 2)}`;
        return line.replace(/HELMHOLE(\d+)X/g, (_, i: string) => {
          const hole = this.holes[Number(i)]!;
          if (!('inline' in hole)) throw new Error(`chart: a block value in ${line.trim()}`);
          return `{{ ${hole.inline} }}`;
        });
      })
      .join('\n')
      .replaceAll(NS, '{{ $.Values.namespace }}')
      .replaceAll(WATCHED, '{{ $ns }}');
  }
}

const toYaml = (expr: string) => (indent: number) => ` {{- toYaml ${expr} | nindent ${indent} }}`;

/** The chart's files (path under the chart's folder -> contents) for the configured bundle. */
export function chartFiles(props: OperatorBundleProps, version: string): Record<string, string> {
  const name = props.name ?? CHART_NAME;
  // The defaults come from the construct's own rendering, so they cannot drift from install.yaml.
  const real = bundleObjects(props);
  const deployment = real.find((o) => o.kind === 'Deployment') as V1Deployment & KubernetesObject;
  const container = deployment.spec!.template.spec!.containers[0]!;
  const values = {
    image: container.image!,
    imagePullPolicy: container.imagePullPolicy!,
    replicas: deployment.spec!.replicas!,
    resources: container.resources!,
    namespace: deployment.metadata!.namespace!,
    createNamespace: real.some((o) => o.kind === 'Namespace'),
    watchNamespaces: props.watchNamespaces ?? [],
    ...kindValues(props.kinds, name),
  };

  const t = new Template();
  const rendered = (watchNamespaces: string[]) => bundleObjects({ ...props, image: IMAGE, namespace: NS, watchNamespaces, createNamespace: true });
  const all = rendered([]);
  const watched = rendered([WATCHED]).filter((o) => ['Role', 'RoleBinding'].includes(o.kind!) && o.metadata!.namespace === WATCHED);
  const parts: string[] = [];
  const rbacBlock = () => {
    const cluster = all.filter((o) => isReconcileRbac(o, name));
    const rules = t.hole({ block: toYaml('$.Values.kindObjects.rules') });
    const withRules = (o: KubernetesObject & { rules?: unknown }) => (o.rules ? { ...o, rules } : o);
    return [
      '{{- if empty $.Values.watchNamespaces }}',
      ...cluster.map((o) => `---\n${t.yaml(withRules(o))}`),
      '{{- else }}',
      '{{- range $ns := $.Values.watchNamespaces }}',
      ...watched.map((o) => `---\n${t.yaml(withRules(o))}`),
      '{{- end }}',
      '{{- end }}',
    ].join('\n');
  };
  let rbacDone = false;
  for (const o of all) {
    if (isKindObject(o, name)) continue;
    if (isReconcileRbac(o, name)) {
      if (!rbacDone) parts.push(rbacBlock());
      rbacDone = true;
      continue;
    }
    if (o.kind === 'Namespace') {
      parts.push(`{{- if $.Values.createNamespace }}\n---\n${t.yaml(o)}{{- end }}`);
      continue;
    }
    if (o.kind === 'ConfigMap') {
      const data = Object.fromEntries(Object.keys((o as { data: object }).data).map((k) => [k, t.hole({ block: (i) => ` |{{- dict "kinds" $.Values.kinds | toYaml | nindent ${i} }}` })]));
      parts.push(`---\n${t.yaml({ ...o, data })}`);
      continue;
    }
    if (o.kind === 'Deployment') {
      const d = structuredClone(o) as V1Deployment & KubernetesObject;
      d.spec!.replicas = t.hole({ inline: '$.Values.replicas' }) as unknown as number;
      const c = d.spec!.template.spec!.containers[0]!;
      c.image = t.hole({ inline: '$.Values.image | quote' });
      c.imagePullPolicy = t.hole({ inline: '$.Values.imagePullPolicy | quote' });
      c.resources = t.hole({ block: toYaml('$.Values.resources') }) as never;
      const watch = c.env!.find((e) => e.name === 'APPKIND_WATCH_NAMESPACE')!;
      watch.value = t.hole({ inline: 'join "," $.Values.watchNamespaces | quote' });
      parts.push(`---\n${t.yaml(d)}`);
      continue;
    }
    parts.push(`---\n${t.yaml(o)}`);
  }

  const check = [
    `{{- /* The kinds' CRDs, rules, roles and admission policies (kindObjects) are rendered from the kinds by the constructs. */}}`,
    '{{- if empty $.Values.kinds }}{{ fail "kinds is empty: give at least one app kind" }}{{- end }}',
    '{{- if ne (toJson $.Values.kinds) (toJson $.Values.kindObjects.kinds) }}',
    `{{- fail "kinds differ from the kinds kindObjects was rendered for: render both with ${KINDS_VALUES_COMMAND.replaceAll('"', '\\"')}, then helm install or upgrade with -f kinds.values.yaml" }}`,
    '{{- end }}',
  ].join('\n');
  const kindsTemplate = ['{{- range $.Values.kindObjects.objects }}', '---', '{{ tpl (toYaml .) $ }}', '{{- end }}'].join('\n');

  const chart = {
    apiVersion: 'v2',
    name,
    description: 'The appkind operator: any container image as a Kubernetes app kind (generated from the cdk8s-appkind OperatorBundle construct by npm run release)',
    type: 'application',
    version,
    appVersion: version,
    // ValidatingAdmissionPolicy v1
    kubeVersion: '>=1.30.0-0',
  };
  return {
    'Chart.yaml': stringify(chart),
    'values.yaml': valuesYaml(values),
    'templates/operator.yaml': `${check}\n${parts.join('\n')}\n`,
    'templates/kinds.yaml': `${kindsTemplate}\n`,
    'templates/NOTES.txt': [
      'The appkind operator {{ .Chart.AppVersion }} runs in namespace {{ .Values.namespace }}, serving:',
      '{{- range .Values.kinds }}',
      '  {{ .kind }} ({{ .group }}/{{ .version }}), image {{ .image }}: kubectl get {{ .plural }}',
      '{{- end }}',
      '',
    ].join('\n'),
  };
}

/** values.yaml: each value under a comment saying what it sets. */
function valuesYaml(values: Record<string, unknown>): string {
  const doc: [string, string][] = [
    ['image', 'The operator image (the archive of npm run release loads under this name).'],
    ['imagePullPolicy', 'When the kubelet pulls the operator image.'],
    ['replicas', 'Operator pods; leader election is always on, so extra replicas are hot standbys.'],
    ['resources', 'CPU and memory of the operator; the memory limit covers about 1000 CRs (docs/benchmark.md).'],
    ['namespace', 'Namespace the operator runs in (and its Lease, ConfigMap and ServiceAccount).'],
    ['createNamespace', 'Create that namespace, enforcing the "restricted" Pod Security Standard.'],
    ['watchNamespaces', 'Namespaces whose CRs are reconciled; [] means all (a ClusterRole, else a Role in each).'],
    ['kinds', `The kinds the operator serves (the APPKIND_CONFIG file format; the ConfigMap ${CHART_NAME}-kinds).`],
    [
      'kindObjects',
      `What serving the kinds installs, rendered from them by the constructs (their CRDs, the operator's rules, their\n# -view/-edit roles, the child admission policies). Do not edit: for other kinds render kinds and kindObjects with\n#   ${KINDS_VALUES_COMMAND}\n# and give -f kinds.values.yaml to helm install or helm upgrade.`,
    ],
  ];
  return doc.map(([key, comment]) => `# ${comment}\n${stringify({ [key]: values[key] }, { lineWidth: 0 })}`).join('\n');
}
