// The operator may create CRDs for AppKinds, a power close to cluster admin: a CRD in a built-in group,
// or a change to someone else's CRD, reaches every user of it. ValidatingAdmissionPolicies hold it to the
// API groups the install allows and to CRDs it made (labelled), and keep anyone else from deleting a CRD
// an AppKind still serves (its CRs, and the apps they own, would go with it).
// Internal to the library (not exported from index.ts): OperatorBundle renders it.
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { APPKIND_API, APPKIND_PARAM_KIND, list, policy, str, Validation } from './admission-policy';
/** The label on a CRD made for an AppKind: the AppKind's name. A CRD without it is foreign. */
export const APPKIND_LABEL = 'appkind.io/appkind';

/** Why `group` may not be an AppKind group, or undefined when it may: the built-in and the project's own groups. */
export function builtInGroupProblem(group: string): string | undefined {
  if (group === '' || !group.includes('.')) return `"${group}" is not a domain name (a CRD's group has at least one dot)`;
  for (const reserved of ['k8s.io', 'kubernetes.io']) {
    if (group === reserved || group.endsWith(`.${reserved}`)) return `"${group}" is a Kubernetes group (${reserved} and its subdomains are reserved)`;
  }
  if (group === APPKIND_API.group) return `"${group}" is the AppKind API's own group`;
  return undefined;
}

/** The same test in CEL, over the string expression `g`. */
const builtInGroupCel = (g: string) =>
  `${g} == '' || ${g} == 'k8s.io' || ${g}.endsWith('.k8s.io') || ${g} == 'kubernetes.io' || ${g}.endsWith('.kubernetes.io') || ${g} == ${str(APPKIND_API.group)}`;

/**
 * The CRD writes of `username` (creates, updates, status writes, deletes) are refused unless every
 * state of the CRD the write touches carries the AppKind label and a group of `kindGroups` (never a
 * built-in one), and the CRD it leaves is namespaced with no conversion webhook. Objects: the policy
 * `<name>-crds` and its binding.
 */
function operatorCrdPolicy(scope: Construct, name: string, labels: Record<string, string>, username: string, kindGroups: string[]): ApiObject[] {
  const fix = kindGroups.length === 0 ? 'kindGroups is empty, so the operator makes no CRD' : `kindGroups: ${kindGroups.join(', ')}`;
  // Each state of the CRD the write touches: the new one (CREATE, UPDATE) and the old one (UPDATE, DELETE).
  const each = (check: string) => `variables.touched.all(o, ${check})`;
  const validations: Validation[] = [
    {
      expression: each(`o.metadata.?labels[?${str(APPKIND_LABEL)}].orValue('') != ''`),
      message: `the operator writes only CRDs it made for an AppKind (label ${APPKIND_LABEL}); a CRD without it belongs to someone else: give the AppKind another group or kind, or delete that CRD first`,
    },
    {
      expression: each(`!(${builtInGroupCel('o.spec.group')})`),
      message: `the operator never writes a CRD of a Kubernetes group (k8s.io, kubernetes.io and their subdomains) or of ${APPKIND_API.group}: give the AppKind a group of your own`,
    },
    {
      expression: each(`o.spec.group in ${list(kindGroups)}`),
      message: `the operator writes CRDs only in the API groups the install allows (${fix}): add the AppKind's group to kindGroups (OperatorBundle kindGroups, Helm value kindGroups, APPKIND_KIND_GROUPS for npx cdk8s synth and npm run release) or give the AppKind one of them`,
    },
    {
      expression: "request.operation == 'DELETE' || (object.spec.scope == 'Namespaced' && object.spec.?conversion.?strategy.orValue('None') == 'None')",
      message: 'the operator makes only namespaced CRDs with no conversion webhook (the API server would send every CR to whatever a webhook names)',
    },
  ];
  return policy(scope, 'CrdPolicy', `${name}-crds`, labels, {
    failurePolicy: 'Fail',
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: ['apiextensions.k8s.io'],
          apiVersions: ['*'],
          // status too: storedVersions is written through it.
          resources: ['customresourcedefinitions', 'customresourcedefinitions/status'],
          operations: ['CREATE', 'UPDATE', 'DELETE'],
        },
      ],
    },
    matchConditions: [{ name: 'operator-service-account', expression: `request.userInfo.username == ${str(username)}` }],
    variables: [
      {
        name: 'touched',
        expression: "request.operation == 'CREATE' ? [object] : request.operation == 'DELETE' ? [oldObject] : [object, oldObject]",
      },
    ],
    validations,
  });
}

/**
 * Deleting a CRD labelled for an AppKind that exists is refused for everyone but `username` (the
 * operator deletes it for an AppKind deleted with deletionPolicy Delete). The policy is evaluated once
 * per AppKind (its binding selects them all as params) and refuses when one's name is the CRD's label.
 * Objects: the policy `<name>-appkind-crds` and its binding.
 */
function crdDeletionPolicy(scope: Construct, name: string, labels: Record<string, string>, username: string): ApiObject[] {
  const label = `oldObject.metadata.labels[${str(APPKIND_LABEL)}]`;
  return policy(
    scope,
    'AppKindCrdPolicy',
    `${name}-appkind-crds`,
    labels,
    {
      // Without the AppKind API installed the policy cannot load its params; only labelled CRDs are then refused.
      failurePolicy: 'Fail',
      paramKind: APPKIND_PARAM_KIND,
      matchConstraints: {
        resourceRules: [{ apiGroups: ['apiextensions.k8s.io'], apiVersions: ['*'], resources: ['customresourcedefinitions'], operations: ['DELETE'] }],
        objectSelector: { matchExpressions: [{ key: APPKIND_LABEL, operator: 'Exists' }] },
      },
      matchConditions: [{ name: 'not-the-operator', expression: `request.userInfo.username != ${str(username)}` }],
      validations: [
        {
          expression: `${label} != params.metadata.name`,
          message: `this CRD serves an AppKind that exists: deleting it would delete every CR of the kind and the apps they own. Delete the AppKind instead (kubectl delete appkinds <name>, with spec.deletionPolicy Delete to remove the CRD and its CRs)`,
          messageExpression: `'CRD ' + oldObject.metadata.name + ' serves AppKind ' + params.metadata.name + ': deleting it would delete every CR of the kind and the apps they own. Delete the AppKind instead (kubectl delete appkinds ' + params.metadata.name + ', with spec.deletionPolicy Delete to remove the CRD and its CRs)'`,
        },
      ],
    },
    // Every AppKind is a param; with none, nothing is protected and the delete goes through.
    { paramRef: { selector: {}, parameterNotFoundAction: 'Allow' } },
  );
}

/**
 * Renders, into `scope`, the ValidatingAdmissionPolicies and bindings on CustomResourceDefinitions:
 * `<name>-crds` (the CRD writes of the ServiceAccount `username` stay inside `kindGroups`, on CRDs it
 * labelled) and, with `kindGroups`, `<name>-appkind-crds` (no one else deletes the CRD of an AppKind
 * that exists). Returns the objects (cluster-scoped).
 */
export function addCrdAdmissionPolicies(scope: Construct, name: string, labels: Record<string, string>, username: string, kindGroups: string[]): ApiObject[] {
  // Without groups no AppKind gets a CRD; and while a policy's paramKind is a kind the API server does
  // not serve (no AppKind CRD), a CRD created meanwhile stayed unknown to OwnerReferencesPermissionEnforcement
  // for a while (403 "cannot find RESTMapping" on the first children: in-cluster.test.ts).
  const deletion = kindGroups.length === 0 ? [] : crdDeletionPolicy(scope, name, labels, username);
  return [...operatorCrdPolicy(scope, name, labels, username, kindGroups), ...deletion];
}
