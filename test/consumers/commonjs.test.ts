// A plain JavaScript project that loads the packed library with require(), and tests it with node:test.
import { describe, expect, test } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { freshDir, must, packLibrary, removeDir } from './consumer.js';

type Obj = { kind: string; metadata: { name: string; namespace?: string }; spec: Record<string, unknown> };

const CHART_JS = `const { Chart } = require('cdk8s');
const { ContainerApp, AppKindCrd } = require('cdk8s-appkind');

const kind = { group: 'example.com', version: 'v1', kind: 'Echo', plural: 'echoes', image: 'takeyan/flask:0.0.3', port: 5000, appName: 'echo' };

class ShopChart extends Chart {
  constructor(scope, id) {
    super(scope, id, { namespace: 'shop', disableResourceNameHashes: true });
    new AppKindCrd(this, 'crd', { appKind: kind });
    this.app = new ContainerApp(this, 'web', { image: 'nginx:1.27', port: 80, labels: { team: 'blue' } });
  }
}
module.exports = { ShopChart };
`;
const MAIN_JS = `const { App } = require('cdk8s');
const { ShopChart } = require('./chart');

const app = new App();
new ShopChart(app, 'shop');
app.synth();
`;
const TEST_JS = `const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Testing } = require('cdk8s');
const { AppKindCrd } = require('cdk8s-appkind');
const { ShopChart } = require('./chart');

test('the chart renders the CRD and the app', () => {
  const objs = Testing.synth(new ShopChart(Testing.app(), 'test'));
  assert.deepEqual(objs.map((o) => o.kind), ['CustomResourceDefinition', 'Deployment', 'Service']);
  assert.equal(objs[0].metadata.name, AppKindCrd.nameOf({ plural: 'echoes', group: 'example.com' }));
});
`;

describe('plain JavaScript project (require)', () => {
  test('installs the tarball; its own node:test test and synth pass', async () => {
    const tarball = await packLibrary();
    const project = freshDir('commonjs');
    try {
      writeFileSync(join(project, 'package.json'), JSON.stringify({
        // TAP output on every Node.js release (the default reporter is spec from Node.js 23 on).
        name: 'commonjs-consumer', private: true, scripts: { test: 'node --test --test-reporter=tap', synth: 'node main.js' },
      }, null, 2));
      writeFileSync(join(project, 'chart.js'), CHART_JS);
      writeFileSync(join(project, 'main.js'), MAIN_JS);
      writeFileSync(join(project, 'chart.test.js'), TEST_JS);
      await must('npm', ['install', '--no-audit', '--no-fund', tarball], project);
      const nodeTest = await must('npm', ['test'], project);
      expect(nodeTest).toMatch(/# pass 1/);
      expect(nodeTest).toMatch(/# fail 0/);
      await must('npm', ['run', 'synth'], project);
      const objs = parseAllDocuments(readFileSync(join(project, 'dist', 'shop.k8s.yaml'), 'utf8')).map((d) => d.toJS() as Obj);
      // Without a name prop the names come from the construct path, hash included (whatever the chart's
      // disableResourceNameHashes says), so they stay unique across charts.
      expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
        'CustomResourceDefinition/echoes.example.com',
        expect.stringMatching(/^Deployment\/shop-web-[0-9a-f]{8}-deployment$/),
        expect.stringMatching(/^Service\/shop-web-[0-9a-f]{8}-svc$/),
      ]);
      expect(objs[1]!.metadata.namespace).toBe('shop');
    } finally {
      removeDir(project);
    }
  }, 10 * 60_000);
});
