// The README and docs/*.md against the repository, so they cannot go stale unnoticed: every relative
// link resolves (its #anchor too, by GitHub's heading slugs), every APPKIND_ setting is one the code
// reads, no deprecated unprefixed setting name is used as if current, every operator flag is one
// the operator parses, and every `npm run X` names a script of package.json. Also the Dockerfile's
// EXPOSE line against the operator's default ports.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { USAGE } from '../../operator/flags.js';
import { DEFAULT_HEALTH_PORT, DEFAULT_METRICS_PORT } from '../../operator/settings.js';
import { PREFIXED_SETTINGS, prefixed } from '../../operator/settings-env.js';

const root = join(import.meta.dirname, '..', '..');
const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];

/** The text outside fenced code blocks (blanked, so line numbers stay), for links and headings. */
function prose(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

/** GitHub's anchor for a heading (github-slugger): the rendered text, lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown file offers: its headings' slugs (repeats get -1, -2, ...) and explicit ids. */
function anchors(file: string): Set<string> {
  const text = prose(readFileSync(file, 'utf8'));
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(heading!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  for (const [tag] of text.matchAll(/<a\s[^>]*>/g)) for (const [, id] of tag.matchAll(/\b(?:id|name)="([^"]+)"/g)) out.add(id!);
  return out;
}

/** Relative link targets of a Markdown file: inline links and images, outside code. */
function links(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** The APPKIND_ names the code reads or writes: the prefixed settings and every quoted or env-read name in the sources. */
function knownSettings(): Set<string> {
  const known = new Set<string>(PREFIXED_SETTINGS.map(prefixed));
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.name === 'node_modules' || e.name === 'build' ? [] : e.isDirectory() ? walk(join(dir, e.name)) : /\.(ts|sh)$/.test(e.name) ? [join(dir, e.name)] : [],
    );
  // The tests' own variables (e.g. the one that re-records fixtures) count too; this file's bad samples do not.
  const sources = [...['operator', 'tools', 'scripts', 'bench', 'test', join('lib', 'src')].flatMap((d) => walk(join(root, d))), join(root, 'main.ts')]
    .filter((file) => file !== import.meta.filename);
  for (const file of sources) {
    for (const [, name] of readFileSync(file, 'utf8').matchAll(/(?:['"`.[]|\$\{?)(APPKIND_[A-Z0-9_]*[A-Z0-9])\b/g)) known.add(name!);
  }
  return known;
}

const scripts = new Set(Object.keys((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts));
const operatorFlags = new Set([...USAGE.matchAll(/^\s+--([a-z-]+)/gm)].map((m) => m[1]!));
const known = knownSettings();

/** Links of the file at `path` whose file or #anchor does not exist. */
function brokenLinks(path: string, markdown: string): string[] {
  return links(markdown).filter((target) => {
    const [file, anchor] = target.split('#') as [string, string | undefined];
    const to = file ? resolve(dirname(path), decodeURIComponent(file)) : path;
    if (!existsSync(to)) return true;
    if (anchor === undefined || !statSync(to).isFile() || !to.endsWith('.md')) return false;
    return !anchors(to).has(decodeURIComponent(anchor));
  });
}

const unknownSettings = (markdown: string): string[] =>
  [...new Set([...markdown.matchAll(/\bAPPKIND_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]))].filter((name) => !known.has(name));

/** Unprefixed names of earlier releases, outside paragraphs that say they are deprecated. */
function deprecatedUses(markdown: string): string[] {
  const old = new RegExp(`(?<![\\w-])(${PREFIXED_SETTINGS.join('|')})(?![\\w-])`, 'g');
  return markdown
    .split(/\n\s*\n/)
    .filter((paragraph) => !/deprecat/i.test(paragraph))
    .flatMap((paragraph) => [...paragraph.matchAll(old)].map((m) => `${m[1]} in: ${paragraph.trim().split('\n')[0]!.slice(0, 100)}`));
}

/** Flags given to the operator (`npm run operator -- ...`, `appkind-operator ...`) that it does not parse. */
function unknownFlags(markdown: string): string[] {
  const given = [...markdown.matchAll(/(?:npm run operator --|appkind-operator|build\/operator\/main\.js)((?: +--[a-z][\w-]*(?:[ =](?!-)[^\s`|]+)?)+)/g)];
  return given.flatMap((m) => [...m[1]!.matchAll(/--([a-z][\w-]*)/g)].map((f) => f[1]!)).filter((flag) => !operatorFlags.has(flag));
}

const missingScripts = (markdown: string): string[] =>
  [...markdown.matchAll(/\bnpm (?:run(?:-script)?(?: -s| --silent)? ([\w:-]*\w)|(start|test)\b)/g)].map((m) => m[1] ?? m[2]!).filter((script) => !scripts.has(script));

describe.each(docs)('%s', (doc) => {
  const path = join(root, doc);
  const markdown = readFileSync(path, 'utf8');

  it('links only to files and anchors that exist', () => expect(brokenLinks(path, markdown)).toEqual([]));
  it('names only APPKIND_ settings the code knows', () => expect(unknownSettings(markdown)).toEqual([]));
  it('uses no deprecated unprefixed setting name, except where it says it is deprecated', () => expect(deprecatedUses(markdown)).toEqual([]));
  it('gives the operator only flags it parses', () => expect(unknownFlags(markdown)).toEqual([]));
  it('runs only npm scripts package.json has', () => expect(missingScripts(markdown)).toEqual([]));
});

describe('the Dockerfile', () => {
  it("exposes the operator's default metrics and health ports", () => {
    const expose = /^EXPOSE (.+)$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))?.[1]?.split(/\s+/).map(Number);
    expect(expose).toEqual([DEFAULT_METRICS_PORT, DEFAULT_HEALTH_PORT]);
  });
});

describe('the checks themselves', () => {
  it('slug headings as GitHub does', () => {
    expect(slug("A CR's fields and status")).toBe('a-crs-fields-and-status');
    expect(slug('`npm start`: the local control plane')).toBe('npm-start-the-local-control-plane');
    expect(slug('Memory, by phase (N=300)')).toBe('memory-by-phase-n300');
    expect(slug('[The binary](x.md) and its cost')).toBe('the-binary-and-its-cost');
  });

  it('find what went stale in a sample, and pass what did not', () => {
    const sample = [
      'See [kinds](configuration.md#kinds-in-a-cluster), [gone](configuration.md#no-such-heading), [missing](nope.md), [web](https://example.com/x.md) and `[code](ignored.md)`.',
      '',
      'Set `APPKIND_WORKERS=4` or `APPKIND_NO_SUCH_SETTING=1`; `WORKERS=4` works too.',
      '',
      'The unprefixed `LOG_LEVEL` is deprecated.',
      '',
      '`npm run operator -- --workers 4 --no-such-flag x`, `npm run kinds`, `npm run no-such-script`, `npm start`.',
    ].join('\n');
    const path = join(root, 'docs', 'sample.md');
    expect(brokenLinks(path, sample)).toEqual(['configuration.md#no-such-heading', 'nope.md']);
    expect(unknownSettings(sample)).toEqual(['APPKIND_NO_SUCH_SETTING']);
    expect(deprecatedUses(sample)).toEqual(['WORKERS in: Set `APPKIND_WORKERS=4` or `APPKIND_NO_SUCH_SETTING=1`; `WORKERS=4` works too.']);
    expect(unknownFlags(sample)).toEqual(['no-such-flag']);
    expect(missingScripts(sample)).toEqual(['no-such-script']);
  });
});
