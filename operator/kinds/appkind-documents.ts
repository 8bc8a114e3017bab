// A file of AppKind objects (what `kubectl apply -f` takes) read as a kinds file: APPKIND_CONFIG may
// point at either, so the file a user applies to a cluster is also what `npx cdk8s synth` and a local
// operator read.
import { AppKind, AppKindApiCrd } from 'cdk8s-appkind';
import { parseAllDocuments } from 'yaml';
import { ConfigError, kindsFromDocument, validateAppKind } from './validate.js';
import { KIND_PROPERTIES } from './schema.js';

type AppKindDocument = { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown }; spec?: Record<string, unknown> };

const isAppKind = (doc: unknown): doc is AppKindDocument =>
  typeof doc === 'object' && doc !== null && (doc as AppKindDocument).kind === AppKindApiCrd.KIND;

/**
 * The kinds of a YAML text whose documents are AppKind objects, each spec checked as the AppKind
 * API's operator checks it; undefined when the text holds no AppKind (a kinds file).
 */
export function kindsFromAppKindText(text: string, path: string): AppKind[] | undefined {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return undefined;
  const values = docs.map((d) => d.toJS() as unknown).filter((v) => v !== null && v !== undefined);
  if (!values.some(isAppKind)) return undefined;
  const kinds = values.map((doc, i) => {
    if (!isAppKind(doc)) {
      throw new ConfigError(
        `${path}: document ${i + 1} is not an AppKind; a file of AppKinds holds only AppKind documents (or use a kinds file, "kinds:")`,
      );
    }
    const name = typeof doc.metadata?.name === 'string' ? doc.metadata.name : `document ${i + 1}`;
    if (doc.apiVersion !== AppKindApiCrd.API_VERSION) {
      throw new ConfigError(
        `${path}: AppKind ${name} has apiVersion ${JSON.stringify(doc.apiVersion)}; write apiVersion: ${AppKindApiCrd.API_VERSION}`,
      );
    }
    const spec: Record<string, unknown> = { ...doc.spec };
    const policy = spec.deletionPolicy;
    if (policy !== undefined && policy !== 'Retain' && policy !== 'Delete') {
      throw new ConfigError(`${path}: AppKind ${name}: spec.deletionPolicy is ${JSON.stringify(policy)}; write Retain or Delete`);
    }
    delete spec.deletionPolicy;
    return validateAppKind(spec, `${path}: AppKind ${name}`, Object.fromEntries(Object.keys(KIND_PROPERTIES).map((k) => [k, `spec.${k}`])));
  });
  // The file's own checks: a kind listed twice, two kinds of one name, a short name shared.
  return kindsFromDocument(kinds, path);
}
