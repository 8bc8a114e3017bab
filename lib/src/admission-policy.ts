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

interface Validation {
  readonly expression: string;
  readonly message: string;
}

/** A CEL string literal (single quotes; backslashes and quotes escaped). */
function str(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A CEL list of string literals. */
function list(xs: readonly string[]): string {
  return `[${xs.map(str).join(', ')}]`;
}

/** `apiVersion, Kind=kind` of a kind's CRs, as the owner variable spells it. */
function kindKey(kind: AppKind): string {
  return `${AppKindCrd.apiVersionOf(kind)}, Kind=${kind.kind}`;
}

// The CR whose controller reference the object carries: `apiVersion, Kind=kind`, or '' without exactly one.
const OWNER_VARIABLES = [
  { name: 'controllers', expression: 'object.metadata.?ownerReferences.orValue([]).filter(r, r.?controller.orValue(false))' },
  {
    name: 'owner',
    expression: "variables.controllers.size() == 1 ? variables.controllers[0].apiVersion + ', Kind=' + variables.controllers[0].kind : ''",
  },
];

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

/** The policy and its binding (validationActions Deny), both named `name`. */
function policy(scope: Construct, id: string, name: string, labels: Record<string, string>, spec: Record<string, unknown> & { validations: Validation[] }): ApiObject[] {
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
    spec: { policyName: name, validationActions: ['Deny'] },
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
 * Renders, into `scope`, three ValidatingAdmissionPolicies and their bindings (`<name>-deployments`,
 * `<name>-services`, `<name>-pod-policies`) that refuse writes by the ServiceAccount `username` of any
 * Deployment or Service the construct could not have rendered for a CR of one of `kinds`, and of any
 * PodDisruptionBudget or NetworkPolicy not controlled by such a CR. Returns the six objects (cluster-scoped).
 */
export function addChildAdmissionPolicies(scope: Construct, name: string, labels: Record<string, string>, username: string, kinds: AppKind[]): ApiObject[] {
  const served = list(kinds.map(kindKey));
  const ownerRule: Validation = {
    expression: `variables.owner in ${served}`,
    message: `the operator writes only objects whose controller is a CR of a kind it serves (${kinds.map((k) => k.kind).join(', ')})`,
  };
  const deployments = policy(scope, 'DeploymentPolicy', `${name}-deployments`, labels, {
    ...common([{ group: 'apps', plural: 'deployments' }], username),
    variables: [...OWNER_VARIABLES, { name: 'pod', expression: 'object.spec.template.spec' }],
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
    variables: OWNER_VARIABLES,
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
    variables: OWNER_VARIABLES,
    validations: [ownerRule],
  });
  return [...deployments, ...services, ...others];
}
