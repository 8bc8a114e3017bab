// The real-app kinds of examples/real-apps.yaml on the real control plane: their CRs reconcile into
// what render() gives; a CR's override outside the kind's allow-list or limits is refused at
// admission; an allowed one reaches the Deployment and an edit of it rolls the Deployment once; a
// field the kind stops allowing is released from the live objects; unchanged CRs get no write.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Container, V1Deployment } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { AppKind, AppKindCrd } from 'cdk8s-appkind';
import { kindsFromFile } from 'appkind-operator/kinds';
import { AppResource, render } from '../../operator/kinds/render.js';
import { firstDifference } from '../../operator/controller/diff.js';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually } from './cluster.js';
import { expectNoOperatorWrites, OperatorProcess, operatorWritesSince, startOperatorTest } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { spec?: Record<string, unknown>; status?: { observedGeneration?: number; conditions?: Condition[] } };

const root = join(import.meta.dirname, '..', '..');
const KINDS_FILE = join(root, 'examples', 'real-apps.yaml');
const kinds = new Map(kindsFromFile(KINDS_FILE).map((k) => [k.kind, k]));
const crsFile = parseAllDocuments(readFileSync(join(root, 'examples', 'real-apps-crs.yaml'), 'utf8')).map((d) => d.toJS() as AppResource);
const kindOf = (name: string): AppKind => kinds.get(name)!;

let rest: RestClient;
let ns: string;
let operator: OperatorProcess | undefined;

const cr = (kind: string, name: string, spec?: Record<string, unknown>) => crObject(kindOf(kind), ns, name, spec);
const deployment = (name: string) => rest.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-deployment`, namespace: ns } });
const containerOf = async (name: string): Promise<V1Container | undefined> => (await deployment(name))?.spec?.template.spec?.containers[0];
const condition = async (kind: string, name: string, type: string) => (await rest.get<Resource>(cr(kind, name)))?.status?.conditions?.find((c) => c.type === type);

/** The CR's Deployment holds everything render() gives, its rollout is observed and the CR is not Degraded. */
async function settled(kind: string, name: string): Promise<boolean> {
  const live = await rest.get<Resource>(cr(kind, name));
  const d = await deployment(name);
  if (!live || !d) return false;
  const desired = render(kindOf(kind), live as unknown as AppResource).find((o) => o.kind === 'Deployment')!;
  const conditions = live.status?.conditions ?? [];
  return firstDifference(desired.spec, d.spec) === undefined && d.status?.observedGeneration === d.metadata?.generation &&
    live.status?.observedGeneration === live.metadata?.generation && conditions.find((c) => c.type === 'Degraded')?.status === 'False';
}

async function refusal(obj: KubernetesObject, query: Record<string, string> = {}): Promise<ApiError> {
  const kind = kindOf(obj.kind!);
  const path = `/apis/${AppKindCrd.apiVersionOf(kind)}/namespaces/${ns}/${kind.plural}/${obj.metadata!.name}`;
  const error = await rest.request('PATCH', path, { body: obj, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'cr-author', force: 'true', ...query } })
    .then(() => undefined, (e: unknown) => e);
  if (!(error instanceof ApiError)) throw new Error(`expected the API server to refuse ${JSON.stringify(obj)}, got ${String(error)}`);
  return error;
}

beforeAll(async () => {
  ({ rest, ns, operator } = await startOperatorTest('realapps', [...kinds.values()], { APPKIND_CONFIG: KINDS_FILE }));
  for (const c of crsFile) await rest.apply({ ...c, metadata: { ...c.metadata, namespace: ns } } as KubernetesObject, 'cr-author');
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('the example kinds of examples/real-apps.yaml', () => {
  test('every CR of examples/real-apps-crs.yaml reconciles into what render() gives, field by field', async () => {
    for (const c of crsFile) await eventually(`${c.kind} ${c.metadata.name} settled`, () => settled(c.kind, c.metadata.name), 120_000);
    expect((await containerOf('sessions'))?.args).toEqual(['-m', '256']);
    expect((await containerOf('shop'))?.env).toEqual([
      { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'flask-db', key: 'url' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
      { name: 'LOG_LEVEL', value: 'debug' },
    ]);
    expect((await deployment('www'))?.spec?.template.spec?.volumes?.map((v) => v.name)).toEqual(['cache', 'run', 'tmp']);
    expect((await containerOf('petclinic'))?.resources).toEqual({ requests: { cpu: '500m', memory: '1536Mi' }, limits: { memory: '2Gi' } });
    expect((await containerOf('petclinic'))?.readinessProbe?.httpGet).toMatchObject({ path: '/actuator/health/readiness', port: 8080 });
  }, 180_000);
});

describe('a CR override outside the kind\'s allow-list or limits is refused at admission', () => {
  test('a variable the kind reserves: 422 naming spec.env', async () => {
    const error = await refusal(cr('FlaskApp', 'sneaky', { env: [{ name: 'DATABASE_URL', value: 'postgres://elsewhere' }] }));
    expect(error.code).toBe(422);
    expect(error.message).toContain('FlaskApp.shop.example.com "sneaky" is invalid: spec.env: Invalid value: spec.env may not set DATABASE_URL: the kind reserves it');
    expect(await rest.get(cr('FlaskApp', 'sneaky'))).toBeUndefined();
  });

  test('more memory or CPU than the kind allows, or no quantity at all: 422 naming the field', async () => {
    const memory = await refusal(cr('JvmApp', 'huge', { resources: { limits: { memory: '8Gi' } } }));
    expect(memory.code).toBe(422);
    expect(memory.message).toContain('spec.resources.limits.memory: Invalid value: "8Gi": memory must be at most 4Gi (the most a JvmApp may ask)');
    const cpu = await refusal(cr('Memcached', 'busy', { resources: { requests: { cpu: '1500m' } } }));
    expect(cpu.message).toContain('spec.resources.requests.cpu: Invalid value: "1500m": cpu must be at most 1 (the most a Memcached may ask)');
    const garbage = await refusal(cr('Memcached', 'garbage', { resources: { limits: { cpu: 'lots' } } }));
    expect(garbage.code).toBe(422);
    expect(garbage.message).toContain('spec.resources.limits.cpu');
  });

  test('a malformed variable: 422 naming it', async () => {
    const both = await refusal(cr('FlaskApp', 'both', { env: [{ name: 'A', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }));
    expect(both.code).toBe(422);
    expect(both.message).toContain('spec.env[0]: Invalid value: ');
    expect(both.message).toContain('give value or valueFrom, not both');
    const twoSources = await refusal(cr('FlaskApp', 'two', { env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.name' }, secretKeyRef: { name: 's', key: 'k' } } }] }));
    expect(twoSources.message).toContain('spec.env[0].valueFrom: Invalid value: ');
    expect(twoSources.message).toContain('valueFrom needs exactly one of configMapKeyRef, secretKeyRef, fieldRef');
  });

  test('a field the kind does not allow (env on Nginx, a security context, host networking) is refused by kubectl\'s strict validation and by apply, and pruned from a lax create', async () => {
    const sneaky = { env: [{ name: 'A', value: 'x' }], securityContext: { privileged: true }, hostNetwork: true };
    const strict = await refusal(cr('Nginx', 'strict', sneaky), { fieldValidation: 'Strict' });
    // Server-side apply names the first unknown field it meets, and which one comes first varies.
    expect(strict.message).toMatch(/\.spec\.(env|securityContext|hostNetwork): field not declared in schema/);
    const nginx = kindOf('Nginx');
    await rest.request('POST', `/apis/${AppKindCrd.apiVersionOf(nginx)}/namespaces/${ns}/${nginx.plural}`, {
      body: cr('Nginx', 'pruned', { size: 0, ...sneaky }), query: { fieldValidation: 'Ignore' },
    });
    expect((await rest.get<Resource>(cr('Nginx', 'pruned')))?.spec).toEqual({ size: 0 });
    await eventually('pruned settled', () => settled('Nginx', 'pruned'));
    expect((await containerOf('pruned'))?.env).toBeUndefined();
    expect((await containerOf('pruned'))?.securityContext).toMatchObject({ privileged: false, readOnlyRootFilesystem: true });
    // Rendered as false, which the server omits (omitempty).
    expect((await deployment('pruned'))?.spec?.template.spec?.hostNetwork ?? false).toBe(false);
  }, 120_000);
});

describe('changes roll out cleanly', () => {
  test('editing an allowed override rolls the Deployment once; then nothing is written', async () => {
    await eventually('sessions settled', () => settled('Memcached', 'sessions'), 120_000);
    const before = (await deployment('sessions'))!.metadata!.generation!;
    const since = new Date().toISOString();
    await rest.apply(cr('Memcached', 'sessions', { size: 2, args: ['-m', '512'], resources: { limits: { memory: '384Mi' } } }), 'cr-author');
    await eventually('sessions on -m 512', async () => (await containerOf('sessions'))?.args?.[1] === '512' && settled('Memcached', 'sessions'), 120_000);
    expect((await deployment('sessions'))!.metadata!.generation).toBe(before + 1);
    const deploymentWrites = (await operatorWritesSince(ns, since)).filter((w) => w.includes('/deployments/'));
    expect(deploymentWrites).toEqual([`patch /apis/apps/v1/namespaces/${ns}/deployments/sessions-deployment?fieldManager=appkind-operator&force=true`]);
    await expectNoOperatorWrites(ns, 10_000);
  }, 180_000);

  test('a kind that stops allowing env releases the CR\'s variables; a changed kind setting rolls its Deployments once; other CRs get no write', async () => {
    for (const c of crsFile) await eventually(`${c.kind} ${c.metadata.name} settled`, () => settled(c.kind, c.metadata.name), 120_000);
    const generation = async (name: string) => (await deployment(name))!.metadata!.generation!;
    const before = { shop: await generation('shop'), www: await generation('www'), pruned: await generation('pruned'), petclinic: await generation('petclinic') };
    expect(await operator!.stop('SIGTERM')).toBe(0);

    // FlaskApp no longer lets CRs set env or envFrom; Nginx probes less often. The CRDs stay as they were.
    const changed = [...kinds.values()].map((k) =>
      k.kind === 'FlaskApp' ? { ...k, overrides: undefined } : k.kind === 'Nginx' ? { ...k, livenessProbe: { tcpSocket: {}, periodSeconds: 30 } } : k);
    const since = new Date().toISOString();
    operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify(changed) });
    await eventually('LOG_LEVEL and envFrom released', async () => {
      const c = await containerOf('shop');
      return c?.envFrom === undefined && c?.env?.map((e) => e.name).join() === 'DATABASE_URL,POD_NAME';
    }, 120_000);
    // Both Nginx CRs (www, and pruned from the admission test) follow their kind.
    for (const name of ['www', 'pruned']) await eventually(`${name} probes every 30 s`, async () => (await containerOf(name))?.livenessProbe?.periodSeconds === 30, 120_000);
    expect(await generation('shop')).toBe(before.shop + 1);
    expect(await generation('www')).toBe(before.www + 1);
    expect(await generation('pruned')).toBe(before.pruned + 1);
    expect(await generation('petclinic')).toBe(before.petclinic);
    const line = await operator.waitForLog((l) => l.msg === 'applied drifted object' && String(l.object).includes('shop-deployment'));
    expect(String(line.field)).toMatch(/^spec\.template\.spec\.containers\[0\]\.env/);
    await eventually('shop, www and pruned settled', async () => (await condition('FlaskApp', 'shop', 'Progressing'))?.status === 'False' &&
      (await condition('Nginx', 'www', 'Progressing'))?.status === 'False' && (await condition('Nginx', 'pruned', 'Progressing'))?.status === 'False', 120_000);
    const deploymentWrites = (await operatorWritesSince(ns, since)).filter((w) => w.includes('/deployments/')).map((w) => w.split('?')[0]!.split('/').pop()).sort();
    expect(deploymentWrites).toEqual(['pruned-deployment', 'shop-deployment', 'www-deployment']);
    await expectNoOperatorWrites(ns, 10_000);
  }, 300_000);

  test('the operator logged no error', () => {
    expect(operator!.exited).toBe(false);
    expect(operator!.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
