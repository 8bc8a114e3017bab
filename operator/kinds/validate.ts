// The check of one app kind's settings, whatever their source (sources.ts): errors name the setting,
// where it was set (an env variable's name, `kinds[1] in appkinds.yaml`) and the fix.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { AppKind, AppKindCrd, AppKindOverrides, ImagePolicy, RolloutOptions } from 'cdk8s-appkind';
import { KIND_PROPERTIES, structuredSettingsSchema } from './schema.js';
import { render } from './render.js';

/** A configuration mistake, with the setting that is wrong and how to fix it in the message. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_1035_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const KIND = /^[A-Z][A-Za-z0-9]{0,62}$/;
const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;

/** One kind's settings as configured, before the checks. */
export type RawKind = Partial<Record<keyof AppKind, unknown>>;

/** Settings checked by hand below, with messages of their own; every other setting is checked by the schema. */
export const HAND_CHECKED = [
  'group',
  'version',
  'kind',
  'plural',
  'image',
  'port',
  'appName',
  'shortNames',
  'maxSize',
  'allowedImages',
  'runAsNonRoot',
  'runAsUser',
  'readOnlyRootFilesystem',
] as const;
const STRUCTURED = Object.keys(KIND_PROPERTIES).filter((k) => !(HAND_CHECKED as readonly string[]).includes(k));
/**
 * The schema check of the structured settings, compiled at its first use: ajv's compile costs the
 * operator ~14 MiB of RSS, which a kind without structured settings never needs.
 */
let structuredCheck: ValidateFunction | undefined;
const checkStructured = () =>
  (structuredCheck ??= new Ajv({ allErrors: false, strict: true, verbose: true }).compile(structuredSettingsSchema(STRUCTURED)));

/** `/env/0/valueFrom` as `env[0].valueFrom`. */
function settingPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => (/^[0-9]+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('')
    .replace(/^\./, '');
}

/**
 * The error to report: ajv stops at the first, except inside a oneOf (true, or an object), where each
 * branch reports; then the object branch's complaint (an unknown key) says more than "must be boolean".
 */
function firstError(errors: ErrorObject[]): ErrorObject {
  if (!errors.some((e) => e.keyword === 'oneOf')) return errors[0]!;
  return errors.find((e) => e.keyword !== 'type' && e.keyword !== 'oneOf') ?? errors.find((e) => e.keyword === 'oneOf')!;
}

/** How to write a value that does not match its setting's pattern. */
function patternFix(at: string): string {
  if (at.endsWith('mountPath')) return 'give an absolute path';
  if (/^podDisruptionBudget\./.test(at)) return 'give a number like "1" or a percentage like "50%" (quoted)';
  if (/^rollout\./.test(at)) return 'give a number of apps like 5, or a percentage from 1% to 100% like "10%" (quoted)';
  return 'give a Kubernetes quantity such as 500m or 128Mi';
}

/** One schema error as a sentence naming the setting and the fix. */
function schemaMessage(e: ErrorObject): string {
  const at = settingPath(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const allowed = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      return `${at ? `${at}.` : ''}${String(p.additionalProperty)} is not a known setting; remove it, or use one of: ${allowed.join(', ')}`;
    }
    case 'required':
      return `${at || 'the kind'} lacks ${String(p.missingProperty)}; add it`;
    case 'type':
      return `${at} must be ${String(p.type)}${p.type === 'string' ? '; quote the value' : ''}`;
    case 'enum':
      return `${at} must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'pattern':
      return `${at} does not match ${String(p.pattern)}; ${patternFix(at)}`;
    case 'oneOf':
      if (/^rollout\./.test(at)) return `${at} must be a number or a percentage; ${patternFix(at)}`;
      return `${at} must be true, false or an object of the documented fields`;
    default:
      return `${at} ${e.message ?? 'is not valid'}`;
  }
}

/** The CR fields a kind lets CRs set, with `true` written as `{}` and `false` as absent. */
function overridesOf(raw: unknown): AppKindOverrides | undefined {
  if (raw === undefined || raw === null) return undefined;
  const o = raw as Record<string, unknown>;
  const flag = (v: unknown) => (v === true ? true : undefined);
  const object = <T>(v: unknown): T | undefined => (v === true ? ({} as T) : v && typeof v === 'object' ? (v as T) : undefined);
  const out: AppKindOverrides = {
    args: flag(o.args),
    env: object(o.env),
    envFrom: flag(o.envFrom),
    resources: object(o.resources),
    podDisruptionBudget: flag(o.podDisruptionBudget),
    serviceAccountName: flag(o.serviceAccountName),
  };
  const set = Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
  return Object.keys(set).length > 0 ? (set as AppKindOverrides) : undefined;
}

/** The rollout settings with `maxConcurrent` as the string the library types it as (a file may give a number). */
function rolloutOf(raw: unknown): RolloutOptions | undefined {
  if (raw === undefined || raw === null) return undefined;
  const { maxConcurrent, progressDeadlineSeconds } = raw as { maxConcurrent?: number | string; progressDeadlineSeconds?: number };
  return {
    ...(maxConcurrent !== undefined ? { maxConcurrent: String(maxConcurrent) } : {}),
    ...(progressDeadlineSeconds !== undefined ? { progressDeadlineSeconds } : {}),
  };
}

/**
 * Checks one kind and fills in derived fields (plural, appName). `where` names the source of the
 * settings (e.g. "environment" or "kinds[1] in appkind.yaml") so the message points at it.
 */
export function validateAppKind(raw: RawKind, where: string, names: Partial<Record<keyof AppKind, string>> = {}): AppKind {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(
      `${where}: a kind must be a mapping of settings such as {group, version, kind, image, port}, got ${JSON.stringify(raw)}`,
    );
  }
  // A setting the operator does not know would otherwise be dropped without a word.
  const unknown = Object.keys(raw).filter((k) => !(k in KIND_PROPERTIES) && raw[k as keyof AppKind] !== undefined);
  if (unknown.length > 0) {
    throw new ConfigError(
      `${where}: ${unknown.map((k) => `"${k}"`).join(', ')} ${unknown.length > 1 ? 'are not known settings' : 'is not a known setting'}; remove it or use one of: ${Object.keys(KIND_PROPERTIES).join(', ')}`,
    );
  }
  const label = (field: keyof AppKind) => names[field] ?? field;
  const fail = (field: keyof AppKind, problem: string, fix: string): never => {
    throw new ConfigError(`${where}: ${label(field)} ${problem}; ${fix}`);
  };
  const str = (field: keyof AppKind, required: boolean): string | undefined => {
    const v = raw[field];
    if (v === undefined || v === null || v === '') {
      if (required) fail(field, 'is not set', `set ${label(field)}`);
      return undefined;
    }
    if (typeof v !== 'string') fail(field, `must be a string, got ${JSON.stringify(v)}`, `quote the value of ${label(field)}`);
    return v as string;
  };
  const int = (field: keyof AppKind, min: number, max: number): number | undefined => {
    const v = raw[field];
    if (v === undefined || v === null || v === '') return undefined;
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^[0-9]+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) {
      fail(field, `is ${JSON.stringify(v)}, not an integer from ${min} to ${max}`, `set ${label(field)} to a number in that range`);
    }
    return n;
  };

  const group = str('group', true)!;
  if (!DNS_SUBDOMAIN.test(group) || !group.includes('.')) {
    fail(
      'group',
      `"${group}" is not a DNS subdomain with a dot (like example.com)`,
      'use lower-case letters, digits, "-" and "." such as "swallowlab.com"',
    );
  }
  const version = str('version', true)!;
  if (!VERSION.test(version)) fail('version', `"${version}" is not a Kubernetes API version`, 'use a form like v1, v1alpha1 or v2beta3');
  const kind = str('kind', true)!;
  if (!KIND.test(kind))
    fail('kind', `"${kind}" is not a valid Kind`, 'use UpperCamelCase letters and digits starting with a capital, such as "EchoFlask"');
  const image = str('image', true)!;
  if (/\s/.test(image)) fail('image', `"${image}" contains white space`, 'give an image reference such as "nginx:1.27"');
  const port = int('port', 1, 65535);
  if (port === undefined) fail('port', 'is not set', `set ${label('port')} to the container port, 1-65535`);
  const plural = str('plural', false) ?? `${kind.toLowerCase()}s`;
  if (!DNS_LABEL.test(plural)) fail('plural', `"${plural}" is not a lower-case DNS label`, 'use lower-case letters, digits and "-"');
  const appName = str('appName', false) ?? kind.toLowerCase();
  if (!DNS_LABEL.test(appName))
    fail('appName', `"${appName}" is not a lower-case DNS label`, 'use lower-case letters, digits and "-", such as "echoflask"');
  const shortNames = shortNameList(raw.shortNames, label('shortNames'), where);
  const maxSize = int('maxSize', 0, 100_000) ?? AppKindCrd.DEFAULT_MAX_SIZE;
  const allowedImages = patterns('allowedImages', raw.allowedImages, label, fail);
  const bool = (field: keyof AppKind): boolean | undefined => {
    const v = raw[field];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v === 'boolean') return v;
    if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
    return fail(field, `is ${JSON.stringify(v)}, not true or false`, `set ${label(field)} to true or false`);
  };
  const runAsNonRoot = bool('runAsNonRoot');
  const readOnlyRootFilesystem = bool('readOnlyRootFilesystem');
  const runAsUser = int('runAsUser', 0, 2147483647);
  if (runAsNonRoot && runAsUser === 0)
    fail('runAsUser', `is 0 (root) while ${label('runAsNonRoot')} is true`, `give ${label('runAsUser')} a non-zero UID or leave it unset`);
  const structured = Object.fromEntries(STRUCTURED.filter((k) => raw[k as keyof AppKind] != null).map((k) => [k, raw[k as keyof AppKind]]));
  // None set: nothing to check (the schema requires none of them).
  const check = Object.keys(structured).length > 0 ? checkStructured() : undefined;
  if (check && !check(structured)) throw new ConfigError(`${where}: ${schemaMessage(firstError(check.errors!))}`);
  const { overrides: rawOverrides, rollout: rawRollout, ...settings } = structured;
  const overrides = overridesOf(rawOverrides);
  const rollout = rolloutOf(rawRollout);
  const appKind: AppKind = {
    group,
    version,
    kind,
    plural,
    image,
    port: port!,
    appName,
    maxSize,
    ...(shortNames !== undefined ? { shortNames } : {}),
    ...(allowedImages.length > 0 ? { allowedImages } : {}),
    ...(runAsNonRoot !== undefined ? { runAsNonRoot } : {}),
    ...(runAsUser !== undefined ? { runAsUser } : {}),
    ...(readOnlyRootFilesystem !== undefined ? { readOnlyRootFilesystem } : {}),
    ...settings,
    ...(overrides ? { overrides } : {}),
    ...(rollout ? { rollout } : {}),
  };
  const versionsProblem = AppKindCrd.versionsProblemOf(appKind);
  if (versionsProblem) throw new ConfigError(`${where}: ${label('versions')} ${versionsProblem}`);
  // The construct's own checks (one probe handler, mounts of listed volumes...), on a CR that sets nothing.
  try {
    render(appKind, { apiVersion: `${group}/${version}`, kind, metadata: { name: 'check' } });
  } catch (e) {
    throw new ConfigError(`${where}: ${(e as Error).message.replace(/^ContainerApp \S+: /, '')}`);
  }
  return appKind;
}

/** A comma-separated string (environment) as a list; anything else (a config file's value) as it is. */
function commaList(v: unknown): unknown {
  return typeof v === 'string'
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : v;
}

/** `kubectl get` short names: a list (config file) or a comma-separated string (environment); undefined: derived. */
function shortNameList(v: unknown, label: string, where: string): string[] | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const list = commaList(v);
  const bad = Array.isArray(list) ? list.find((n) => typeof n !== 'string' || !DNS_1035_LABEL.test(n)) : v;
  if (bad !== undefined) {
    throw new ConfigError(
      `${where}: ${label} has ${JSON.stringify(bad)}, not a lower-case DNS-1035 label; give short names such as "ef" (a list, or comma-separated), or [] for none`,
    );
  }
  return list as string[];
}

/** Image patterns: a list (config file) or a comma-separated string (environment). */
function patterns(
  field: keyof AppKind,
  v: unknown,
  label: (field: keyof AppKind) => string,
  fail: (field: keyof AppKind, problem: string, fix: string) => never,
): string[] {
  if (v === undefined || v === null || v === '') return [];
  const list = commaList(v);
  if (!Array.isArray(list) || list.some((p) => typeof p !== 'string')) {
    fail(
      field,
      `must be a list of image patterns, got ${JSON.stringify(v)}`,
      `write ${label(field)} as a list (or comma-separated) of patterns such as "registry.example.com/*"`,
    );
  }
  for (const p of list as string[]) {
    const problem = ImagePolicy.problemOf(p);
    if (problem)
      fail(
        field,
        `has the pattern ${problem}`,
        'give exact image references or prefixes ending in "*", such as "registry.example.com/*" or "takeyan/flask:*"',
      );
  }
  return list as string[];
}

/**
 * Kinds from a parsed config document (file contents or the APPKIND_KINDS JSON): each kind checked, then
 * the list's own rules (a kind listed twice, two kinds of one name, a short name shared).
 */
export function kindsFromDocument(doc: unknown, where: string): AppKind[] {
  const list = Array.isArray(doc) ? doc : (doc as { kinds?: unknown } | null)?.kinds;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError(`${where}: no kinds; write "kinds:" followed by a list of {group, version, kind, image, port}`);
  }
  const kinds = list.map((k, i) => validateAppKind((k ?? {}) as RawKind, `${where} kinds[${i}]`));
  const seen = new Set<string>();
  for (const k of kinds) {
    const id = `${k.plural}.${k.group}`;
    if (seen.has(id)) throw new ConfigError(`${where}: kind ${k.kind} (${id}) is listed twice; remove one`);
    // The operator keys its queue, logs and metrics by Kind, so one process serves each Kind name once.
    if (seen.has(k.kind)) throw new ConfigError(`${where}: two kinds are named ${k.kind}; give each kind its own name`);
    seen.add(id).add(k.kind);
  }
  // kubectl resolves a short name to one resource; two kinds sharing one would shadow each other.
  const shortNames = new Map<string, string>();
  for (const k of kinds) {
    for (const name of AppKindCrd.shortNamesOf(k)) {
      const other = shortNames.get(name);
      if (other)
        throw new ConfigError(
          `${where}: kinds ${other} and ${k.kind} both have the short name "${name}"; give one of them other shortNames`,
        );
      shortNames.set(name, k.kind);
    }
  }
  return kinds;
}
