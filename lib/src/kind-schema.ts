// The JSON Schema of the kind configuration file (appkinds.yaml): what an editor checks as the user types
// (schema/appkinds.schema.json, written by `npm run schema`), what the operator checks at start-up
// (operator/kinds/validate.ts checks every kind against it, then gives the semantic checks their own
// messages) and what the AppKind API's CRD turns into its structural schema (appkind-api.ts). Not
// exported from index.ts: jsii modules export no free functions or constants.

export type Schema = { [keyword: string]: unknown };

const str = (description: string, extra: Schema = {}): Schema => ({ type: 'string', description, ...extra });
const bool = (description: string): Schema => ({ type: 'boolean', description });
const int = (description: string, minimum: number, maximum?: number): Schema => ({
  type: 'integer',
  description,
  minimum,
  ...(maximum !== undefined ? { maximum } : {}),
});
const strings = (description: string): Schema => ({ type: 'array', description, items: { type: 'string' } });
/** An object with exactly these properties (unknown keys refused), `required` among them. */
const obj = (description: string, properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: 'object',
  description,
  properties,
  ...(required.length > 0 ? { required } : {}),
  additionalProperties: false,
});
const ref = (name: string): Schema => ({ $ref: `#/definitions/${name}` });
const list = (description: string, item: string): Schema => ({ type: 'array', description, items: ref(item) });

const QUANTITY = '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$';
const keyRef = (what: string) =>
  obj(
    `A key of a ${what}.`,
    { name: str(`Name of the ${what}.`), key: str('The key.'), optional: bool(`Start even when the ${what} or key is missing.`) },
    ['name', 'key'],
  );
const envSource = (what: string) =>
  obj(`Every key of a ${what}.`, { name: str(`Name of the ${what}.`), optional: bool(`Start even when the ${what} is missing.`) }, [
    'name',
  ]);
const keyToPath = obj(
  'A file from one key.',
  { key: str('The key.'), path: str('Relative path of the file.'), mode: int('File mode bits.', 0, 511) },
  ['key', 'path'],
);
const portField = int('Port; defaults to the kind port.', 1, 65535);

export const DEFINITIONS: Record<string, Schema> = {
  quantity: str('A Kubernetes quantity, e.g. 500m, 2, 128Mi.', { pattern: QUANTITY }),
  resourceList: obj('CPU, memory and ephemeral storage.', {
    cpu: ref('quantity'),
    memory: ref('quantity'),
    ephemeralStorage: ref('quantity'),
  }),
  resources: obj('Requests and limits, as in the Kubernetes container resources.', {
    requests: ref('resourceList'),
    limits: ref('resourceList'),
  }),
  envVar: obj(
    'An environment variable: value, or valueFrom one source.',
    {
      name: str('Name of the variable.', { minLength: 1 }),
      value: str('Plain value.'),
      valueFrom: obj('Where the value comes from; exactly one source.', {
        configMapKeyRef: keyRef('ConfigMap'),
        secretKeyRef: keyRef('Secret'),
        fieldRef: obj(
          'A field of the pod (Downward API).',
          { fieldPath: str('e.g. metadata.name, status.podIP.'), apiVersion: str('Defaults to v1.') },
          ['fieldPath'],
        ),
      }),
    },
    ['name'],
  ),
  envFromSource: obj('Every key of a ConfigMap or Secret as variables; one source.', {
    prefix: str('Prefix of every name.'),
    configMapRef: envSource('ConfigMap'),
    secretRef: envSource('Secret'),
  }),
  probe: obj('A probe: exactly one of httpGet, tcpSocket, exec.', {
    httpGet: obj('HTTP GET; 200-399 passes.', { path: str('Path; defaults to /.'), port: portField }),
    tcpSocket: obj('TCP connect.', { port: portField }),
    exec: obj('A command; exit 0 passes.', { command: { ...strings('Command and arguments.'), minItems: 1 } }, ['command']),
    initialDelaySeconds: int('Seconds before the first probe.', 0),
    periodSeconds: int('Seconds between probes.', 1),
    timeoutSeconds: int('Seconds before a probe times out.', 1),
    failureThreshold: int('Failures in a row that count as failed.', 1),
    successThreshold: int('Successes in a row that count as passed.', 1),
  }),
  volume: obj(
    'A volume: a name and exactly one source (no hostPath).',
    {
      name: str('Name (a DNS label).', { pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 }),
      emptyDir: obj('Scratch space for the pod.', { medium: { enum: ['', 'Memory'] }, sizeLimit: ref('quantity') }),
      configMap: obj(
        'A ConfigMap as files.',
        {
          name: str('Name of the ConfigMap.'),
          items: { type: 'array', items: keyToPath },
          defaultMode: int('File mode bits.', 0, 511),
          optional: bool('Start even when missing.'),
        },
        ['name'],
      ),
      secret: obj(
        'A Secret as files.',
        {
          secretName: str('Name of the Secret.'),
          items: { type: 'array', items: keyToPath },
          defaultMode: int('File mode bits.', 0, 511),
          optional: bool('Start even when missing.'),
        },
        ['secretName'],
      ),
      persistentVolumeClaim: obj('A PersistentVolumeClaim.', { claimName: str('Name of the claim.'), readOnly: bool('Mount read-only.') }, [
        'claimName',
      ]),
    },
    ['name'],
  ),
  volumeMount: obj(
    'Where a volume appears in the container.',
    {
      name: str('Name of the volume.'),
      mountPath: str('Absolute path.', { pattern: '^/' }),
      subPath: str('Path inside the volume.'),
      readOnly: bool('Mount read-only.'),
    },
    ['name', 'mountPath'],
  ),
  labelSelector: obj('Objects by exact labels.', {
    matchLabels: { type: 'object', description: 'Labels an object must all carry.', additionalProperties: { type: 'string' } },
  }),
  networkPolicyPeer: obj('Who may reach the port: podSelector and/or namespaceSelector, or ipBlock.', {
    podSelector: ref('labelSelector'),
    namespaceSelector: ref('labelSelector'),
    ipBlock: obj('An IP range.', { cidr: str('The range, e.g. 10.0.0.0/16.'), except: strings('Ranges inside it left out.') }, ['cidr']),
  }),
  topologySpreadConstraint: obj(
    "Spread the pods over the domains of a node label (counting the app's own pods).",
    {
      topologyKey: str('Node label, e.g. topology.kubernetes.io/zone.', { minLength: 1 }),
      maxSkew: int('Most the pod count may differ between two domains; defaults to 1.', 1),
      whenUnsatisfiable: { enum: ['ScheduleAnyway', 'DoNotSchedule'], description: 'Defaults to ScheduleAnyway.' },
      minDomains: int('Fewest eligible domains (with DoNotSchedule).', 1),
    },
    ['topologyKey'],
  ),
  localObjectReference: obj('An object in the same namespace.', { name: str('Its name.') }, ['name']),
  overrides: obj('What CRs of the kind may set beside size, image, port and nodePort.', {
    args: bool('CRs may set spec.args (replacing the kind args).'),
    env: {
      description: 'CRs may set spec.env (merged by name); true, or {deny: [names a CR may not set]}.',
      oneOf: [
        { type: 'boolean' },
        obj('Env a CR may set.', {
          deny: { type: 'array', description: 'Names a CR may not set.', items: { type: 'string', pattern: '^[-._a-zA-Z0-9]+$' } },
        }),
      ],
    },
    envFrom: bool('CRs may set spec.envFrom (added after the kind envFrom).'),
    resources: {
      description: 'CRs may set spec.resources; true, or {maxCpu, maxMemory} bounds.',
      oneOf: [{ type: 'boolean' }, obj('Bounds of what a CR may ask.', { maxCpu: ref('quantity'), maxMemory: ref('quantity') })],
    },
    podDisruptionBudget: bool("CRs may set spec.podDisruptionBudget (replacing the kind's)."),
    serviceAccountName: bool('CRs may set spec.serviceAccountName.'),
  }),
};

/** The settings of one kind, in the order the docs list them. */
export const KIND_PROPERTIES: Record<string, Schema> = {
  group: str('API group, a DNS subdomain with a dot, e.g. swallowlab.com.'),
  version: str('API version, e.g. v1alpha1.', { pattern: '^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$' }),
  kind: str('Kind, UpperCamelCase, e.g. EchoFlask.', { pattern: '^[A-Z][A-Za-z0-9]{0,62}$' }),
  versions: {
    type: 'array',
    description:
      'Every version of the API, one schema for all: several served, exactly one the storage version; version must be one of them, served. Defaults to version alone.',
    minItems: 1,
    items: obj(
      'One version of the API.',
      {
        name: str('Version, e.g. v1.', { pattern: '^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$' }),
        served: bool('Served by the API server; defaults to true.'),
        storage: bool('CRs are stored at it; exactly one version is. Defaults to false.'),
      },
      ['name'],
    ),
  },
  plural: str('Plural resource name; defaults to the kind in lower case + s.'),
  image: str('Container image of every CR unless it sets spec.image.'),
  port: int('Container and Service port.', 1, 65535),
  appName: str('App name in labels and the container name; defaults to the kind in lower case.'),
  shortNames: strings('Short names for kubectl, e.g. [ef]; defaults to the initials of a kind of two or more words, [] for none.'),
  maxSize: int('Largest spec.size; defaults to 100.', 0, 100000),
  allowedImages: strings('Images a CR may ask for besides the kind image: exact, or prefixes ending in *.'),
  runAsNonRoot: bool('Run as non-root with every capability dropped and seccomp RuntimeDefault ("restricted").'),
  runAsUser: int('UID the container runs as.', 0, 2147483647),
  runAsGroup: int('GID the container runs as.', 0, 2147483647),
  readOnlyRootFilesystem: bool('Mount the root filesystem read-only (a writable /tmp is added unless tmpVolume is false).'),
  tmpVolume: bool('Mount a writable emptyDir at /tmp when the root filesystem is read-only; defaults to true.'),
  command: strings('Entrypoint of the container (replaces the image ENTRYPOINT).'),
  args: strings('Arguments (replace the image CMD), e.g. ["-m", "64"].'),
  env: list('Environment variables: value, or valueFrom a ConfigMap key, Secret key or pod field.', 'envVar'),
  envFrom: list('Variables from every key of ConfigMaps and Secrets.', 'envFromSource'),
  readinessProbe: ref('probe'),
  livenessProbe: ref('probe'),
  startupProbe: ref('probe'),
  resources: ref('resources'),
  volumes: list('Volumes of the pods.', 'volume'),
  volumeMounts: list('Where the volumes appear in the container.', 'volumeMount'),
  imagePullSecrets: list('Secrets with registry credentials.', 'localObjectReference'),
  serviceAccountName: str('ServiceAccount the pods run as.'),
  automountServiceAccountToken: bool('Mount the ServiceAccount token; defaults to false.'),
  serviceType: { enum: ['NodePort', 'ClusterIP'], description: 'Service type; defaults to NodePort.' },
  portName: str('Name of the Service port (an IANA service name, e.g. http, tcp-memcache); defaults to http.'),
  appProtocol: str('appProtocol of the Service port, e.g. http, tcp, kubernetes.io/h2c; defaults to none.'),
  imagePullPolicy: {
    enum: ['Always', 'IfNotPresent', 'Never'],
    description: 'When the kubelet pulls the image; defaults to IfNotPresent.',
  },
  podDisruptionBudget: obj('A PodDisruptionBudget <name>-pdb for the pods; give one of the two.', {
    minAvailable: str('Pods that must stay available: a number ("1") or a percentage ("50%").', { pattern: '^[0-9]+%?$' }),
    maxUnavailable: str('Pods that may be unavailable: a number ("1") or a percentage ("50%"); defaults to "1".', {
      pattern: '^[0-9]+%?$',
    }),
  }),
  networkPolicy: obj(
    'A NetworkPolicy <name>-ingress: only these peers reach the port.',
    { from: list('Peers that may reach the port; [] lets none in.', 'networkPolicyPeer') },
    ['from'],
  ),
  topologySpreadConstraints: list('Spread the pods over the domains of node labels.', 'topologySpreadConstraint'),
  podAntiAffinity: obj('Keep the pods apart.', {
    topologyKey: str('Node label whose domains hold at most one pod; defaults to kubernetes.io/hostname.', { minLength: 1 }),
    required: bool('A hard rule (pods stay pending) rather than a preference; defaults to false.'),
  }),
  overrides: ref('overrides'),
  rollout: obj('How a change of the kind reaches its running apps: in waves, stopped by a failing one.', {
    maxConcurrent: {
      description:
        'Most apps rolling to a new pod template at once: a number (5) or a percentage of the kind\'s CRs ("10%", at least 1); "100%" rolls all at once; defaults to "10%".',
      oneOf: [
        { type: 'integer', minimum: 1 },
        { type: 'string', pattern: '^([1-9][0-9]*|[1-9][0-9]?%|100%)$' },
      ],
    },
    progressDeadlineSeconds: int('Seconds an app of a wave has to become Ready before the rollout stops; defaults to 300.', 1),
  }),
};

/** One kind of the file, and the spec of an AppKind object (beside its deletionPolicy). */
export const KIND_SCHEMA = obj('One app kind.', KIND_PROPERTIES, ['group', 'version', 'kind', 'image', 'port']);

/** A schema for only these settings of a kind: the ones operator/kinds/validate.ts has no hand-written check for. */
export function structuredSettingsSchema(names: string[]): Schema {
  return { ...obj('Settings of one app kind.', Object.fromEntries(names.map((n) => [n, KIND_PROPERTIES[n]!]))), definitions: DEFINITIONS };
}

/** The whole file: `kinds:` and a list of kinds (a bare list is accepted too). */
export const CONFIG_SCHEMA: Schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'cdk8s-appkind kinds (APPKIND_CONFIG)',
  definitions: { kind: KIND_SCHEMA, ...DEFINITIONS },
  oneOf: [
    obj('The kinds one operator serves.', { kinds: { type: 'array', minItems: 1, items: { $ref: '#/definitions/kind' } } }, ['kinds']),
    { type: 'array', minItems: 1, items: { $ref: '#/definitions/kind' } },
  ],
};

/** schema/appkinds.schema.json as written to disk. */
export function configSchemaJson(): string {
  return `${JSON.stringify(CONFIG_SCHEMA, null, 2)}\n`;
}
