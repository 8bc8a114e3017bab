// Pods of one image refused at admission in one namespace, as a policy of the cluster would refuse
// them (a ValidatingAdmissionPolicy and its binding): what stops a kind's rollout at its first wave.
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { eventually } from './cluster.js';

const API_VERSION = 'admissionregistration.k8s.io/v1';

/** Refuses the creation of pods of `image` in `ns` under the policy `name`; resolves once the API server does. */
export async function refusePodsOfImage(rest: RestClient, ns: string, name: string, image: string): Promise<void> {
  await rest.apply({
    apiVersion: API_VERSION, kind: 'ValidatingAdmissionPolicy', metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
        resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
      },
      validations: [{ expression: `!object.spec.containers.exists(c, c.image == '${image}')`, message: `${image} is not allowed to run` }],
    },
  }, 'admin');
  await rest.apply({ apiVersion: API_VERSION, kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec: { policyName: name, validationActions: ['Deny'] } }, 'admin');
  const probe = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe', namespace: ns }, spec: { containers: [{ name: 'c', image }] } };
  await eventually(`the policy ${name} refuses ${image}`, async () => {
    try {
      await rest.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: probe, query: { dryRun: 'All' } });
      return false;
    } catch (e) {
      return e instanceof ApiError && e.code === 422 && e.message.includes('is not allowed to run');
    }
  });
}

/** Removes the policy `name` and its binding (gone already is fine). */
export async function allowPodsAgain(rest: RestClient | undefined, name: string): Promise<void> {
  for (const kind of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy'])
    await rest?.delete({ apiVersion: API_VERSION, kind, metadata: { name } }).catch(() => undefined);
}
