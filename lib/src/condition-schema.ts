// The schema of a status condition, shared by the CRDs of app kinds and of the AppKind API (not
// exported from index.ts: jsii modules export no free functions).
import { k8s } from 'cdk8s-plus-27';

/** The schema of a `metav1.Condition`, as controller-gen writes it: every field Kubernetes requires, with its bounds. */
export function conditionSchema(): k8s.JsonSchemaProps {
  return {
    type: 'object',
    description: 'Condition contains details for one aspect of the current state of this API Resource.',
    required: ['lastTransitionTime', 'message', 'reason', 'status', 'type'],
    properties: {
      lastTransitionTime: {
        type: 'string',
        format: 'date-time',
        description: 'The last time the condition transitioned from one status to another.',
      },
      message: {
        type: 'string',
        maxLength: 32768,
        description: 'A human readable message indicating details about the transition. This may be an empty string.',
      },
      observedGeneration: {
        type: 'integer',
        format: 'int64',
        minimum: 0,
        description: 'The .metadata.generation that the condition was set based upon.',
      },
      reason: {
        type: 'string',
        minLength: 1,
        maxLength: 1024,
        pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
        description: "A programmatic identifier indicating the reason for the condition's last transition, in CamelCase.",
      },
      status: { type: 'string', enum: ['True', 'False', 'Unknown'], description: 'Status of the condition, one of True, False, Unknown.' },
      type: {
        type: 'string',
        maxLength: 316,
        pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
        description: 'Type of condition in CamelCase or in foo.example.com/CamelCase.',
      },
    },
  };
}
