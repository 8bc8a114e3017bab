// kube-score (tools/kube-score: v1.20, built from the Go module proxy on first use and cached) on what
// the production example kind renders: no CRITICAL finding. On the sample kind it lists what remains,
// and each of those checks is explained in docs/configuration.md.
import { beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromFile, SAMPLE_KIND } from 'appkind-operator/kinds';
import { render, type AppResource } from '../../operator/kinds/render.js';
import { sampleResource } from '../../sample.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
/** scorecard.Grade: 1 CRITICAL, 5 WARNING, 7 almost OK, 10 OK. */
const CRITICAL = 1;
const OK = 10;

interface Check {
  readonly check: { readonly id: string };
  readonly grade: number;
  readonly skipped: boolean;
  readonly comments: { readonly summary: string }[] | null;
}
interface Scored {
  readonly object_name: string;
  readonly checks: Check[];
}

let kubeScore: string;

beforeAll(async () => {
  // The first run on a machine builds it (about two minutes on 2 cores with a cold Go cache).
  try {
    const { stdout } = await exec('bash', [join(root, 'tools', 'kube-score', 'build.sh')], { maxBuffer: 1 << 20 });
    kubeScore = stdout.trim().split('\n').pop()!;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`tools/kube-score/build.sh failed (it needs Go >= 1.26 and the Go module proxy): ${err.stderr || err.message}`);
  }
}, 1_200_000);

/** kube-score's verdicts on the objects `kind` renders for `cr`. */
async function score(kind: AppKind, cr: AppResource): Promise<Scored[]> {
  const dir = mkdtempSync(join(tmpdir(), 'kube-score-'));
  try {
    const file = join(dir, 'app.yaml');
    writeFileSync(file, render(kind, { ...cr, metadata: { ...cr.metadata, namespace: 'shop' } }).map((o) => stringify(o)).join('---\n'));
    // Exit status 1 means "CRITICAL found"; the JSON on stdout says which.
    const out = await exec(kubeScore, ['score', '--output-format', 'json', '--kubernetes-version', 'v1.37', file], { maxBuffer: 16 << 20 }).catch(
      (e: { code?: number; stdout?: string; stderr?: string }) => {
        if (e.code === 1 && e.stdout) return { stdout: e.stdout };
        throw new Error(`kube-score failed: ${e.stderr ?? String(e)}`);
      },
    );
    return JSON.parse(out.stdout) as Scored[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `check-id: summary; summary` of every finding at `grade`. */
function findings(scored: Scored[], grade: number): string[] {
  return scored.flatMap((o) =>
    o.checks.filter((c) => !c.skipped && c.grade === grade).map((c) => `${o.object_name} ${c.check.id}: ${(c.comments ?? []).map((x) => x.summary).join('; ')}`),
  );
}

/** Check ids at `grade`, sorted and unique. */
const idsAt = (scored: Scored[], grade: number) => [...new Set(scored.flatMap((o) => o.checks.filter((c) => !c.skipped && c.grade === grade).map((c) => c.check.id)))].sort();

describe('kube-score', () => {
  test('the production example (examples/production.yaml, its CR in production-crs.yaml) has no CRITICAL finding', async () => {
    const [kind] = kindsFromFile(join(root, 'examples', 'production.yaml'));
    const [cr] = parseAllDocuments(readFileSync(join(root, 'examples', 'production-crs.yaml'), 'utf8')).map((d) => d.toJS() as AppResource);
    const scored = await score(kind!, cr!);
    process.stderr.write(`kube-score on the production example, warnings:\n  ${findings(scored, 5).join('\n  ') || 'none'}\n`);
    expect(findings(scored, CRITICAL)).toEqual([]);
    // All five objects were scored, and the checks the new settings answer ran and passed.
    expect(scored.map((o) => o.object_name.split('/')[0]).sort()).toEqual(['Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'Service']);
    expect(idsAt(scored, OK)).toEqual(
      expect.arrayContaining([
        'container-ephemeral-storage-request-and-limit',
        'container-image-pull-policy',
        'container-resources',
        'container-security-context-user-group-id',
        'container-security-context-readonlyrootfilesystem',
        'deployment-has-host-podantiaffinity',
        'deployment-has-poddisruptionbudget',
        'networkpolicy-targets-pod',
        'pod-probes',
        'pod-topology-spread-constraints',
        'poddisruptionbudget-has-policy',
        'service-type',
      ]),
    );
  });

  test('the sample kind: the CRITICAL checks docs/configuration.md lists, and no other', async () => {
    const scored = await score(SAMPLE_KIND, sampleResource(SAMPLE_KIND));
    process.stderr.write(`kube-score on the sample kind, CRITICAL:\n  ${findings(scored, CRITICAL).join('\n  ')}\n`);
    const ids = idsAt(scored, CRITICAL);
    expect(ids).toEqual([
      'container-ephemeral-storage-request-and-limit',
      'container-image-pull-policy',
      'container-resources',
      'container-security-context-readonlyrootfilesystem',
      'container-security-context-user-group-id',
      'deployment-has-poddisruptionbudget',
      'pod-networkpolicy',
      'pod-probes',
    ]);
    const docs = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## kube-score'));
    for (const id of ids) expect(section).toContain(`\`${id}\``);
  });
});
