// An operator upgrade rolls only the apps whose rendering changed. The operator of an older commit of
// main (OLDER_COMMIT, built by older-operator.ts) serves 50 CRs of four kinds until they settle; this
// checkout's operator takes over, serving three kinds as they were and the fourth (Memcached) with an
// env entry added. The change is made at the takeover, not found in the older commit's code, so the
// test keeps both kinds of app whatever commit it pins: the three unchanged kinds' apps get no write
// (Deployment generation and every resourceVersion as before), each Memcached Deployment is applied
// once and rolls out once. What the older code's rendering was is test/golden/render.yaml's concern; here
// it is what the operator adds around it (labels, owner references, fields it owns, status). Needs
// main's history: in a shallow clone it fails naming `git fetch --unshallow`.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromFile } from 'appkind-operator/kinds';
import { crObject, eventually, readSharedAuditLog, sharedCluster, sharedServiceAccountKubeconfig, type AuditEvent } from './cluster.js';
import { buildOlderOperator } from './older-operator.js';
import { expectNoOperatorWrites, OPERATOR_SA, OperatorProcess, prepareOperatorNamespace } from './operator-process.js';
import type { RestClient } from '../../operator/runtime/rest.js';

/**
 * The older operator: main at "operator: one file bundled by esbuild", before the production kind
 * settings, kstatus's conditions and the builder's rewrite of the wiring, and with this checkout's
 * dependencies (older-operator.ts refuses a commit that resolved them otherwise).
 */
const OLDER_COMMIT = 'a4819ef8ef1a0aab0c0d1bdeb899a7307d03496b';
const ADDED_ENV = { name: 'CACHE_TIER', value: 'upgraded' };

type Resource = KubernetesObject & { status?: { observedGeneration?: number; nodes?: string[]; conditions?: { type: string; status: string }[] } };
interface App {
  readonly kind: AppKind;
  readonly name: string;
  readonly spec: Record<string, unknown>;
}
/** What an app's objects were when the older operator had settled. */
interface Before {
  readonly generation: number;
  readonly versions: Record<'cr' | 'deployment' | 'service', string>;
}

const root = join(import.meta.dirname, '..', '..');
let rest: RestClient;
let ns: string;
let olderFile: string;
let newerFile: string;
let older: OperatorProcess | undefined;
let newer: OperatorProcess | undefined;
let apps: App[];
const before = new Map<string, Before>();

/** The kinds files: EchoFlask of examples/appkinds.yaml, three kinds of examples/real-apps.yaml; the newer one adds ADDED_ENV to Memcached. */
function writeKindsFiles(dir: string): void {
  const raw = (file: string) => (parse(readFileSync(join(root, 'examples', file), 'utf8')) as { kinds: Record<string, unknown>[] }).kinds;
  const kinds = [...raw('appkinds.yaml').filter((k) => k.kind === 'EchoFlask'), ...raw('real-apps.yaml').filter((k) => ['FlaskApp', 'Nginx', 'Memcached'].includes(k.kind as string))];
  olderFile = join(dir, 'older-kinds.yaml');
  newerFile = join(dir, 'newer-kinds.yaml');
  writeFileSync(olderFile, stringify({ kinds }));
  const changed = kinds.map((k) => (k.kind === 'Memcached' ? { ...k, env: [...((k.env as unknown[] | undefined) ?? []), ADDED_ENV] } : k));
  writeFileSync(newerFile, stringify({ kinds: changed }));
}

/** 25 CRs of the three unchanged kinds, some with the overrides their kinds allow, and 25 Memcached CRs. */
function appsOf(kinds: AppKind[]): App[] {
  const byKind = new Map(kinds.map((k) => [k.kind, k]));
  const make = (kind: string, count: number, spec: (i: number) => Record<string, unknown>) =>
    Array.from({ length: count }, (_, i) => ({ kind: byKind.get(kind)!, name: `${kind.toLowerCase()}-${i}`, spec: { size: 1, ...spec(i) } }));
  return [
    ...make('EchoFlask', 9, () => ({})),
    ...make('FlaskApp', 8, (i) => (i % 2 ? { env: [{ name: 'LOG_LEVEL', value: 'debug' }] } : {})),
    ...make('Nginx', 8, () => ({})),
    ...make('Memcached', 25, (i) => (i % 2 ? { args: ['-m', '96'] } : {})),
  ];
}

const changed = (app: App) => app.kind.kind === 'Memcached';
const cr = (app: App) => crObject(app.kind, ns, app.name);
const deploymentOf = (app: App) => rest.get<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${app.name}-deployment`, namespace: ns } });
const serviceOf = (app: App) => rest.get<KubernetesObject>({ apiVersion: 'v1', kind: 'Service', metadata: { name: `${app.name}-svc`, namespace: ns } });

/** The app's rollout is observed and its CR is Ready for its generation with its pod listed. */
async function settled(app: App): Promise<boolean> {
  const [live, d] = [await rest.get<Resource>(cr(app)), await deploymentOf(app)];
  const ready = live?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  return !!d && d.status?.observedGeneration === d.metadata?.generation && d.status?.updatedReplicas === 1 &&
    live?.status?.observedGeneration === live?.metadata?.generation && ready && live?.status?.nodes?.length === 1;
}

async function allSettled(what: string): Promise<void> {
  await eventually(what, async () => (await Promise.all(apps.map(settled))).every(Boolean), 150_000);
}

/** The app a write of the operator's ServiceAccount touched (its CR, Deployment or Service), or undefined. */
function appOfWrite(e: AuditEvent): App | undefined {
  const name = e.objectRef?.name?.replace(/-(deployment|svc)$/, '');
  return apps.find((a) => a.name === name);
}

/** The writes of the operator's ServiceAccount since `since`, by app name (`-` for ones of no app). */
async function writesByApp(since: string): Promise<Map<string, string[]>> {
  const writes = (await readSharedAuditLog()).filter((e) => e.user.username === `system:serviceaccount:${ns}:${OPERATOR_SA}` && e.stageTimestamp > since &&
    ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb) && !['tokenreviews', 'subjectaccessreviews'].includes(e.objectRef?.resource ?? ''));
  const out = new Map<string, string[]>();
  for (const e of writes) {
    const key = appOfWrite(e)?.name ?? '-';
    const resource = `${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
    out.set(key, [...(out.get(key) ?? []), `${e.verb} ${resource} ${e.objectRef?.name ?? ''} ${e.responseStatus?.code ?? ''}`]);
  }
  return out;
}

beforeAll(async () => {
  const dir = join(sharedCluster().dir, `upgrade-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeKindsFiles(dir);
  const kinds = kindsFromFile(olderFile);
  apps = appsOf(kinds);
  ({ rest, ns } = await prepareOperatorNamespace('upgrade', kinds));
  const command = await buildOlderOperator(OLDER_COMMIT, join(dir, 'older'));
  const kubeconfig = await sharedServiceAccountKubeconfig(ns, OPERATOR_SA);
  older = await OperatorProcess.spawn({ kubeconfig, env: { APPKIND_WATCH_NAMESPACE: ns, APPKIND_CONFIG: olderFile }, command });
}, 120_000);

afterAll(async () => {
  if (older && !older.exited) await older.stop('SIGKILL');
  if (newer) expect(await newer.stop('SIGTERM')).toBe(0);
});

describe(`an upgrade from the operator of ${OLDER_COMMIT.slice(0, 7)} to this checkout's`, () => {
  test('the older operator serves 50 CRs of four kinds until they settle', async () => {
    // Without a scheduler no pod gets Ready, so no CR settles.
    if (!sharedCluster().hasScheduler) throw new Error('the shared control plane has no kube-scheduler or kwok: bash tools/controlplane/build.sh builds them (or add them to KUBEBUILDER_ASSETS)');
    expect(apps).toHaveLength(50);
    for (const app of apps) await rest.apply({ ...cr(app), spec: app.spec }, 'test-user');
    await allSettled('the older operator settled all 50 CRs');
    await expectNoOperatorWrites(ns, 3_000);
    for (const app of apps) {
      const [live, d, s] = [await rest.get<Resource>(cr(app)), await deploymentOf(app), await serviceOf(app)];
      before.set(app.name, {
        generation: d!.metadata!.generation!,
        versions: { cr: live!.metadata!.resourceVersion!, deployment: d!.metadata!.resourceVersion!, service: s!.metadata!.resourceVersion! },
      });
    }
    expect(await older!.stop('SIGTERM')).toBe(0);
    expect(older!.logs.filter((l) => l.level === 'error')).toEqual([]);
  }, 240_000);

  test("this checkout's operator takes over: the changed kind's apps roll once, the others get no write", async () => {
    expect(before.size).toBe(50);
    const since = new Date().toISOString();
    newer = await OperatorProcess.start(ns, { APPKIND_CONFIG: newerFile });
    // Each CR reconciled at least once by the newer operator, so "no write" is not "not yet".
    const reconciled = (app: App) => newer!.logs.some((l) => l.msg === 'reconcile finished' && l.key === `${app.kind.kind}/${ns}/${app.name}`);
    await eventually('the newer operator reconciled every CR', async () => apps.every(reconciled), 120_000);
    await eventually('every Memcached Deployment has the added env entry', async () =>
      (await Promise.all(apps.filter(changed).map(deploymentOf))).every((d) => d?.spec?.template.spec?.containers[0]?.env?.some((e) => e.name === ADDED_ENV.name)), 120_000);
    await allSettled('all 50 CRs settled again');
    await expectNoOperatorWrites(ns, 3_000);

    const writes = await writesByApp(since);
    const unchangedWrites = apps.filter((a) => !changed(a)).flatMap((a) => (writes.get(a.name) ?? []).map((w) => `${a.name}: ${w}`));
    expect(unchangedWrites).toEqual([]);
    for (const app of apps.filter(changed)) {
      // One apply of the Deployment, besides status writes saying the rollout's progress: a reconcile
      // woken by the CR's own status write, watched back before the Deployment's update, compares with
      // what the apply returned (Expectations), not with the older cached Deployment.
      const own = (writes.get(app.name) ?? []).filter((w) => !w.startsWith(`patch ${app.kind.plural}/status `));
      const told = JSON.stringify(newer.logs.filter((l) => l.key === `${app.kind.kind}/${ns}/${app.name}` && l.level !== 'debug').map(({ ts, msg, object, field }) => ({ ts, msg, object, field })));
      const apply = `patch deployments ${app.name}-deployment 200`;
      expect([app.name, own, told]).toEqual([app.name, [apply], told]);
    }
    expect(writes.get('-') ?? []).toEqual([]);

    for (const app of apps) {
      const [live, d, s] = [await rest.get<Resource>(cr(app)), await deploymentOf(app), await serviceOf(app)];
      const was = before.get(app.name)!;
      const now = { generation: d!.metadata!.generation!, deployment: d!.metadata!.resourceVersion!, service: s!.metadata!.resourceVersion!, cr: live!.metadata!.resourceVersion! };
      if (changed(app)) {
        expect([app.name, now.generation, now.service]).toEqual([app.name, was.generation + 1, was.versions.service]);
        expect(d!.spec!.template.spec!.containers[0]!.env).toEqual(expect.arrayContaining([ADDED_ENV]));
      } else {
        expect([app.name, now.generation, now.deployment, now.service, now.cr]).toEqual([app.name, was.generation, was.versions.deployment, was.versions.service, was.versions.cr]);
      }
    }
    expect(newer.logs.filter((l) => l.level === 'error')).toEqual([]);
  }, 240_000);
});
