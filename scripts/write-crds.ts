// Regenerates the checked-in CRD YAML under crd/ (and the typed CR classes under lib/imports/)
// from the kinds in examples/appkinds.yaml. Run with `npm run crd` after changing lib/crd.ts.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kindsFromFile } from '../lib/config.js';
import { crdFileName, crdYaml } from '../lib/crd-yaml.js';

const root = join(import.meta.dirname, '..');
mkdirSync(join(root, 'crd'), { recursive: true });
for (const kind of kindsFromFile(join(root, 'examples', 'appkinds.yaml'))) {
  const file = join(root, 'crd', crdFileName(kind));
  writeFileSync(file, crdYaml(kind));
  console.log(`wrote ${file}`);
  execFileSync('npx', ['cdk8s', 'import', file, '--output', join(root, 'lib', 'imports'), '--language', 'typescript'], { stdio: 'inherit', cwd: root });
}
