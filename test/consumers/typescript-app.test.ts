// A stock `cdk8s init typescript-app` project (CommonJS, ts-node, ts-jest, cdk8s-plus-33) with the
// packed library installed: its compile, its own jest test and its synth must pass.
import { describe, expect, test } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { cached, copyOf, installedVersion, must, packLibrary, removeDir, ROOT, run } from './consumer.js';

type Obj = { kind: string; metadata: { name: string }; spec?: Record<string, unknown>; data?: Record<string, string> };

const MAIN_TS = `import { Construct } from 'constructs';
import { App, Chart, ChartProps } from 'cdk8s';
import * as kplus from 'cdk8s-plus-33';
import { ContainerApp, ImagePullPolicy } from 'cdk8s-appkind';

export class MyChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = { }) {
    super(scope, id, props);

    new kplus.ConfigMap(this, 'settings', { data: { GREETING: 'hello' } });
    new ContainerApp(this, 'echo', {
      image: 'takeyan/flask:0.0.3',
      port: 5000,
      replicas: 2,
      args: ['--workers', '2'],
      env: [
        { name: 'GREETING', value: 'hello' },
        { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } },
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ],
      envFrom: [{ configMapRef: { name: 'settings' } }],
      readinessProbe: { httpGet: { path: '/healthz' }, periodSeconds: 5 },
      volumes: [{ name: 'cache', emptyDir: {} }],
      volumeMounts: [{ name: 'cache', mountPath: '/var/cache/app' }],
      securityContext: { readOnlyRootFilesystem: true },
      podDisruptionBudget: { minAvailable: '1' },
      imagePullPolicy: ImagePullPolicy.ALWAYS,
      resources: { requests: { cpu: '100m', memory: '64Mi' } },
    });
  }
}

const app = new App();
new MyChart(app, 'shop');
app.synth();
`;

// The template's own test, plus one that looks at what the construct rendered.
const MAIN_TEST_TS = `import {MyChart} from './main';
import {Testing} from 'cdk8s';

describe('Placeholder', () => {
  test('Empty', () => {
    const app = Testing.app();
    const chart = new MyChart(app, 'test-chart');
    const results = Testing.synth(chart)
    expect(results).toMatchSnapshot();
  });

  test('ContainerApp renders a Deployment and a NodePort Service beside the ConfigMap', () => {
    const results = Testing.synth(new MyChart(Testing.app(), 'test-chart'));
    expect(results.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service']);
    const service = results.find((o) => o.kind === 'Service');
    expect(service.spec.type).toBe('NodePort');
    expect(service.metadata.name).toMatch(/^test-chart-echo-[0-9a-f]{8}-svc$/);
  });
});
`;

describe('stock cdk8s typescript-app project', () => {
  test('installs the tarball; compile, its own jest test (CommonJS) and synth pass', async () => {
    const tarball = await packLibrary();
    const cli = installedVersion('cdk8s-cli');
    // The generated project (npm install done) is kept between runs; a copy is used each time.
    const cache = await cached(`typescript-app-cli${cli}`, async (parent) => {
      // The project is named after its directory.
      const dir = join(parent, 'shop');
      mkdirSync(dir);
      const init = await run(join(ROOT, 'node_modules', '.bin', 'cdk8s'), ['init', 'typescript-app', '--check-upgrade=false'], dir);
      if (init.code !== 0) {
        // Without internet, `cdk8s init` gets as far as `npm install`, then its `cdk8s import k8s`
        // step cannot download the Kubernetes schema. That step only, and nothing else, may fail.
        const output = init.stdout + init.stderr;
        expect(output).toContain('Command failed: npm run import');
        expect(output).toMatch(/ENOTFOUND|ECONNREFUSED|EAI_AGAIN|404|http error/);
      }
      expect(existsSync(join(dir, 'node_modules', 'cdk8s', 'package.json'))).toBe(true);
      expect(existsSync(join(dir, 'node_modules', 'cdk8s-plus-33', 'package.json'))).toBe(true);
    });
    const project = copyOf(join(cache, 'shop'), 'typescript-app');
    try {
      await must('npm', ['install', '--no-audit', '--no-fund', tarball], project);
      const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
      expect(pkg.dependencies['cdk8s-appkind']).toMatch(/^file:.*\.tgz$/);
      writeFileSync(join(project, 'main.ts'), MAIN_TS);
      writeFileSync(join(project, 'main.test.ts'), MAIN_TEST_TS);
      // What `cdk8s init` runs after the import step, then the project's test as a user runs it.
      await must('npm', ['run', 'compile'], project);
      await must('npm', ['run', 'test', '--', '-u'], project);
      const jest = await run('npm', ['test', '--', '--ci'], project);
      expect(`${jest.stdout}${jest.stderr}`).toMatch(/Tests:\s+2 passed, 2 total/);
      expect(jest.code).toBe(0);
      await must('npm', ['run', 'synth'], project);

      const objs = parseAllDocuments(readFileSync(join(project, 'dist', 'shop.k8s.yaml'), 'utf8')).map((d) => d.toJS() as Obj);
      expect(objs.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service']);
      const deployment = objs.find((o) => o.kind === 'Deployment')!;
      expect(deployment.metadata.name).toMatch(/^shop-echo-[0-9a-f]{8}-deployment$/);
      expect(deployment.spec!.replicas).toBe(2);
      const container = (deployment.spec!.template as { spec: { containers: Record<string, unknown>[] } }).spec.containers[0]!;
      expect(container).toMatchObject({
        image: 'takeyan/flask:0.0.3', imagePullPolicy: 'Always', args: ['--workers', '2'],
        env: [
          { name: 'GREETING', value: 'hello' },
          { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ],
        envFrom: [{ configMapRef: { name: 'settings' } }],
        readinessProbe: { httpGet: { path: '/healthz', port: 5000 }, periodSeconds: 5 },
        volumeMounts: [{ name: 'cache', mountPath: '/var/cache/app' }, { name: 'tmp', mountPath: '/tmp' }],
        resources: { requests: { cpu: '100m', memory: '64Mi' } },
      });
      const pod = (deployment.spec!.template as { spec: Record<string, unknown> }).spec;
      expect(pod.volumes).toEqual([{ name: 'cache', emptyDir: {} }, { name: 'tmp', emptyDir: {} }]);
      expect(objs.find((o) => o.kind === 'PodDisruptionBudget')!.spec).toMatchObject({ minAvailable: 1 });
      expect(objs.find((o) => o.kind === 'ConfigMap')!.data).toEqual({ GREETING: 'hello' });
    } finally {
      removeDir(project);
    }
  }, 15 * 60_000);
});
