// Regenerates the checked-in CRD YAML under crd/ (and the typed CR classes under imports/)
// from the kinds in examples/appkinds.yaml. Run with `npm run crd` after changing lib/src/crd.ts.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kindsFromFile } from 'appkind-operator/kinds';
import { crdFileName, crdYaml } from 'appkind-operator/kinds';

const root = join(import.meta.dirname, '..');
mkdirSync(join(root, 'crd'), { recursive: true });
for (const kind of kindsFromFile(join(root, 'examples', 'appkinds.yaml'))) {
  const file = join(root, 'crd', crdFileName(kind));
  writeFileSync(file, crdYaml(kind));
  console.log(`wrote ${file}`);
  // Outside the repo: `cdk8s import` would otherwise record the file in cdk8s.yaml.
  execFileSync(join(root, 'node_modules', '.bin', 'cdk8s'), ['import', file, '--check-upgrade=false', '--output', join(root, 'imports'), '--language', 'typescript'], {
    stdio: 'inherit', cwd: mkdtempSync(join(tmpdir(), 'appkind-import-')),
  });
}
