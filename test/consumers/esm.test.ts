// An ES module TypeScript project ("type": "module", NodeNext) with the packed library installed:
// it compiles with tsc, its own test (node:test) passes and it synthesizes.
import { describe, expect, test } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { freshDir, installedVersion, must, packLibrary, removeDir } from './consumer.js';

type Obj = { kind: string; metadata: { name: string }; spec: Record<string, unknown> };

const CHART_TS = `import { Chart, type ChartProps } from 'cdk8s';
import { ContainerApp, ImagePullPolicy } from 'cdk8s-appkind';
import type { Construct } from 'constructs';

export class ShopChart extends Chart {
  readonly echo: ContainerApp;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    this.echo = new ContainerApp(this, 'echo', {
      name: 'echo',
      image: 'takeyan/flask:0.0.3',
      port: 5000,
      imagePullPolicy: ImagePullPolicy.NEVER,
      securityContext: { runAsNonRoot: true, runAsUser: 1000 },
    });
  }
}
`;
const MAIN_TS = `import { App } from 'cdk8s';
import { ShopChart } from './chart.js';

const app = new App();
new ShopChart(app, 'shop');
app.synth();
`;
const TEST_TS = `import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Testing } from 'cdk8s';
import { ContainerApp } from 'cdk8s-appkind';
import { ShopChart } from './chart.js';

test('the chart renders echo-deployment and echo-svc', () => {
  const chart = new ShopChart(Testing.app(), 'test');
  const names = Testing.synth(chart).map((o) => \`\${o.kind}/\${o.metadata.name}\`);
  assert.deepEqual(names, ['Deployment/echo-deployment', 'Service/echo-svc']);
  assert.equal(chart.echo.serviceName, ContainerApp.objectNames('echo').service);
});
`;

describe('ESM TypeScript project (NodeNext)', () => {
  test('installs the tarball; tsc, its own node:test test and synth pass', async () => {
    const tarball = await packLibrary();
    const project = freshDir('esm');
    try {
      writeFileSync(join(project, 'package.json'), JSON.stringify({
        name: 'esm-consumer', private: true, type: 'module',
        // The compiled test only, TAP output: Node.js >= 23 would also run chart.test.ts (type stripping) and print spec output.
        scripts: { build: 'tsc', test: 'node --test --test-reporter=tap chart.test.js', synth: 'node main.js' },
      }, null, 2));
      writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, types: ['node'] },
        include: ['*.ts'],
      }, null, 2));
      writeFileSync(join(project, 'chart.ts'), CHART_TS);
      writeFileSync(join(project, 'main.ts'), MAIN_TS);
      writeFileSync(join(project, 'chart.test.ts'), TEST_TS);
      // Peer dependencies (cdk8s, cdk8s-plus-27, constructs) come with the tarball, as npm installs peers.
      await must('npm', ['install', '--no-audit', '--no-fund', tarball,
        `typescript@${installedVersion('typescript')}`, `@types/node@${installedVersion('@types/node')}`], project);
      for (const peer of ['cdk8s', 'cdk8s-plus-27', 'constructs']) {
        expect(JSON.parse(readFileSync(join(project, 'node_modules', peer, 'package.json'), 'utf8')).name).toBe(peer);
      }
      await must('npm', ['run', 'build'], project);
      const nodeTest = await must('npm', ['test'], project);
      expect(nodeTest).toMatch(/# pass 1/);
      expect(nodeTest).toMatch(/# fail 0/);
      await must('npm', ['run', 'synth'], project);
      const objs = parseAllDocuments(readFileSync(join(project, 'dist', 'shop.k8s.yaml'), 'utf8')).map((d) => d.toJS() as Obj);
      expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Deployment/echo-deployment', 'Service/echo-svc']);
      const container = (objs[0]!.spec.template as { spec: { containers: Record<string, unknown>[] } }).spec.containers[0]!;
      expect(container).toMatchObject({ imagePullPolicy: 'Never', securityContext: { runAsNonRoot: true, runAsUser: 1000 } });
    } finally {
      removeDir(project);
    }
  }, 10 * 60_000);
});
