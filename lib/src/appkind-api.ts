import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { Construct } from 'constructs';
import { AppKind } from './appkind';
import { conditionSchema } from './condition-schema';
import { AppKindCrd } from './crd';
import { DEFINITIONS, KIND_SCHEMA, Schema } from './kind-schema';

/** What deleting an AppKind object does to its kind's CRD. */
export enum AppKindDeletionPolicy {
  /** The operator stops serving the kind; the CRD, every CR and every app stay. */
  RETAIN = 'Retain',
  /** The operator deletes the CRD: the API server deletes every CR, and the garbage collector their apps. */
  DELETE = 'Delete',
}

/** Props of an {@link AppKindApiCrd}. */
export interface AppKindApiCrdProps {
  /**
   * Categories for `kubectl get <category>`.
   * @default ["appkind-api"]
   */
  readonly categories?: string[];
}

const DNS_SUBDOMAIN_WITH_DOT = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$';
const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const DNS_1035_LABEL = '^[a-z]([-a-z0-9]*[a-z0-9])?$';

/**
 * The kinds file's JSON Schema of one setting as a structural OpenAPI schema, the form a CRD takes:
 * definitions inlined, no `additionalProperties: false` (the API server prunes unknown fields
 * instead), a type on every enum, and a setting that is `true` or an object (`overrides.env`) kept
 * as given, for the operator's validation to judge.
 */
function structural(schema: Schema): Schema {
  const ref = schema.$ref as string | undefined;
  if (ref) return { ...structural(DEFINITIONS[ref.replace('#/definitions/', '')]!), ...(schema.description ? { description: schema.description } : {}) };
  if (schema.oneOf) return { description: schema.description, 'x-kubernetes-preserve-unknown-fields': true };
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, structural(v)]));
    } else if (key === 'items') {
      out.items = structural(value as Schema);
    } else if (key === 'additionalProperties') {
      if (typeof value === 'object') out.additionalProperties = structural(value as Schema);
    } else {
      out[key] = value;
    }
  }
  if (out.enum && !out.type) out.type = 'string';
  return out;
}

/** The spec of an AppKind: one kind of the kinds file, with the API server's own checks where it can make them, and its deletionPolicy. */
function specSchema(): Schema {
  const kind = structural(KIND_SCHEMA);
  const props = kind.properties as Record<string, Schema>;
  const set = (name: string, extra: Schema) => (props[name] = { ...props[name], ...extra });
  set('group', { pattern: DNS_SUBDOMAIN_WITH_DOT, maxLength: 253 });
  set('plural', { pattern: DNS_LABEL, maxLength: 63 });
  set('appName', { pattern: DNS_LABEL, maxLength: 63 });
  set('image', { pattern: '^[^\\s]+$', minLength: 1, maxLength: AppKindCrd.MAX_IMAGE_LENGTH });
  set('shortNames', { items: { type: 'string', pattern: DNS_1035_LABEL, maxLength: 63 } });
  props.deletionPolicy = {
    type: 'string',
    enum: [AppKindDeletionPolicy.RETAIN, AppKindDeletionPolicy.DELETE],
    default: AppKindDeletionPolicy.RETAIN,
    description: 'Deleting the AppKind: Retain (default) stops serving the kind and keeps its CRD, CRs and apps; Delete deletes the CRD, its CRs and their apps.',
  };
  const same = (field: string) => `(has(self.${field}) ? self.${field} : '') == (has(oldSelf.${field}) ? oldSelf.${field} : '')`;
  return {
    ...kind,
    description: "The kind's settings, as one kind of the kinds file (APPKIND_CONFIG), and deletionPolicy.",
    // A new group, kind or plural is another CRD: a new AppKind says so, and this one's CRD is not left behind unnoticed.
    'x-kubernetes-validations': [
      { rule: `self.group == oldSelf.group && self.kind == oldSelf.kind && ${same('plural')}`, message: 'group, kind and plural are immutable: they name the CRD; create another AppKind for another kind' },
    ],
  };
}

function statusSchema(): Schema {
  const strings = (description: string): Schema => ({ type: 'array', items: { type: 'string' }, description });
  return {
    type: 'object',
    properties: {
      observedGeneration: { type: 'integer', format: 'int64', description: 'Generation of the spec last acted on.' },
      conditions: {
        type: 'array',
        description: 'Ready: True while the kind is served as the spec says; False with a reason (InvalidSpec, CRDConflict, KindConflict, ...) and the fix.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
        items: conditionSchema(),
      },
      crd: { type: 'string', description: 'Name of the CRD of the kind, <plural>.<group>.' },
      servedVersions: strings('Versions the CRD serves.'),
      storageVersion: { type: 'string', description: 'The version the CRD stores.' },
      storedVersions: strings("The CRD's status.storedVersions: versions objects may still be stored in."),
      resources: { type: 'integer', format: 'int64', minimum: 0, description: 'Number of resources (CRs) of the kind.' },
      migration: {
        type: 'object',
        description: 'Moving the stored CRs to the storage version: how many of the total are migrated.',
        properties: {
          version: { type: 'string' },
          migrated: { type: 'integer', format: 'int64', minimum: 0 },
          total: { type: 'integer', format: 'int64', minimum: 0 },
        },
      },
      rollout: {
        type: 'object',
        description: "The kind's settings rolling out to its apps in waves (rollout.maxConcurrent at a time): the rollout going on, or the last one as it finished. Absent until the settings of the kind change while it has apps.",
        properties: {
          updated: { type: 'integer', format: 'int64', minimum: 0, description: 'Apps at the new pod template.' },
          inFlight: { type: 'integer', format: 'int64', minimum: 0, description: 'Apps of the current wave, rolling and not Ready yet.' },
          waiting: { type: 'integer', format: 'int64', minimum: 0, description: 'Apps waiting for their turn, or for a fix once the rollout stopped.' },
          failed: { type: 'integer', format: 'int64', minimum: 0, description: 'Apps of a wave that did not become Ready at the new pod template.' },
          failedApps: strings('The failed apps, namespace/name (reason).'),
          stopped: { type: 'string', description: "Why the rollout stopped (the failed apps named); absent while it goes on or once it is done. The kind's next change starts a new rollout." },
        },
      },
    },
  };
}

/**
 * The CustomResourceDefinition of the AppKind API (`appkinds.appkind.io`): one cluster-scoped
 * AppKind object declares one app kind (its spec is one kind of the kinds file, plus
 * `deletionPolicy`), and the operator makes and serves its CRD. The schema holds every check the API
 * server can make (required settings, patterns, enums, bounds); the operator checks the rest and says
 * Ready=False with the reason. `kubectl get appkinds` shows Ready, the CRD, its served and storage
 * versions, the number of CRs, the apps updated and waiting in the kind's rollout, and the age.
 * OperatorBundle renders it.
 *
 * @example
 * import { App, Chart } from 'cdk8s';
 * import { AppKindApiCrd } from 'cdk8s-appkind';
 *
 * const app = new App();
 * // The CRD "appkinds.appkind.io": `kubectl apply` AppKind objects once it is installed.
 * new AppKindApiCrd(new Chart(app, 'appkind-api'), 'api');
 * app.synth();
 */
export class AppKindApiCrd extends Construct {
  /** API group of the AppKind API. */
  public static readonly GROUP = 'appkind.io';
  /** API version of the AppKind API. */
  public static readonly VERSION = 'v1alpha1';
  /** `apiVersion` of an AppKind object. */
  public static readonly API_VERSION = `${AppKindApiCrd.GROUP}/${AppKindApiCrd.VERSION}`;
  /** Kind of an AppKind object. */
  public static readonly KIND = 'AppKind';
  /** Plural resource name, as in `kubectl get appkinds`. */
  public static readonly PLURAL = 'appkinds';
  /** Name of this CRD. */
  public static readonly CRD_NAME = `${AppKindApiCrd.PLURAL}.${AppKindApiCrd.GROUP}`;
  /** Label on a CRD the operator made for an AppKind; its value is the AppKind's name. A CRD without it is someone else's. */
  public static readonly APPKIND_LABEL = `${AppKindApiCrd.GROUP}/appkind`;
  /** Finalizer the operator holds on an AppKind until it has acted on its deletionPolicy. */
  public static readonly FINALIZER = `${AppKindApiCrd.GROUP}/kind`;
  /** Longest AppKind name: it is the value of the CRD's `appkind.io/appkind` label. */
  public static readonly MAX_NAME_LENGTH = 63;

  /** The CRD object. */
  public readonly crd: ApiObject;

  constructor(scope: Construct, id: string, props: AppKindApiCrdProps = {}) {
    super(scope, id);
    this.crd = new ApiObject(this, 'Resource', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: AppKindApiCrd.CRD_NAME },
      spec: {
        group: AppKindApiCrd.GROUP,
        scope: 'Cluster',
        names: {
          kind: AppKindApiCrd.KIND,
          listKind: `${AppKindApiCrd.KIND}List`,
          plural: AppKindApiCrd.PLURAL,
          singular: 'appkind',
          shortNames: ['ak'],
          categories: props.categories ?? ['appkind-api'],
        },
        versions: [{
          name: AppKindApiCrd.VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'AppKind declares an app kind: a CRD whose every resource runs one container image as a Deployment behind a Service.',
              required: ['spec'],
              'x-kubernetes-validations': [{
                rule: `self.metadata.name.size() <= ${AppKindApiCrd.MAX_NAME_LENGTH} && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')`,
                message: `metadata.name must be a lower-case DNS subdomain of at most ${AppKindApiCrd.MAX_NAME_LENGTH} characters (it labels the kind's CRD), such as echoflasks.swallowlab.com`,
              }],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: specSchema(),
                status: statusSchema(),
              },
            },
          },
          additionalPrinterColumns: [
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', description: 'True while the kind is served as its spec says' },
            { name: 'CRD', type: 'string', jsonPath: '.status.crd', description: 'The CRD of the kind' },
            { name: 'Served', type: 'string', jsonPath: '.status.servedVersions', description: 'Versions served' },
            { name: 'Storage', type: 'string', jsonPath: '.status.storageVersion', description: 'Version stored' },
            { name: 'CRs', type: 'integer', jsonPath: '.status.resources', description: 'Resources of the kind' },
            { name: 'Updated', type: 'integer', jsonPath: '.status.rollout.updated', description: 'Apps at the pod template of the kind\'s settings (its last rollout)' },
            { name: 'Waiting', type: 'integer', jsonPath: '.status.rollout.waiting', description: 'Apps waiting for their turn in the kind\'s rollout' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1, description: 'Why Ready is what it is' },
            { name: 'Rollout', type: 'string', jsonPath: '.status.rollout.stopped', priority: 1, description: 'Why the kind\'s rollout stopped, the failed apps named' },
          ],
        }],
      },
    });
    if (Chart.of(this).namespace) this.crd.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
  }
}

/** Props of an {@link AppKindObject}. */
export interface AppKindObjectProps {
  /** The kind to declare (the spec of the AppKind). */
  readonly appKind: AppKind;
  /**
   * Name of the AppKind object (a DNS subdomain of at most 63 characters).
   * @default the name of the kind's CRD, `<plural>.<group>`
   */
  readonly name?: string;
  /**
   * What deleting the AppKind does to the kind's CRD.
   * @default AppKindDeletionPolicy.RETAIN
   */
  readonly deletionPolicy?: AppKindDeletionPolicy;
}

/**
 * An AppKind object (`appkind.io/v1alpha1`): a chart declares an app kind in code, and the operator
 * (installed with OperatorBundle, which installs the AppKind API) makes its CRD and serves it once the
 * object is applied. No CRD of the kind is rendered here: the operator owns it.
 *
 * @example
 * import { App, Chart } from 'cdk8s';
 * import { AppKindObject } from 'cdk8s-appkind';
 *
 * const app = new App();
 * // The AppKind "echoflasks.swallowlab.com": once applied, `kubectl apply` CRs of kind EchoFlask.
 * new AppKindObject(new Chart(app, 'kinds'), 'echoflask', {
 *   appKind: {
 *     group: 'swallowlab.com', version: 'v1alpha1', kind: 'EchoFlask', plural: 'echoflasks',
 *     image: 'takeyan/flask:0.0.3', port: 5000, appName: 'echoflask',
 *   },
 * });
 * app.synth();
 */
export class AppKindObject extends Construct {
  /** The AppKind object. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: AppKindObjectProps) {
    super(scope, id);
    const name = props.name ?? AppKindCrd.nameOf(props.appKind);
    if (name.length > AppKindApiCrd.MAX_NAME_LENGTH) {
      throw new Error(`AppKindObject ${id}: the name "${name}" is longer than ${AppKindApiCrd.MAX_NAME_LENGTH} characters; give a shorter name`);
    }
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: AppKindApiCrd.API_VERSION,
      kind: AppKindApiCrd.KIND,
      metadata: { name },
      spec: { ...props.appKind, deletionPolicy: props.deletionPolicy ?? AppKindDeletionPolicy.RETAIN },
    });
    if (Chart.of(this).namespace) this.apiObject.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
  }
}
