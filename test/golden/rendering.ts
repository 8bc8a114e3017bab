// What render() gives for every kind and CR of examples/ (and of test/golden/kinds.yaml and crs.yaml,
// the settings no example uses) and for the walkthrough's sample, as test/golden/render.yaml holds it; `npm run golden` writes the file, test/unit/golden.test.ts
// compares it object by object, so a change of what the operator applies is seen in review.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromFile, SAMPLE_KIND } from 'appkind-operator/kinds';
import { render, type AppResource, type KubeObject } from '../../operator/kinds/render.js';
import { sampleResource } from '../../sample.js';

const root = join(import.meta.dirname, '..', '..');
export const GOLDEN_FILE = join(root, 'test', 'golden', 'render.yaml');
export const UPDATE_HINT = 'update the golden with npm run golden in the same commit and add a CHANGELOG line naming the apps it rolls';

/** One CR of one kind, named by where the kind comes from. */
export interface GoldenCase {
  /** The kinds file (examples/...) or `the sample kind`. */
  readonly source: string;
  readonly kind: AppKind;
  readonly cr: AppResource;
}

/** One rendered object of one case. */
export interface GoldenObject {
  /** `<source>: <Kind> <namespace>/<CR>`: the comment heading the object's document. */
  readonly app: string;
  readonly object: KubeObject;
}

/** What the golden holds beside examples/: the kind settings and CR fields no example uses. */
const GOLDEN_INPUTS = ['test/golden/kinds.yaml', 'test/golden/crs.yaml'];

/** The kinds files (with `kinds:`, or AppKind documents) and CR files of examples/, then the golden's own two. */
export function inputFiles(): { kindFiles: string[]; crFiles: string[] } {
  const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.yaml')).sort().map((f) => `examples/${f}`);
  const files = [...examples, ...GOLDEN_INPUTS];
  const docs = (f: string) => parseAllDocuments(readFileSync(join(root, f), 'utf8')).map((d) => d.toJS() as Record<string, unknown> | null);
  // An AppKind document declares a kind as a kinds file does (kindsFromFile reads both).
  const appKind = (d: Record<string, unknown>) => d.kind === 'AppKind' && String(d.apiVersion).startsWith('appkind.io/');
  return {
    kindFiles: files.filter((f) => docs(f).some((d) => d !== null && ('kinds' in d || appKind(d)))),
    crFiles: files.filter((f) => docs(f).some((d) => d !== null && 'apiVersion' in d && 'kind' in d && !appKind(d))),
  };
}

/** The CRs of the CR files, each with the file it comes from, in the namespace `default` when they name none. */
export function inputCrs(): { file: string; cr: AppResource }[] {
  return inputFiles().crFiles.flatMap((file) =>
    parseAllDocuments(readFileSync(join(root, file), 'utf8')).map((d) => {
      const cr = d.toJS() as AppResource;
      return { file, cr: { ...cr, metadata: { ...cr.metadata, namespace: cr.metadata.namespace ?? 'default' } } };
    }),
  );
}

/**
 * Every case: for the sample kind and each kind of the kinds files, a CR that sets nothing (`bare`)
 * and each CR of that kind; for the sample kind also the walkthrough's sample CR as `npx cdk8s synth`
 * renders it (sample.ts, no namespace).
 */
export function goldenCases(): GoldenCase[] {
  const crs = inputCrs().map((c) => c.cr);
  const sources: [string, AppKind[]][] = [['the sample kind', [SAMPLE_KIND]], ...inputFiles().kindFiles.map((f): [string, AppKind[]] => [f, kindsFromFile(join(root, f))])];
  const cases: GoldenCase[] = [];
  for (const [source, kinds] of sources) {
    for (const kind of kinds) {
      const apiVersion = `${kind.group}/${kind.version}`;
      const bare: AppResource = { apiVersion, kind: kind.kind, metadata: { name: 'bare', namespace: 'default' } };
      const own = crs.filter((c) => c.kind === kind.kind && c.apiVersion === apiVersion);
      const sample = kind === SAMPLE_KIND ? [sampleResource(kind)] : [];
      for (const cr of [bare, ...own, ...sample]) cases.push({ source, kind, cr });
    }
  }
  return cases;
}

/** How a case is named in the golden file and in failures. */
export function appName(c: GoldenCase): string {
  const ns = c.cr.metadata.namespace;
  return `${c.source}: ${c.kind.kind} ${ns ? `${ns}/` : ''}${c.cr.metadata.name}`;
}

/** What render() gives now for every case. */
export function renderCases(cases = goldenCases()): GoldenObject[] {
  return cases.flatMap((c) => render(c.kind, c.cr).map((object) => ({ app: appName(c), object })));
}

/** An object's key in the comparison: its app, its kind and its name. */
export function objectKey(o: GoldenObject): string {
  return `${o.app} -> ${o.object.kind} ${o.object.metadata.name}`;
}

/** A short fingerprint of a Deployment's pod template: it changes exactly when the template the operator applies changes. */
export function templateHash(deployment: KubeObject): string {
  const template = (deployment.spec as { template?: unknown } | undefined)?.template;
  return createHash('sha256').update(canonicalJson(template)).digest('hex').slice(0, 12);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The pod template fingerprint of every app that has a Deployment, as the golden file's header lists them. */
export function templateHashes(objects: readonly GoldenObject[]): Map<string, string> {
  return new Map(objects.filter((o) => o.object.kind === 'Deployment').map((o) => [o.app, templateHash(o.object)]));
}

const HEADER = `# The rendering is a contract: what render() (operator/kinds/render.ts) gives, and so what the operator
# applies, for every kind and CR of examples/, test/golden/kinds.yaml and crs.yaml (the settings no
# example uses) and the walkthrough's sample (test/golden/rendering.ts).
# test/unit/golden.test.ts compares it object by object. A change here changes running apps at the next
# operator upgrade: ${UPDATE_HINT}.
# Written by \`npm run golden\`; never edit by hand.
#
# Pod templates (sha256 of each Deployment's spec.template, not Kubernetes's pod-template-hash): an app
# whose line changes gets a new template, which the Deployment controller rolls out when it is applied.
`;

/** The golden file's text for `objects`: the header with the pod template fingerprints, then one document an object. */
export function goldenText(objects: readonly GoldenObject[]): string {
  const hashes = [...templateHashes(objects)].map(([app, hash]) => `#   ${hash}  ${app}\n`).join('');
  const docs = objects.map((o) => `# ${o.app}\n${stringify(o.object)}`);
  return `${HEADER}${hashes}---\n${docs.join('---\n')}`;
}

/** The golden file's objects and its header's pod template fingerprints. */
export function parseGolden(text: string): { objects: GoldenObject[]; hashes: Map<string, string> } {
  const [header, ...docs] = text.split(/^---\n/m);
  const hashes = new Map([...(header ?? '').matchAll(/^# {3}([0-9a-f]{12}) {2}(.+)$/gm)].map((m) => [m[2]!, m[1]!]));
  const objects = docs.map((doc, i) => {
    const app = /^# (.+)\n/.exec(doc)?.[1];
    if (!app) throw new Error(`${GOLDEN_FILE}: document ${i + 1} has no '# <source>: <Kind> <CR>' line; ${UPDATE_HINT}`);
    return { app, object: parseAllDocuments(doc)[0]!.toJS() as KubeObject };
  });
  return { objects, hashes };
}

/** Every field path where `a` and `b` differ, with both values (`absent` when a side lacks it). */
export function fieldChanges(a: unknown, b: unknown, path = ''): string[] {
  const show = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v).slice(0, 120));
  if (Array.isArray(a) && Array.isArray(b)) {
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) => fieldChanges(a[i], b[i], `${path}[${i}]`)).flat();
  }
  const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isRecord(a) && isRecord(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    return keys.flatMap((k) => fieldChanges(a[k], b[k], path ? `${path}.${k}` : k));
  }
  return a === b ? [] : [`${path || '.'}: ${show(a)} -> ${show(b)}`];
}

/**
 * The differences between the golden objects and the ones rendered now, one line an object: added,
 * no longer rendered (the operator prunes it), or the fields that changed, saying when a change rolls
 * the app's pods (a Deployment's spec.template).
 */
export function goldenDifferences(golden: readonly GoldenObject[], now: readonly GoldenObject[]): string[] {
  const before = new Map(golden.map((o) => [objectKey(o), o]));
  const after = new Map(now.map((o) => [objectKey(o), o]));
  const out: string[] = [];
  for (const key of before.keys()) if (!after.has(key)) out.push(`${key}: no longer rendered (the operator would prune it)`);
  for (const [key, o] of after) {
    const old = before.get(key);
    if (!old) {
      out.push(`${key}: new (the operator would create it)`);
      continue;
    }
    const changes = fieldChanges(old.object, o.object);
    if (changes.length === 0) continue;
    const rolls = o.object.kind === 'Deployment' && changes.some((c) => c.startsWith('spec.template'));
    out.push(`${key}${rolls ? ' (rolls its pods)' : ''}:\n    ${changes.join('\n    ')}`);
  }
  return out;
}
