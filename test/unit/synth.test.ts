import { describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { kindsFromFile, SAMPLE_KIND } from 'appkind-operator/kinds';
import { render } from '../../operator/kinds/render.js';
import { sampleResource } from '../../sample.js';

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

/** Runs `cdk8s synth` exactly as a user would, into a temp folder, and returns the files' documents. */
async function synth(env: Record<string, string> = {}): Promise<Record<string, unknown[]>> {
  const out = mkdtempSync(join(tmpdir(), 'appkind-synth-'));
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !['GROUPNAME', 'VERSION', 'CRKIND', 'IMAGENAME', 'CLUSTERPORT', 'APPNAME', 'APPKIND_CONFIG', 'APPKIND_KINDS'].includes(k)));
  await run('npx', ['cdk8s', 'synth', '--check-upgrade=false', '--output', out], { cwd: root, env: { ...clean, ...env } });
  const files: Record<string, unknown[]> = {};
  for (const f of readdirSync(out)) files[f] = parseAllDocuments(readFileSync(join(out, f), 'utf8')).map((d) => d.toJS());
  return files;
}

describe('cdk8s synth', () => {
  test('writes the sample app, the CRD and the sample CR; the app equals render() of the sample CR', async () => {
    const files = await synth();
    expect(Object.keys(files).sort()).toEqual(expect.arrayContaining(['echoflask-crd.k8s.yaml', 'echoflask-sample-app.k8s.yaml', 'echoflask-sample.k8s.yaml']));
    expect(files['echoflask-sample.k8s.yaml']).toEqual([{ apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', metadata: { name: 'example-echoflask' }, spec: { size: 3 } }]);
    expect(files['echoflask-crd.k8s.yaml']).toMatchObject([{ kind: 'CustomResourceDefinition', metadata: { name: 'echoflasks.swallowlab.com' } }]);
    const app = files['echoflask-sample-app.k8s.yaml']!;
    expect(app).toMatchObject([
      { kind: 'Deployment', metadata: { name: 'example-echoflask-deployment' }, spec: { replicas: 3, template: { spec: { containers: [{ image: 'takeyan/flask:0.0.3', ports: [{ containerPort: 5000 }] }] } } } },
      { kind: 'Service', metadata: { name: 'example-echoflask-svc' }, spec: { type: 'NodePort', ports: [{ port: 5000, targetPort: 5000 }] } },
    ]);
    expect(app).toEqual(render(SAMPLE_KIND, sampleResource(SAMPLE_KIND)));
  }, 120_000);

  test('the six variables give another kind\'s CRD, sample and app', async () => {
    const files = await synth({ GROUPNAME: 'maho.takara.org', VERSION: 'v1alpha1', CRKIND: 'Takara', IMAGENAME: 'memcached:1.6-alpine', CLUSTERPORT: '11211', APPNAME: 'takara' });
    expect(Object.keys(files).filter((f) => f.startsWith('echoflask'))).toEqual([]);
    expect(files['takara-crd.k8s.yaml']).toMatchObject([{ metadata: { name: 'takaras.maho.takara.org' }, spec: { group: 'maho.takara.org', names: { kind: 'Takara' } } }]);
    expect(files['takara-sample.k8s.yaml']).toEqual([{ apiVersion: 'maho.takara.org/v1alpha1', kind: 'Takara', metadata: { name: 'example-takara' }, spec: { size: 3 } }]);
    expect(files['takara-sample-app.k8s.yaml']).toMatchObject([
      { kind: 'Deployment', metadata: { name: 'example-takara-deployment' }, spec: { template: { spec: { containers: [{ name: 'takara', image: 'memcached:1.6-alpine' }] } } } },
      { kind: 'Service', metadata: { name: 'example-takara-svc' }, spec: { ports: [{ port: 11211 }] } },
    ]);
  }, 120_000);

  test('a config file gives every kind it lists', async () => {
    const files = await synth({ APPKIND_CONFIG: join(root, 'examples', 'appkinds.yaml') });
    expect(Object.keys(files)).toEqual(expect.arrayContaining(['echoflask-crd.k8s.yaml', 'takara-crd.k8s.yaml', 'takara-sample-app.k8s.yaml']));
  }, 120_000);

  test('bad configuration stops synth with a message naming the setting', async () => {
    await expect(synth({ GROUPNAME: 'maho.takara.org', VERSION: 'v1alpha1', CRKIND: 'takara', IMAGENAME: 'memcached', CLUSTERPORT: '11211', APPNAME: 'takara' }))
      .rejects.toThrow(/CRKIND "takara" is not a valid Kind/);
  }, 120_000);
});

describe('examples/', () => {
  test('the example CRs the README applies are the samples synth writes', async () => {
    const read = (f: string) => parseAllDocuments(readFileSync(join(root, 'examples', f), 'utf8')).map((d) => d.toJS());
    const kinds = kindsFromFile(join(root, 'examples', 'appkinds.yaml'));
    expect(read('example-echoflask.yaml')).toEqual([sampleResource(kinds[0]!)]);
    expect(read('example-takara.yaml')).toEqual([sampleResource(kinds[1]!)]);
  });
});
