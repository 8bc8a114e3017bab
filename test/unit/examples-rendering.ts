// What the sample kind and the kinds of examples/*.yaml render for the examples' CRs and for a CR that
// sets nothing, as one YAML stream: the rendering-unchanged test compares it with a copy written by
// the code before kinds could ask for a PodDisruptionBudget, a NetworkPolicy, spreading, anti-affinity,
// a pull policy, ephemeral storage or the Service port's name and protocol.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromFile, SAMPLE_KIND } from 'appkind-operator/kinds';
import { render, type AppResource } from '../../operator/kinds/render.js';

const root = join(import.meta.dirname, '..', '..');

/** The kinds files whose rendering must not change, and the CR files whose CRs they render. */
export const KIND_FILES = ['examples/appkinds.yaml', 'examples/real-apps.yaml'];
export const CR_FILES = ['examples/example-echoflask.yaml', 'examples/example-takara.yaml', 'examples/real-apps-crs.yaml'];

/** Every rendered object, each document headed by a comment naming the kind source and the CR. */
export function examplesRendering(): string {
  const crs = CR_FILES.flatMap((f) => parseAllDocuments(readFileSync(join(root, f), 'utf8')).map((d) => d.toJS() as AppResource));
  const sources: [string, AppKind[]][] = [['the sample kind', [SAMPLE_KIND]], ...KIND_FILES.map((f): [string, AppKind[]] => [f, kindsFromFile(join(root, f))])];
  const docs: string[] = [];
  for (const [source, kinds] of sources) {
    for (const kind of kinds) {
      const bare: AppResource = { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name: 'bare', namespace: 'default' } };
      const own = crs.filter((c) => c.kind === kind.kind && c.apiVersion === bare.apiVersion).map((c) => ({ ...c, metadata: { ...c.metadata, namespace: c.metadata.namespace ?? 'default' } }));
      for (const cr of [bare, ...own]) {
        for (const obj of render(kind, cr)) docs.push(`# ${source}: ${kind.kind} ${cr.metadata.name}\n${stringify(obj)}`);
      }
    }
  }
  return docs.join('---\n');
}
