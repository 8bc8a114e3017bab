// Java and .NET: jsii-pacmak generates both projects from the packed library (every jsii target is
// at least generated). Building them needs the jsii runtimes and the cdk8s and constructs packages from Maven
// Central and NuGet, which are not reachable here, so nothing of them is compiled; see docs/library.md.
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshDir, pacmak, removeDir, unpackLibrary } from './consumer.js';

describe('Java and .NET bindings', () => {
  test('jsii-pacmak generates the Maven and NuGet projects: every construct, the props extending AppSettings, the @example translated', async () => {
    const work = freshDir('java-dotnet');
    try {
      const library = await unpackLibrary(work);
      await pacmak('java', work, [library]);
      await pacmak('dotnet', work, [library]);

      const java = (file: string) => readFileSync(join(work, 'java', file), 'utf8');
      const pom = java('pom.xml');
      expect(pom).toContain('<groupId>cdk8s-appkind</groupId>');
      expect(pom).toContain('<artifactId>cdk8s-appkind</artifactId>');
      for (const cls of ['ContainerApp', 'AppKindCrd', 'OperatorBundle', 'AppKindApiCrd', 'AppKindObject']) {
        expect(java(`src/main/java/cdk8s/appkind/${cls}.java`)).toContain(`public class ${cls} extends software.constructs.Construct {`);
      }
      expect(java('src/main/java/cdk8s/appkind/ContainerAppProps.java')).toMatch(/public interface ContainerAppProps extends .*cdk8s\.appkind\.AppSettings \{/);
      // The construct's @example, translated by jsii-rosetta (the library ships its tablet).
      expect(java('src/main/java/cdk8s/appkind/ContainerApp.java')).toContain('ContainerApp.Builder.create(chart, "backend")');

      const cs = (file: string) => readFileSync(join(work, 'dotnet', 'Cdk8s.AppKind', file), 'utf8');
      expect(cs('Cdk8s.AppKind.csproj')).toContain('<PackageId>Cdk8s.AppKind</PackageId>');
      for (const cls of ['ContainerApp', 'AppKindCrd', 'OperatorBundle', 'AppKindApiCrd', 'AppKindObject']) {
        expect(cs(`Cdk8s/AppKind/${cls}.cs`)).toContain(`public class ${cls} : Constructs.Construct`);
      }
      expect(cs('Cdk8s/AppKind/IContainerAppProps.cs')).toContain('public interface IContainerAppProps : Cdk8s.AppKind.IAppSettings');
      expect(cs('Cdk8s/AppKind/ContainerApp.cs')).toContain('new ContainerApp(chart, "backend", new ContainerAppProps {');
    } finally {
      removeDir(work);
    }
  }, 10 * 60_000);
});
