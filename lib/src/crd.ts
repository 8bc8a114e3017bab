import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { ContainerApp } from './app';
import { AppKind, AppKindVersion } from './appkind';
import { conditionSchema } from './condition-schema';
import { ServiceType } from './exposure';
import { ImagePolicy } from './imagepolicy';

/** Props of an {@link AppKindCrd}. */
export interface AppKindCrdProps {
  /** The kind to define. */
  readonly appKind: AppKind;
  /**
   * Categories for `kubectl get <category>`.
   * @default ["appkind"]
   */
  readonly categories?: string[];
}

/**
 * The CustomResourceDefinition of an app kind: a structural schema the API server enforces, the status
 * and scale subresources (so `kubectl scale` and a HorizontalPodAutoscaler work), and printer columns.
 *
 * @example
 * import { App, Chart } from 'cdk8s';
 * import { AppKindCrd } from 'cdk8s-appkind';
 *
 * const app = new App();
 * // The CRD "echoflasks.swallowlab.com": `kubectl apply` a CR of kind EchoFlask once it is installed.
 * new AppKindCrd(new Chart(app, 'crds'), 'echoflask', {
 *   appKind: {
 *     group: 'swallowlab.com', version: 'v1alpha1', kind: 'EchoFlask', plural: 'echoflasks',
 *     image: 'takeyan/flask:0.0.3', port: 5000, appName: 'echoflask',
 *     allowedImages: ['takeyan/flask:*'],
 *   },
 * });
 * app.synth();
 */
export class AppKindCrd extends Construct {
  /** Default largest `spec.size` (`AppKind.maxSize`). */
  public static readonly DEFAULT_MAX_SIZE = 100;
  /** Longest `spec.image`: far above real references, and it bounds the cost of the image policy's CEL rule. */
  public static readonly MAX_IMAGE_LENGTH = 512;
  /**
   * Longest name of a resource of an app kind: its Service `<name>-svc` must be a DNS-1035 label (63
   * characters), its Deployment `<name>-deployment` a DNS-1123 subdomain (253), and the name is also a
   * label value (63). The tightest of these wins.
   */
  public static readonly MAX_NAME_LENGTH = Math.min(
    63 - (ContainerApp.objectNames('').service.length),
    253 - (ContainerApp.objectNames('').deployment.length),
    63,
  );
  /** What a resource's name must match so its Service name is a DNS-1035 label. */
  public static readonly NAME_PATTERN = '^[a-z]([-a-z0-9]*[a-z0-9])?$';

  /** Name of an app kind's CRD, `<plural>.<group>`. */
  public static nameOf(appKind: AppKind): string {
    return `${appKind.plural}.${appKind.group}`;
  }

  /** Short names of an app kind: `AppKind.shortNames`, or the initials of the kind's words when there are two or more. */
  public static shortNamesOf(appKind: AppKind): string[] {
    if (appKind.shortNames) return appKind.shortNames;
    const initials = (appKind.kind.match(/[A-Z]/g) ?? []).join('').toLowerCase();
    return initials.length >= 2 ? [initials] : [];
  }

  /**
   * The versions of an app kind's API with their defaults filled in: `AppKind.versions`, or `version`
   * alone, served and stored. Throws when the list has no storage version or more than one, names a
   * version twice, or leaves `version` out or not served.
   */
  public static versionsOf(appKind: AppKind): AppKindVersion[] {
    if (!appKind.versions) return [{ name: appKind.version, served: true, storage: true }];
    const problem = AppKindCrd.versionsProblemOf(appKind);
    if (problem) throw new Error(`AppKind ${appKind.kind}: versions ${problem}`);
    return appKind.versions.map(withDefaults);
  }

  /**
   * What is wrong with an app kind's `versions` (a phrase that follows "versions" and ends in the fix),
   * or undefined: exactly one storage version, served; each name once; `version` listed and served.
   */
  public static versionsProblemOf(appKind: AppKind): string | undefined {
    return appKind.versions ? versionsProblem(appKind.version, appKind.versions.map(withDefaults)) : undefined;
  }

  /** The version CRs of an app kind are stored at. */
  public static storageVersionOf(appKind: AppKind): string {
    return AppKindCrd.versionsOf(appKind).find((v) => v.storage)!.name;
  }

  /** The API version of an app kind's resources, `<group>/<version>`. */
  public static apiVersionOf(appKind: AppKind): string {
    return `${appKind.group}/${appKind.version}`;
  }

  /** The CRD object. */
  public readonly crd: k8s.KubeCustomResourceDefinition;

  constructor(scope: Construct, id: string, props: AppKindCrdProps) {
    super(scope, id);
    const kind = props.appKind;
    const shortNames = AppKindCrd.shortNamesOf(kind);
    const versions = AppKindCrd.versionsOf(kind);
    const openApiSchema = schema(kind);
    this.crd = new k8s.KubeCustomResourceDefinition(this, 'Resource', {
      metadata: { name: AppKindCrd.nameOf(kind) },
      spec: {
        group: kind.group,
        scope: 'Namespaced',
        names: {
          kind: kind.kind,
          listKind: `${kind.kind}List`,
          plural: kind.plural,
          singular: kind.kind.toLowerCase(),
          shortNames: shortNames.length > 0 ? shortNames : undefined,
          categories: props.categories ?? ['appkind'],
        },
        versions: versions.map((v) => ({
          name: v.name,
          served: v.served ?? true,
          storage: v.storage ?? false,
          schema: { openApiv3Schema: openApiSchema },
          subresources: {
            status: {},
            scale: { specReplicasPath: '.spec.size', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
          },
          additionalPrinterColumns: [
            { name: 'Size', type: 'integer', jsonPath: '.spec.size', description: 'Desired number of pods' },
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', description: 'The Ready condition: True once every pod of the current spec is ready' },
            { name: 'Pods', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Pods ready' },
            { name: 'NodePort', type: 'integer', jsonPath: '.status.nodePort', description: 'Port on every node' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            { name: 'Image', type: 'string', jsonPath: '.spec.image', priority: 1, description: `Image the resource asks for; empty: the kind's image, ${kind.image}` },
          ],
        })),
        // Every version has the same schema, so the API server converts by changing apiVersion alone.
        conversion: versions.length > 1 ? { strategy: 'None' } : undefined,
      },
    });
  }
}

const withDefaults = (v: AppKindVersion): Required<AppKindVersion> => ({ name: v.name, served: v.served ?? true, storage: v.storage ?? false });

function versionsProblem(version: string, list: Required<AppKindVersion>[]): string | undefined {
  if (list.length === 0) return 'is empty; list at least the version named by "version", or leave versions out';
  const twice = list.find((v, i) => list.findIndex((w) => w.name === v.name) !== i);
  if (twice) return `lists ${twice.name} twice; list each version once`;
  const stored = list.filter((v) => v.storage);
  if (stored.length !== 1) {
    return `has ${stored.length === 0 ? 'no' : stored.length} storage versions (${stored.map((v) => v.name).join(', ') || 'none'}); mark exactly one with storage: true`;
  }
  if (!stored[0]!.served) return `stores CRs at ${stored[0]!.name}, which is not served; serve the storage version`;
  const own = list.find((v) => v.name === version);
  if (!own) return `does not list ${version}, the kind's version; list it, or set version to one of ${list.map((v) => v.name).join(', ')}`;
  if (!own.served) return `does not serve ${version}, the kind's version (the one the operator reads CRs at); serve it, or set version to a served one`;
  return undefined;
}

/** `spec.image`, with the kind's image policy as a CEL rule the API server checks at admission. */
function imageSchema(kind: AppKind): k8s.JsonSchemaProps {
  const policy = new ImagePolicy(kind.image, kind.allowedImages);
  const allowed = policy.allowsAny ? 'Any image is allowed.' : `Allowed: ${policy.patterns.join(', ')} (a trailing * is a prefix).`;
  return {
    type: 'string',
    minLength: 1,
    maxLength: AppKindCrd.MAX_IMAGE_LENGTH,
    // An image reference has no whitespace; refusing it here names the field instead of a pull error later.
    pattern: '^[^\\s]+$',
    description: `Container image. ${allowed} Defaults to ${kind.image}.`,
    xKubernetesValidations: policy.allowsAny ? undefined : [{ rule: policy.celRule(), message: policy.message() }],
  };
}

function schema(kind: AppKind): k8s.JsonSchemaProps {
  const int = (description: string, minimum: number, maximum?: number): k8s.JsonSchemaProps =>
    ({ type: 'integer', format: 'int32', minimum, maximum, description });
  return {
    type: 'object',
    description: `${kind.kind} runs ${kind.image} (port ${kind.port}) as a Deployment behind a NodePort Service.`,
    // The children's names derive from the resource's name: refuse at admission a name they could not have,
    // rather than accept it and fail every apply later (Degraded ApplyFailed).
    xKubernetesValidations: [
      {
        rule: `self.metadata.name.size() <= ${AppKindCrd.MAX_NAME_LENGTH}`,
        message: `metadata.name must be at most ${AppKindCrd.MAX_NAME_LENGTH} characters: the Service "<name>-svc" is a DNS label of at most 63`,
      },
      {
        rule: `self.metadata.name.matches('${AppKindCrd.NAME_PATTERN}')`,
        message: 'metadata.name must start with a letter and hold only lowercase letters, digits and "-" (no "."): the Service "<name>-svc" is a DNS-1035 label',
      },
    ],
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: {
        type: 'object',
        default: {},
        properties: {
          size: { ...int('Number of pods (Deployment replicas).', 0, kind.maxSize ?? AppKindCrd.DEFAULT_MAX_SIZE), default: 1 },
          image: imageSchema(kind),
          port: int(`Container and Service port. Defaults to ${kind.port}.`, 1, 65535),
          ...(kind.serviceType === ServiceType.CLUSTER_IP ? {} : { nodePort: int('Fixed NodePort. Allocated by the API server when unset.', 30000, 32767) }),
          ...overrideSchemas(kind),
        },
      },
      status: {
        type: 'object',
        // The API server shows this on every read of a CR the operator has not written yet, the
        // create's own answer included: generation 1 not observed, which kstatus (Helm --wait, Flux,
        // kpt) reads as InProgress, not as Current the way it reads no status at all.
        default: { observedGeneration: 0 },
        properties: {
          nodes: { type: 'array', items: { type: 'string' }, description: 'Names of the pods, sorted.' },
          replicas: int('Pods that exist.', 0),
          readyReplicas: int('Pods that are ready.', 0),
          nodePort: int('The NodePort of the Service.', 0),
          selector: { type: 'string', description: 'Label selector of the pods (for the scale subresource).' },
          observedGeneration: { type: 'integer', format: 'int64', description: 'Generation of the spec last reconciled.' },
          conditions: {
            type: 'array',
            description: 'Ready, Progressing and Degraded; Reconciling or Stalled while Ready is False (kstatus).',
            xKubernetesListType: 'map',
            xKubernetesListMapKeys: ['type'],
            items: conditionSchema(),
          },
        },
      },
    },
  };
}

// Bounds on lists and strings keep the CEL rules below within the API server's cost budget.
const MAX_ITEMS = 64;
const MAX_STRING = 1024;
const QUANTITY_PATTERN = '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$';

const text = (description: string, maxLength = MAX_STRING): k8s.JsonSchemaProps => ({ type: 'string', maxLength, description });
const flag = (description: string): k8s.JsonSchemaProps => ({ type: 'boolean', description });
const named = (description: string, properties: { [name: string]: k8s.JsonSchemaProps }, required: string[]): k8s.JsonSchemaProps =>
  ({ type: 'object', description, required, properties });
/**
 * A schema as the API server reads it (`x-kubernetes-validations`, not `xKubernetesValidations`): what
 * goes under `items` is not typed by cdk8s, so it is not translated on output either.
 */
function raw(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(raw);
  if (typeof schema !== 'object' || schema === null) return schema;
  const entries = Object.entries(schema).filter(([, v]) => v !== undefined);
  return Object.fromEntries(entries.map(([k, v]) => [k === 'xKubernetesValidations' ? 'x-kubernetes-validations' : k, raw(v)]));
}

/** CEL: exactly one of these fields is set. */
const oneOf = (fields: string[], message: string) => ({ rule: `[${fields.map((f) => `has(self.${f})`).join(', ')}].filter(x, x).size() == 1`, message });

function envSchema(deny: string[]): k8s.JsonSchemaProps {
  const keyRef = (what: string) => named(`A key of a ${what} in the namespace.`, { name: text(`Name of the ${what}.`, 253), key: text('The key.', 253), optional: flag('Start even when missing.') }, ['name', 'key']);
  // The kind configuration allows only letters, digits, "-", "_" and "." in these names: safe in a CEL string.
  const denied = deny.map((n) => `'${n}'`).join(', ');
  return {
    type: 'array',
    maxItems: MAX_ITEMS,
    description: `Environment variables, merged into the kind's by name.${deny.length ? ` Reserved by the kind: ${deny.join(', ')}.` : ''}`,
    xKubernetesListType: 'map',
    xKubernetesListMapKeys: ['name'],
    xKubernetesValidations: deny.length ? [{ rule: `self.all(e, !(e.name in [${denied}]))`, message: `spec.env may not set ${deny.join(', ')}: the kind reserves ${deny.length > 1 ? 'them' : 'it'}` }] : undefined,
    items: raw({
      type: 'object',
      required: ['name'],
      xKubernetesValidations: [{ rule: '!(has(self.value) && has(self.valueFrom))', message: 'give value or valueFrom, not both' }],
      properties: {
        name: { ...text('Name of the variable.', 256), minLength: 1 },
        value: text('Plain value.', 32768),
        valueFrom: {
          type: 'object',
          description: 'A ConfigMap key, a Secret key or a pod field (exactly one).',
          xKubernetesValidations: [oneOf(['configMapKeyRef', 'secretKeyRef', 'fieldRef'], 'valueFrom needs exactly one of configMapKeyRef, secretKeyRef, fieldRef')],
          properties: {
            configMapKeyRef: keyRef('ConfigMap'),
            secretKeyRef: keyRef('Secret'),
            fieldRef: named('A field of the pod (Downward API).', { fieldPath: text('e.g. metadata.name.', 256), apiVersion: text('Defaults to v1.', 64) }, ['fieldPath']),
          },
        },
      },
    }),
  };
}

function envFromSchema(): k8s.JsonSchemaProps {
  const source = (what: string) => named(`Every key of a ${what} in the namespace.`, { name: text(`Name of the ${what}.`, 253), optional: flag('Start even when missing.') }, ['name']);
  return {
    type: 'array',
    maxItems: MAX_ITEMS,
    description: "Variables from every key of ConfigMaps and Secrets, added after the kind's.",
    items: raw({
      type: 'object',
      xKubernetesValidations: [oneOf(['configMapRef', 'secretRef'], 'envFrom needs exactly one of configMapRef, secretRef')],
      properties: { prefix: text('Prefix of every name.', 256), configMapRef: source('ConfigMap'), secretRef: source('Secret') },
    }),
  };
}

function resourcesSchema(maxCpu: string | undefined, maxMemory: string | undefined, kindName: string): k8s.JsonSchemaProps {
  const quantity = (resource: string, max: string | undefined): k8s.JsonSchemaProps => ({
    type: 'string',
    maxLength: 64,
    pattern: QUANTITY_PATTERN,
    description: `${resource} quantity${max ? `, at most ${max}` : ''}.`,
    xKubernetesValidations: max ? [{ rule: `quantity(self).compareTo(quantity('${max}')) <= 0`, message: `${resource} must be at most ${max} (the most a ${kindName} may ask)` }] : undefined,
  });
  const list = (what: string): k8s.JsonSchemaProps => ({
    type: 'object',
    description: what,
    properties: { cpu: quantity('cpu', maxCpu), memory: quantity('memory', maxMemory) },
  });
  return { type: 'object', description: "CPU and memory, merged into the kind's quantity by quantity.", properties: { requests: list('What the scheduler reserves.'), limits: list('The most the container may use.') } };
}

function podDisruptionBudgetSchema(): k8s.JsonSchemaProps {
  const count = (what: string): k8s.JsonSchemaProps => ({ type: 'string', maxLength: 16, pattern: '^[0-9]+%?$', description: `${what}: a number ("1") or a percentage ("50%").` });
  return {
    type: 'object',
    description: "A PodDisruptionBudget for the pods, replacing the kind's; give one of the two ({} is maxUnavailable \"1\").",
    properties: { minAvailable: count('Pods that must stay available'), maxUnavailable: count('Pods that may be unavailable') },
    xKubernetesValidations: [{ rule: '!(has(self.minAvailable) && has(self.maxUnavailable))', message: 'give minAvailable or maxUnavailable, not both' }],
  };
}

/** The spec fields a kind lets its CRs set (AppKind.overrides), with the kind's limits as schema and CEL rules. */
function overrideSchemas(kind: AppKind): { [name: string]: k8s.JsonSchemaProps } {
  const o = kind.overrides ?? {};
  const out: { [name: string]: k8s.JsonSchemaProps } = {};
  if (o.args) out.args = { type: 'array', maxItems: MAX_ITEMS, items: text('An argument.'), description: "Arguments of the entrypoint, replacing the kind's." };
  if (o.env) out.env = envSchema(o.env.deny ?? []);
  if (o.envFrom) out.envFrom = envFromSchema();
  if (o.resources) out.resources = resourcesSchema(o.resources.maxCpu, o.resources.maxMemory, kind.kind);
  if (o.podDisruptionBudget) out.podDisruptionBudget = podDisruptionBudgetSchema();
  if (o.serviceAccountName) out.serviceAccountName = { ...text("ServiceAccount of the pods, instead of the kind's.", 253), pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$' };
  return out;
}
