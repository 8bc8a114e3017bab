// The operator's ServiceAccount may write Deployments and Services, so whoever holds it (or a bug in
// it) could run any pod spec. A ValidatingAdmissionPolicy (no webhook to run) refuses, for writes by
// that ServiceAccount only, what the construct could not have rendered for a CR of a served kind.
// Internal to the library (not exported from index.ts): OperatorBundle renders it.
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { AppKind } from './appkind';
import { AppKindCrd } from './crd';
import { ServiceType } from './exposure';
import { ImagePolicy } from './imagepolicy';
import { TMP_VOLUME } from './podspec';
import { Volume } from './volume';

/** The AppKind API, whose objects serve kinds the install does not list (params of the policies that read them). */
export const APPKIND_API = { group: 'appkind.io', version: 'v1alpha1', kind: 'AppKind', plural: 'appkinds' } as const;
export const APPKIND_PARAM_KIND = { apiVersion: `${APPKIND_API.group}/${APPKIND_API.version}`, kind: APPKIND_API.kind };

/** A ValidatingAdmissionPolicy validation. */
export interface Validation {
  readonly expression: string;
  readonly message: string;
  /** A message built from the request (CEL); `message` when it fails. */
  readonly messageExpression?: string;
}

/** A CEL string literal (single quotes; backslashes and quotes escaped). */
export function str(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A CEL list of string literals. */
export function list(xs: readonly string[]): string {
  return `[${xs.map(str).join(', ')}]`;
}

/** `apiVersion, Kind=kind` of a kind's CRs, as the owner variable spells it. */
function kindKey(kind: AppKind): string {
  return `${AppKindCrd.apiVersionOf(kind)}, Kind=${kind.kind}`;
}

// The CR whose controller reference the object carries: `apiVersion, Kind=kind`, or '' without exactly
// one; and its API group (a CRD's group always has a dot, so a core apiVersion like `v1` is in none).
const OWNER_VARIABLES = [
  { name: 'controllers', expression: 'object.metadata.?ownerReferences.orValue([]).filter(r, r.?controller.orValue(false))' },
  {
    name: 'owner',
    expression: "variables.controllers.size() == 1 ? variables.controllers[0].apiVersion + ', Kind=' + variables.controllers[0].kind : ''",
  },
];
const OWNER_GROUP = { name: 'ownerGroup', expression: "variables.controllers.size() == 1 ? variables.controllers[0].apiVersion.split('/')[0] : ''" };

/** The owner variables, with the owner's group when kinds are also served from AppKinds in `kindGroups`. */
const ownerVariables = (kindGroups: string[]) => (kindGroups.length === 0 ? OWNER_VARIABLES : [...OWNER_VARIABLES, OWNER_GROUP]);

/** The only volume of `name` the kind renders: same name, same source, same ConfigMap, Secret or claim. */
function volumeRule(v: Volume): string {
  const name = `v.name == ${str(v.name)}`;
  if (v.configMap) return `(${name} && has(v.configMap) && v.configMap.name == ${str(v.configMap.name)})`;
  if (v.secret) return `(${name} && has(v.secret) && v.secret.secretName == ${str(v.secret.secretName)})`;
  if (v.persistentVolumeClaim)
    return `(${name} && has(v.persistentVolumeClaim) && v.persistentVolumeClaim.claimName == ${str(v.persistentVolumeClaim.claimName)})`;
  return `(${name} && has(v.emptyDir))`;
}

/** What a Deployment of a CR of `kind` must hold: what the construct renders that a CR cannot change. */
function deploymentRules(kind: AppKind): Validation[] {
  const of = (check: string) => `variables.owner != ${str(kindKey(kind))} || (${check})`;
  const rules: Validation[] = [];
  // The containers' images, by the kind's image policy: the CRD's own rule, over each image named `self`.
  const image = new ImagePolicy(kind.image, kind.allowedImages);
  if (!image.allowsAny)
    rules.push({
      expression: of(`variables.pod.containers.map(c, c.image).all(self, ${image.celRule()})`),
      message: `an image ${kind.kind} does not allow (${image.patterns.join(', ')})`,
    });
  const volumes = [...(kind.volumes ?? []), { name: TMP_VOLUME, emptyDir: {} }];
  rules.push({
    expression: of(`variables.pod.?volumes.orValue([]).all(v, ${volumes.map(volumeRule).join(' || ')})`),
    message: `a volume ${kind.kind} does not render (it renders ${volumes.map((v) => v.name).join(', ')})`,
  });
  if (!kind.overrides?.serviceAccountName) {
    const sa = kind.serviceAccountName ?? 'default';
    rules.push({
      expression: of(`variables.pod.?serviceAccountName.orValue(variables.pod.?serviceAccount.orValue('default')) == ${str(sa)}`),
      message: `a ServiceAccount other than ${kind.kind}'s (${sa})`,
    });
  }
  if (!kind.automountServiceAccountToken) {
    rules.push({ expression: of('variables.pod.?automountServiceAccountToken.orValue(true) == false'), message: `a ServiceAccount token mounted, which ${kind.kind} does not allow` });
  }
  const pullSecrets = (kind.imagePullSecrets ?? []).map((s) => s.name);
  rules.push({ expression: of(`variables.pod.?imagePullSecrets.orValue([]).all(s, s.name in ${list(pullSecrets)})`), message: `an image pull Secret ${kind.kind} does not name` });
  // Secrets read into variables: the kind's own, unless its CRs may set env (or envFrom) themselves.
  const envSecrets = (kind.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name] : []));
  if (!kind.overrides?.env) {
    rules.push({
      expression: of(`variables.pod.containers.all(c, c.?env.orValue([]).all(e, !has(e.valueFrom) || !has(e.valueFrom.secretKeyRef) || e.valueFrom.secretKeyRef.name in ${list(envSecrets)}))`),
      message: `a Secret in env that ${kind.kind} does not name`,
    });
  }
  const envFromSecrets = (kind.envFrom ?? []).flatMap((e) => (e.secretRef ? [e.secretRef.name] : []));
  if (!kind.overrides?.envFrom) {
    rules.push({
      expression: of(`variables.pod.containers.all(c, c.?envFrom.orValue([]).all(e, !has(e.secretRef) || e.secretRef.name in ${list(envFromSecrets)}))`),
      message: `a Secret in envFrom that ${kind.kind} does not name`,
    });
  }
  if (kind.runAsNonRoot) {
    rules.push({ expression: of('variables.pod.containers.all(c, c.?securityContext.?runAsNonRoot.orValue(false) == true)'), message: `a container allowed to run as root, which ${kind.kind} does not allow` });
  }
  return rules;
}

/** The policy and its binding (validationActions Deny, and `bindingSpec`), both named `name`. */
export function policy(
  scope: Construct,
  id: string,
  name: string,
  labels: Record<string, string>,
  spec: Record<string, unknown> & { validations: Validation[] },
  bindingSpec: Record<string, unknown> = {},
): ApiObject[] {
  // Forbidden (403): a write this identity may not make; the default, Invalid (422), would say the object is malformed.
  const validations = spec.validations.map((v) => ({ ...v, reason: 'Forbidden' }));
  const p = new ApiObject(scope, id, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels },
    spec: { ...spec, validations },
  } as never);
  const binding = new ApiObject(scope, `${id}Binding`, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels },
    spec: { policyName: name, ...bindingSpec, validationActions: ['Deny'] },
  } as never);
  return [p, binding];
}

/** What every policy shares: the writes it judges (those of `username` only) and who owns the object. */
function common(resources: { group: string; plural: string }[], username: string) {
  return {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: resources.map((r) => ({ apiGroups: [r.group], apiVersions: ['*'], resources: [r.plural], operations: ['CREATE', 'UPDATE'] })) },
    matchConditions: [{ name: 'operator-service-account', expression: `request.userInfo.username == ${str(username)}` }],
  };
}

/**
 * For a child of a CR of a kind served from an AppKind (whose settings the install does not know), the
 * rules of its AppKind, read as a param: each AppKind is judged in turn and only the one whose group and
 * kind are the owner's constrains. The image and the Service type; the policy `<name>-appkind-children`.
 */
function appKindChildPolicy(scope: Construct, name: string, labels: Record<string, string>, username: string, kinds: AppKind[], kindGroups: string[]): ApiObject[] {
  // Optional field access throughout: one malformed AppKind must not fail (and so refuse) every other kind's children.
  const ofOwner = (check: string) =>
    `!(params.?spec.?group.orValue('') == variables.ownerGroup && params.?spec.?kind.orValue('') == variables.controllers[0].kind) || (${check})`;
  // The image patterns of ImagePolicy, read from the AppKind: exact, a prefix ending in `*`, or `*`.
  const allowed =
    "c.image == params.?spec.?image.orValue('') || params.?spec.?allowedImages.orValue([]).exists(p, p == '*' || (p.endsWith('*') ? c.image.startsWith(p.substring(0, p.size() - 1)) : c.image == p))";
  return policy(
    scope,
    'AppKindChildPolicy',
    `${name}-appkind-children`,
    labels,
    {
      failurePolicy: 'Fail',
      paramKind: APPKIND_PARAM_KIND,
      matchConstraints: {
        resourceRules: [
          { apiGroups: ['apps'], apiVersions: ['*'], resources: ['deployments'], operations: ['CREATE', 'UPDATE'] },
          { apiGroups: [''], apiVersions: ['*'], resources: ['services'], operations: ['CREATE', 'UPDATE'] },
        ],
      },
      matchConditions: [
        { name: 'operator-service-account', expression: `request.userInfo.username == ${str(username)}` },
        {
          name: 'owned-by-an-appkind-kind',
          // A kind the install serves from its kinds file may share a group with AppKinds; its own rules judge its children.
          expression: `object.metadata.?ownerReferences.orValue([]).filter(r, r.?controller.orValue(false)).exists_one(r, r.apiVersion.split('/')[0] in ${list(kindGroups)} && !((r.apiVersion + ', Kind=' + r.kind) in ${list(kinds.map(kindKey))}))`,
        },
      ],
      variables: ownerVariables(kindGroups),
      validations: [
        {
          expression: ofOwner(`request.resource.resource != 'deployments' || object.spec.template.spec.containers.all(c, ${allowed})`),
          message: 'the construct renders no Deployment with an image its AppKind does not allow (spec.image, spec.allowedImages)',
          messageExpression: "'the construct renders no Deployment with an image AppKind ' + params.metadata.name + ' does not allow (spec.image, spec.allowedImages)'",
        },
        {
          expression: ofOwner(`request.resource.resource != 'services' || object.spec.type == params.?spec.?serviceType.orValue('NodePort')`),
          message: 'a Service of a type its AppKind does not render (spec.serviceType)',
          messageExpression: "'a Service of a type AppKind ' + params.metadata.name + ' does not render (spec.serviceType)'",
        },
      ],
    },
    // Allow: with no AppKind, Deny refuses every Deployment and Service write in the cluster (the API
    // server looks up params before it evaluates matchConditions), the install's own kinds' and admins' too.
    { paramRef: { selector: {}, parameterNotFoundAction: 'Allow' } },
  );
}

/**
 * Renders, into `scope`, three ValidatingAdmissionPolicies and their bindings (`<name>-deployments`,
 * `<name>-services`, `<name>-pod-policies`) that refuse writes by the ServiceAccount `username` of any
 * Deployment or Service the construct could not have rendered for a CR of one of `kinds`, and of any
 * PodDisruptionBudget or NetworkPolicy not controlled by such a CR. A CR of a kind in `kindGroups`
 * (served from an AppKind) is admitted as an owner under the rules every kind has, and, with
 * `kindGroups`, a fourth policy `<name>-appkind-children` applies its AppKind's image and Service type.
 * Returns the objects (cluster-scoped).
 */
export function addChildAdmissionPolicies(
  scope: Construct,
  name: string,
  labels: Record<string, string>,
  username: string,
  kinds: AppKind[],
  kindGroups: string[] = [],
): ApiObject[] {
  const served = list(kinds.map(kindKey));
  const fromAppKinds = kindGroups.length === 0 ? '' : ` || variables.ownerGroup in ${list(kindGroups)}`;
  const appKindsText = kindGroups.length === 0 ? '' : `, or a kind an AppKind serves in ${kindGroups.join(', ')}`;
  const ownerRule: Validation = {
    expression: `variables.owner in ${served}${fromAppKinds}`,
    message: `the operator writes only objects whose controller is a CR of a kind it serves (${kinds.map((k) => k.kind).join(', ')}${appKindsText})`,
  };
  const deployments = policy(scope, 'DeploymentPolicy', `${name}-deployments`, labels, {
    ...common([{ group: 'apps', plural: 'deployments' }], username),
    variables: [...ownerVariables(kindGroups), { name: 'pod', expression: 'object.spec.template.spec' }],
    validations: [
      ownerRule,
      {
        expression: '!has(variables.pod.initContainers) && !has(variables.pod.ephemeralContainers) && variables.pod.containers.size() == 1',
        message: 'the construct renders exactly one container, and no init or ephemeral containers',
      },
      {
        expression: '!variables.pod.?hostNetwork.orValue(false) && !variables.pod.?hostPID.orValue(false) && !variables.pod.?hostIPC.orValue(false)',
        message: 'host namespaces (hostNetwork, hostPID, hostIPC) are never rendered',
      },
      { expression: "variables.pod.?volumes.orValue([]).all(v, !has(v.hostPath))", message: 'hostPath volumes are never rendered' },
      {
        expression:
          'variables.pod.containers.all(c, !c.?securityContext.?privileged.orValue(false) && c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false && c.?securityContext.?capabilities.?add.orValue([]).size() == 0 && c.?ports.orValue([]).all(p, !has(p.hostPort)))',
        message: 'containers are never privileged, never allowed privilege escalation, never given capabilities or host ports',
      },
      ...kinds.flatMap((k) => deploymentRules(k).map((r) => ({ expression: r.expression, message: `the construct renders no Deployment with ${r.message}` }))),
    ],
  });
  const services = policy(scope, 'ServicePolicy', `${name}-services`, labels, {
    ...common([{ group: '', plural: 'services' }], username),
    variables: ownerVariables(kindGroups),
    validations: [
      ownerRule,
      { expression: '!has(object.spec.externalIPs)', message: 'the construct renders no Service with externalIPs' },
      ...kinds.map((k) => {
        const type = k.serviceType ?? ServiceType.NODE_PORT;
        return { expression: `variables.owner != ${str(kindKey(k))} || object.spec.type == ${str(type)}`, message: `a ${k.kind}'s Service is of type ${type}` };
      }),
    ],
  });
  // A NetworkPolicy written elsewhere could cut another app off, a PodDisruptionBudget block its drains.
  const others = policy(scope, 'PodPolicyPolicy', `${name}-pod-policies`, labels, {
    ...common([{ group: 'policy', plural: 'poddisruptionbudgets' }, { group: 'networking.k8s.io', plural: 'networkpolicies' }], username),
    variables: ownerVariables(kindGroups),
    validations: [ownerRule],
  });
  const appKindChildren = kindGroups.length === 0 ? [] : appKindChildPolicy(scope, name, labels, username, kinds, kindGroups);
  return [...deployments, ...services, ...others, ...appKindChildren];
}
