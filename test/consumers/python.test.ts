// Python: jsii-pacmak generates the package of the packed library, and the generated sources must
// byte-compile. Running them needs the jsii Python runtime and the cdk8s, cdk8s-plus-27 and constructs
// Python packages, which come only from PyPI (not reachable here); see docs/library.md.
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshDir, must, pacmak, removeDir, unpackLibrary } from './consumer.js';

describe('Python bindings', () => {
  test('jsii-pacmak generates the cdk8s_appkind package and its sources byte-compile', async () => {
    const work = freshDir('python');
    try {
      const library = await unpackLibrary(work);
      await pacmak('python', work, [library]);
      const python = join(work, 'python');
      const init = readFileSync(join(python, 'src', 'cdk8s_appkind', '__init__.py'), 'utf8');
      for (const cls of ['ContainerApp(', 'AppSettings:', 'AppKindCrd(', 'OperatorBundle(', 'ImagePullPolicy(', 'AppKindApiCrd(', 'AppKindObject(']) {
        expect(init).toContain(`class ${cls}`);
      }
      // The props structs extend the shared settings struct, as in TypeScript.
      expect(init).toContain('class ContainerAppProps(AppSettings):');
      expect(init).toContain('class AppKind(AppSettings):');
      expect(init).toMatch(/def object_names\(/);
      const setup = readFileSync(join(python, 'setup.py'), 'utf8');
      expect(setup).toContain('"name": "cdk8s-appkind"');
      expect(setup).toMatch(/"cdk8s-plus-27>=2\.9\.5/);
      await must('python3', ['-m', 'compileall', '-q', join(python, 'src')], work);
    } finally {
      removeDir(work);
    }
  }, 10 * 60_000);
});
