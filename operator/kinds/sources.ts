// Where app kinds are configured: a kinds file (APPKIND_CONFIG), APPKIND_KINDS, the walkthrough's
// variables, else the sample kind; each kind goes through validateAppKind (validate.ts).
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { AppKind } from 'cdk8s-appkind';
import { builtInGroupProblem } from 'cdk8s-appkind/build/crd-policy.js';
import { ConfigError, HAND_CHECKED, kindsFromDocument, validateAppKind } from './validate.js';
import { withPrefixedSettings } from '../settings-env.js';
import { kindsFromAppKindText } from './appkind-documents.js';

/** Environment variables that declare one kind, as in the original walkthrough. */
export const KIND_VARIABLES = ['GROUPNAME', 'VERSION', 'CRKIND', 'IMAGENAME', 'CLUSTERPORT', 'APPNAME'] as const;

/** The sample kind of the walkthrough, used when nothing is configured. */
export const SAMPLE_KIND: AppKind = {
  group: 'swallowlab.com',
  version: 'v1alpha1',
  kind: 'EchoFlask',
  plural: 'echoflasks',
  image: 'takeyan/flask:0.0.3',
  port: 5000,
  appName: 'echoflask',
};

/**
 * The kind declared by the walkthrough's six variables, or undefined when none of them is set.
 * A GROUPNAME without a dot gets `.com` appended (or `.${APPKIND_DOMAIN}`), as the walkthrough did.
 */
export function kindFromEnv(given: NodeJS.ProcessEnv): AppKind | undefined {
  const { env } = withPrefixedSettings(given);
  const set = KIND_VARIABLES.filter((v) => env[v] !== undefined && env[v] !== '');
  if (set.length === 0) return undefined;
  const missing = KIND_VARIABLES.filter((v) => !set.includes(v));
  if (missing.length > 0) {
    throw new ConfigError(
      `environment: ${set.join(', ')} set but ${missing.join(', ')} missing; set all six of ${KIND_VARIABLES.join(', ')} (or none, and use APPKIND_CONFIG)`,
    );
  }
  const settings = kindSettingsFromEnv(env.APPKIND_KIND_SETTINGS);
  const groupName = env.GROUPNAME!;
  const group = groupName.includes('.') ? groupName : `${groupName}.${env.APPKIND_DOMAIN || 'com'}`;
  return validateAppKind(
    {
      ...settings,
      group,
      version: env.VERSION,
      kind: env.CRKIND,
      image: env.IMAGENAME,
      port: env.CLUSTERPORT,
      appName: env.APPNAME,
      plural: env.APPKIND_PLURAL,
      shortNames: env.APPKIND_SHORTNAMES,
      maxSize: env.APPKIND_MAXSIZE,
      allowedImages: env.APPKIND_ALLOWED_IMAGES,
      runAsNonRoot: env.APPKIND_RUN_AS_NON_ROOT,
      runAsUser: env.APPKIND_RUN_AS_USER,
      readOnlyRootFilesystem: env.APPKIND_READ_ONLY_ROOT_FILESYSTEM,
    },
    'environment',
    {
      group: 'GROUPNAME',
      version: 'VERSION',
      kind: 'CRKIND',
      image: 'IMAGENAME',
      port: 'CLUSTERPORT',
      appName: 'APPNAME',
      plural: 'APPKIND_PLURAL',
      shortNames: 'APPKIND_SHORTNAMES',
      maxSize: 'APPKIND_MAXSIZE',
      allowedImages: 'APPKIND_ALLOWED_IMAGES',
      runAsNonRoot: 'APPKIND_RUN_AS_NON_ROOT',
      runAsUser: 'APPKIND_RUN_AS_USER',
      readOnlyRootFilesystem: 'APPKIND_READ_ONLY_ROOT_FILESYSTEM',
    },
  );
}

/**
 * APPKIND_KIND_SETTINGS: the settings beyond the walkthrough's variables (args, env, probes, volumes, overrides...)
 * as one YAML or JSON mapping, with the config file's keys.
 */
function kindSettingsFromEnv(text: string | undefined): Record<string, unknown> {
  if (!text) return {};
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`environment: APPKIND_KIND_SETTINGS is not valid YAML/JSON (${(e as Error).message})`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new ConfigError(
      `environment: APPKIND_KIND_SETTINGS must be a mapping such as '{args: ["-m", "64"]}', got ${JSON.stringify(doc)}`,
    );
  }
  const own = Object.keys(doc).filter((k) => (HAND_CHECKED as readonly string[]).includes(k));
  if (own.length > 0) {
    throw new ConfigError(
      `environment: APPKIND_KIND_SETTINGS sets ${own.join(', ')}, which have variables of their own; set those instead`,
    );
  }
  return doc as Record<string, unknown>;
}

/** Kinds listed in a YAML or JSON config file: `kinds: [{group, version, kind, image, port, ...}]`. */
export function kindsFromFile(path: string): AppKind[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(
      `APPKIND_CONFIG: cannot read ${path} (${(e as Error).message}); point APPKIND_CONFIG at an existing YAML or JSON file`,
    );
  }
  // A file of AppKind objects (what `kubectl apply -f` takes) serves as a kinds file too.
  const appKinds = kindsFromAppKindText(text, path);
  if (appKinds) return appKinds;
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`${path}: not valid YAML/JSON (${(e as Error).message})`);
  }
  return kindsFromDocument(doc, path);
}

/** The API groups AppKinds may define kinds in: APPKIND_KIND_GROUPS, comma-separated; none when unset. */
export function kindGroups(env: NodeJS.ProcessEnv): string[] {
  const groups = (withPrefixedSettings(env).env.APPKIND_KIND_GROUPS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const group of groups) {
    const problem = builtInGroupProblem(group);
    if (problem) throw new ConfigError(`APPKIND_KIND_GROUPS: ${problem}; list API groups of your own (e.g. apps.example.com)`);
  }
  return groups;
}

/** APPKIND_WATCH_NAMESPACE (or the deprecated WATCH_NAMESPACE): comma-separated namespaces; none means all. */
export function watchNamespaces(env: NodeJS.ProcessEnv): string[] {
  return (withPrefixedSettings(env).env.APPKIND_WATCH_NAMESPACE ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The configured kinds: APPKIND_CONFIG (a file), else APPKIND_KINDS (JSON, used by the in-cluster
 * Deployment), else the six walkthrough variables, else the sample kind.
 */
export function loadAppKinds(given: NodeJS.ProcessEnv = process.env): AppKind[] {
  const { env } = withPrefixedSettings(given);
  if (env.APPKIND_CONFIG) return kindsFromFile(env.APPKIND_CONFIG);
  if (env.APPKIND_KINDS) {
    let doc: unknown;
    try {
      doc = JSON.parse(env.APPKIND_KINDS);
    } catch (e) {
      throw new ConfigError(`APPKIND_KINDS: not valid JSON (${(e as Error).message})`);
    }
    return kindsFromDocument(doc, 'APPKIND_KINDS');
  }
  const fromEnv = kindFromEnv(env);
  return fromEnv ? [fromEnv] : [SAMPLE_KIND];
}
