{{/*
The operator's name: its ServiceAccount, Deployment, RBAC objects, Lease and admission policies carry
it. It is not the release's name: the kinds' objects (files/kinds.yaml) are rendered for it.
*/}}
{{- define "appkind-operator.name" -}}
appkind-operator
{{- end }}

{{/* The operator's namespace: the release's, unless the value `namespace` names another. */}}
{{- define "appkind-operator.namespace" -}}
{{- .Values.namespace | default .Release.Namespace }}
{{- end }}

{{/* helm.sh/chart: the chart's name and version. */}}
{{- define "appkind-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels of the operator pods: the two of install.yaml and of the chart's first version. A
Deployment's selector cannot change, so adding the release's instance would break `helm upgrade`.
*/}}
{{- define "appkind-operator.selectorLabels" -}}
app.kubernetes.io/component: operator
app.kubernetes.io/name: {{ include "appkind-operator.name" . }}
{{- end }}

{{/* The standard labels Helm users look for, on every object of the chart. */}}
{{- define "appkind-operator.standardLabels" -}}
helm.sh/chart: {{ include "appkind-operator.chart" . }}
app.kubernetes.io/name: {{ include "appkind-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels of the operator's own objects: the standard ones and those OperatorBundle gives them. */}}
{{- define "appkind-operator.labels" -}}
{{ include "appkind-operator.standardLabels" . }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: cdk8s-appkind
{{- end }}

{{/* metadata of a namespaced object of the operator: name (the argument's), namespace, labels. */}}
{{- define "appkind-operator.metadata" -}}
name: {{ .name }}
namespace: {{ include "appkind-operator.namespace" .root }}
labels:
  {{- include "appkind-operator.labels" .root | nindent 2 }}
{{- end }}

{{/*
What serving the kinds installs (kinds, rules, objects): the value kindObjects, else files/kinds.yaml.
Its objects hold the template {{ include "appkind-operator.namespace" . }} where the operator's
namespace goes. As JSON: include returns text.
*/}}
{{- define "appkind-operator.kindObjects" -}}
{{- if .Values.kindObjects }}
{{- toJson .Values.kindObjects }}
{{- else }}
{{- .Files.Get "files/kinds.yaml" | fromYaml | toJson }}
{{- end }}
{{- end }}

{{/*
Refusals that Helm's own checks would make later or not at all, each naming what to do:
- kinds that differ from the kinds their objects were rendered for;
- a second release in the same cluster: ClusterRoles, ClusterRoleBindings, admission policies and
  CRDs are cluster-scoped and named after the operator, and two operators of one kind would fight
  over its CRs, so the chart is installed once a cluster (found by its ClusterRoleBinding);
- an upgrade that would move the operator to another namespace (a release of the chart that
  `npm run release` generated before runs it in appkind-system, not in the release's namespace).
*/}}
{{- define "appkind-operator.checks" -}}
{{- $kindObjects := include "appkind-operator.kindObjects" . | fromJson }}
{{- if empty .Values.kinds }}
{{- fail "kinds is empty: give at least one app kind" }}
{{- end }}
{{- if ne (toJson .Values.kinds) (toJson $kindObjects.kinds) }}
{{- fail "kinds differ from the kinds their CRDs, rules and policies (kindObjects) were rendered for: render both with APPKIND_CONFIG=<your kinds file> npm run -s kinds -- --helm-values > kinds.values.yaml, then give -f kinds.values.yaml to helm install or helm upgrade" }}
{{- end }}
{{- if ne (toJson (.Values.kindGroups | default list)) (toJson ($kindObjects.kindGroups | default list)) }}
{{- fail "kindGroups differ from the kind groups the operator's rules and admission policies (kindObjects) were rendered for: render both with APPKIND_KIND_GROUPS=<groups, comma-separated> APPKIND_CONFIG=<your kinds file> npm run -s kinds -- --helm-values > kinds.values.yaml, then give -f kinds.values.yaml to helm install or helm upgrade" }}
{{- end }}
{{- $name := printf "%s-metrics-auth" (include "appkind-operator.name" .) }}
{{- $binding := lookup "rbac.authorization.k8s.io/v1" "ClusterRoleBinding" "" $name }}
{{- if $binding }}
{{- $annotations := get $binding.metadata "annotations" | default dict }}
{{- $owner := get $annotations "meta.helm.sh/release-name" }}
{{- $ownerNamespace := get $annotations "meta.helm.sh/release-namespace" }}
{{- if not $owner }}
{{- fail (printf "the appkind operator is already installed in this cluster, not by Helm (ClusterRoleBinding %s belongs to no release: kubectl apply -f install.yaml?): one operator a cluster serves its kinds, so remove that install first" $name) }}
{{- end }}
{{- if or (ne $owner .Release.Name) (ne $ownerNamespace .Release.Namespace) }}
{{- fail (printf "the appkind operator is already installed in this cluster by release %s in namespace %s (ClusterRoleBinding %s): its ClusterRoles, CRDs and admission policies are cluster-scoped, so the chart is installed once a cluster. Upgrade that release (helm upgrade %s -n %s ...) or uninstall it first (its CRDs, CRs and apps stay)" $owner $ownerNamespace $name $owner $ownerNamespace) }}
{{- end }}
{{- $current := (index $binding.subjects 0).namespace }}
{{- $target := include "appkind-operator.namespace" . }}
{{- if ne $current $target }}
{{- fail (printf "release %s runs the operator in namespace %s; this upgrade would move it to %s. To keep it where it is, add --set namespace=%s (and --set createNamespace=true if the chart created that namespace, as the generated chart did); to move it, helm uninstall (the CRDs, CRs and apps stay), then helm install -n %s --take-ownership (which adopts the kept CRDs)" .Release.Name $current $target $current $target) }}
{{- end }}
{{- end }}
{{- end }}
