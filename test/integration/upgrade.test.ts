// An operator upgrade rolls only the apps whose rendering changed, and those in waves. The older
// operator is that of the newest commit before HEAD that changed test/golden/render.yaml, the last
// change of the rendering an upgrade must carry (older-operator.ts; it skips, saying why, commits of
// other dependencies or whose operator does not build, and those whose examples lack a served kind;
// OLDER_FALLBACK, from before the golden, when none qualifies). It serves 50 CRs of four example
// kinds, each CR a copy of a golden case, with that commit's kinds; this checkout's operator takes
// over with this checkout's. What the upgrade does to each app is read from the two goldens, case by
// case (its pod template fingerprint changed: a rollout; another object differs: a write without
// one), and held, before the takeover, to what the older operator applied. One kind (Memcached) also
// gets an env entry at the takeover, so apps that roll exist when the goldens agree, and every kind
// a rollout.maxConcurrent, which the older operator is not given (it renders nothing). Apps that roll
// are applied once, roll once, never more than maxConcurrent of a kind at once (sampled from the
// Deployments' status) and all reach this checkout's rendering; the others get only the writes the
// goldens say (none: every resourceVersion kept). Needs main's history: in a shallow clone it fails
// naming `git fetch --unshallow`.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject } from '@kubernetes/client-node';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromFile } from 'appkind-operator/kinds';
import { drift, firstDifference } from '../../operator/controller/diff.js';
import { render, type KubeObject } from '../../operator/kinds/render.js';
import type { RestClient } from '../../operator/runtime/rest.js';
import { appName, fieldChanges, GOLDEN_FILE, goldenCases, inputCrs, parseGolden, type GoldenObject } from '../golden/rendering.js';
import { crObject, eventually, readSharedAuditLog, sharedCluster, sharedServiceAccountKubeconfig, type AuditEvent } from './cluster.js';
import { fileAt, GOLDEN_PATH, newestOlderOperator, type OlderOperator } from './older-operator.js';
import { expectNoOperatorWrites, OPERATOR_SA, OperatorProcess, prepareOperatorNamespace } from './operator-process.js';
import { type Deployment, rolling, sampleRollout } from './rollout-sampler.js';

/** The older operator when no commit that changed the golden qualifies: main before the golden, with this checkout's dependencies. */
const OLDER_FALLBACK = 'a4819ef8ef1a0aab0c0d1bdeb899a7307d03496b';
/** The served kinds: the file the golden reads each from, its CRs, and how many of them may roll at once after the takeover. */
const SERVED = [
  { file: 'examples/appkinds.yaml', kind: 'EchoFlask', crs: 9, maxConcurrent: 3 },
  { file: 'examples/real-apps.yaml', kind: 'FlaskApp', crs: 8, maxConcurrent: 2 },
  { file: 'examples/real-apps.yaml', kind: 'Nginx', crs: 8, maxConcurrent: 2 },
  { file: 'examples/real-apps.yaml', kind: 'Memcached', crs: 25, maxConcurrent: 5 },
] as const;
/** The kind changed at the takeover, and how. */
const CHANGED_KIND = 'Memcached';
const ADDED_ENV = { name: 'CACHE_TIER', value: 'upgraded' };

type RawKind = Record<string, unknown>;
type Resource = KubernetesObject & { status?: { observedGeneration?: number; nodes?: string[]; conditions?: { type: string; status: string }[] } };
/** What the upgrade does to an app: nothing, writes some of its objects, or rolls its pods (a new pod template). */
type Change = 'none' | 'writes' | 'rolls';
interface App {
  /** The kind as this checkout's operator serves it. */
  readonly kind: AppKind;
  readonly name: string;
  readonly spec: Record<string, unknown>;
  /** The golden case it copies (`<file>: <Kind> default/<CR>`). */
  readonly case: string;
  readonly change: Change;
  /** Why it changes: the goldens (the objects that differ) or the kind changed at the takeover. */
  readonly why: string;
  /** The writes of its objects the newer operator makes, as writesByApp lists them; status writes left out. */
  readonly writes: string[];
}
/** What an app's objects were when the older operator had settled. */
interface Before {
  readonly generation: number;
  readonly template: unknown;
  readonly versions: Record<'cr' | 'deployment' | 'service', string>;
}

const root = join(import.meta.dirname, '..', '..');

/** The served kinds as the kinds files `text` gives declare them, or why not. */
function servedKinds(text: (file: string) => string | undefined): RawKind[] | string {
  const out: RawKind[] = [];
  for (const served of SERVED) {
    let kinds: RawKind[] | undefined;
    try {
      kinds = (parse(text(served.file) ?? '') as { kinds?: RawKind[] } | null)?.kinds;
    } catch {
      kinds = undefined;
    }
    const kind = kinds?.find((k) => k.kind === served.kind);
    if (!kind) return `its ${served.file} has no kind ${served.kind} in a list of kinds`;
    // A rollout setting renders nothing, and an operator from before waves refuses it.
    out.push({ ...kind, rollout: undefined });
  }
  return out;
}

const bareCase = (served: (typeof SERVED)[number]) => `${served.file}: ${served.kind} default/bare`;

/** Why `commit` cannot be the older operator: its kinds files lack a served kind, or its golden a served kind's bare CR. */
function refusal(commit: string): string | undefined {
  const kinds = servedKinds((file) => fileAt(commit, file));
  if (typeof kinds === 'string') return kinds;
  const hashes = parseGolden(fileAt(commit, GOLDEN_PATH) ?? '').hashes;
  return SERVED.map(bareCase).filter((c) => !hashes.has(c)).map((c) => `its golden has no ${c}`)[0];
}

const dir = join(sharedCluster().dir, `upgrade-${process.pid}`);
mkdirSync(dir, { recursive: true });
const older: OlderOperator = await newestOlderOperator(join(dir, 'older'), OLDER_FALLBACK, refusal);

/** Whether the CR `file` holds as `kind`/`name` is the same at the older commit as here (the golden case then differs by its kind and the code alone). */
function sameCrAtOlder(file: string, kind: string, name: string, spec: unknown): boolean {
  const docs = parseAllDocuments(fileAt(older.commit, file) ?? '').map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: unknown } | null);
  return docs.some((d) => d?.kind === kind && d.metadata?.name === name && isDeepStrictEqual(d.spec, spec));
}

/** The objects of `key` that differ between the goldens, as the writes of the app `name` they give (its objects are named after it). */
function goldenWrites(olderObjects: GoldenObject[], newerObjects: GoldenObject[], key: string, crName: string, name: string): string[] {
  const of = (objects: GoldenObject[]) => new Map(objects.filter((o) => o.app === key).map((o) => [`${o.object.kind} ${o.object.metadata.name}`, o.object]));
  const [was, now] = [of(olderObjects), of(newerObjects)];
  const write = (verb: string, o: KubeObject, code: number) => `${verb} ${o.kind.toLowerCase()}s ${name}${o.metadata.name.slice(crName.length)} ${code}`;
  return [
    ...[...now].filter(([k, o]) => was.has(k) && fieldChanges(was.get(k), o).length > 0).map(([, o]) => write('patch', o, 200)),
    ...[...now].filter(([k]) => !was.has(k)).map(([, o]) => write('patch', o, 201)),
    ...[...was].filter(([k]) => !now.has(k)).map(([, o]) => write('delete', o, 200)),
  ];
}

/**
 * The 50 apps: each served kind's CRs copy, in turn, the golden cases of that kind whose CR is the
 * same at the older commit (the bare one at least), with one pod each (replicas are not in the pod
 * template). What the upgrade does to each is the goldens' difference for its case. The fallback
 * commit has no golden: its CRs copy the bare cases only, and its rendering of them is taken for this
 * checkout's, which the check before the takeover holds it to.
 */
function plan(newerKinds: AppKind[]): App[] {
  const was = older.golden === undefined ? undefined : parseGolden(older.golden);
  const now = parseGolden(readFileSync(GOLDEN_FILE, 'utf8'));
  const crFileOf = new Map(inputCrs().map(({ file, cr }) => [`${cr.kind}/${cr.metadata.name}`, file]));
  const all = goldenCases();
  return SERVED.flatMap((served) => {
    const kind = newerKinds.find((k) => k.kind === served.kind)!;
    const cases = all
      .filter((c) => c.source === served.file && c.kind.kind === served.kind)
      .filter((c) => c.cr.metadata.name === 'bare' || (!!was && was.hashes.has(appName(c)) && sameCrAtOlder(crFileOf.get(`${c.cr.kind}/${c.cr.metadata.name}`)!, c.cr.kind, c.cr.metadata.name, c.cr.spec)));
    return Array.from({ length: served.crs }, (_, i): App => {
      const c = cases[i % cases.length]!;
      const [key, name] = [appName(c), `${served.kind.toLowerCase()}-${i}`];
      const golden = was ? goldenWrites(was.objects, now.objects, key, c.cr.metadata.name, name) : [];
      const rollsByGolden = !!was && was.hashes.get(key) !== now.hashes.get(key);
      const deployment = `patch deployments ${name}-deployment 200`;
      const byKind = served.kind === CHANGED_KIND;
      return {
        kind,
        name,
        spec: { ...(c.cr.spec as Record<string, unknown> | undefined), size: 1 },
        case: key,
        change: byKind || rollsByGolden ? 'rolls' : golden.length > 0 ? 'writes' : 'none',
        why: [...(golden.length > 0 ? [`the goldens (${golden.join(', ')})`] : []), ...(byKind ? ['the kind changed at the takeover'] : [])].join(' and ') || 'nothing',
        writes: byKind && !golden.includes(deployment) ? [...golden, deployment] : golden,
      };
    });
  });
}

/** The kinds files: the older commit's kinds for the older operator (this checkout's for the fallback), this checkout's with the takeover's changes for the newer. */
function writeKindsFiles(): { olderFile: string; newerFile: string } {
  const here = servedKinds((file) => readFileSync(join(root, file), 'utf8')) as RawKind[];
  const then = older.golden === undefined ? here : (servedKinds((file) => fileAt(older.commit, file)) as RawKind[]);
  const olderFile = join(dir, 'older-kinds.yaml');
  const newerFile = join(dir, 'newer-kinds.yaml');
  writeFileSync(olderFile, stringify({ kinds: then }));
  const changed = here.map((k, i) => ({
    ...k,
    ...(k.kind === CHANGED_KIND ? { env: [...((k.env as unknown[] | undefined) ?? []), ADDED_ENV] } : {}),
    rollout: { maxConcurrent: String(SERVED[i]!.maxConcurrent) },
  }));
  writeFileSync(newerFile, stringify({ kinds: changed }));
  return { olderFile, newerFile };
}

let rest: RestClient;
let ns: string;
let olderFile: string;
let newerFile: string;
let olderProcess: OperatorProcess | undefined;
let newer: OperatorProcess | undefined;
let apps: App[];
const before = new Map<string, Before>();

const cr = (app: App) => crObject(app.kind, ns, app.name);
const deploymentOf = (app: App) => rest.get<Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${app.name}-deployment`, namespace: ns } });
const serviceOf = (app: App) => rest.get<KubernetesObject>({ apiVersion: 'v1', kind: 'Service', metadata: { name: `${app.name}-svc`, namespace: ns } });
const renders = new Map<string, KubeObject[]>();
/** What this checkout renders for the app. */
function rendered(app: App): KubeObject[] {
  const k = app.kind;
  if (!renders.has(app.name)) renders.set(app.name, render(k, { apiVersion: `${k.group}/${k.version}`, kind: k.kind, metadata: { name: app.name, namespace: ns }, spec: app.spec }));
  return renders.get(app.name)!;
}
const renderedDeployment = (app: App) => rendered(app).find((o) => o.kind === 'Deployment');
const templateOf = (o: KubernetesObject | undefined) => (o as { spec?: { template?: unknown } } | undefined)?.spec?.template;

/** The fields where the app's live objects differ from this checkout's rendering, `Kind name: path` each. */
async function differences(app: App): Promise<string[]> {
  const out: string[] = [];
  for (const o of rendered(app)) {
    const live = await rest.get<KubernetesObject>({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name, namespace: ns } });
    const at = drift(o, live ?? undefined);
    if (at) out.push(`${o.kind} ${o.metadata.name}: ${at}`);
  }
  return out;
}

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
  ({ olderFile, newerFile } = writeKindsFiles());
  const kinds = kindsFromFile(newerFile);
  apps = plan(kinds);
  const count = (change: Change) => SERVED.map((s) => [s.kind, apps.filter((a) => a.kind.kind === s.kind && a.change === change).length] as const).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  console.log(`upgrade test: from ${older.commit.slice(0, 7)}; apps that roll: ${count('rolls')}; written without a rollout: ${count('writes')}; unchanged: ${count('none')}`);
  ({ rest, ns } = await prepareOperatorNamespace('upgrade', kinds));
  const kubeconfig = await sharedServiceAccountKubeconfig(ns, OPERATOR_SA);
  olderProcess = await OperatorProcess.spawn({ kubeconfig, env: { APPKIND_WATCH_NAMESPACE: ns, APPKIND_CONFIG: olderFile }, command: older.command });
}, 120_000);

afterAll(async () => {
  if (olderProcess && !olderProcess.exited) await olderProcess.stop('SIGKILL');
  if (newer) expect(await newer.stop('SIGTERM')).toBe(0);
});

const from = older.golden === undefined ? 'the fallback, from before the golden' : `the newest commit that changed ${GOLDEN_PATH}`;
describe(`an upgrade from the operator of ${older.commit.slice(0, 7)} (${from}) to this checkout's`, () => {
  test('the older operator serves 50 CRs of four kinds until they settle, each app as the goldens say', async () => {
    // Without a scheduler no pod gets Ready, so no CR settles.
    if (!sharedCluster().hasScheduler) throw new Error('the shared control plane has no kube-scheduler or kwok: bash tools/controlplane/build.sh builds them (or add them to KUBEBUILDER_ASSETS)');
    expect(apps).toHaveLength(50);
    for (const app of apps) await rest.apply({ ...cr(app), spec: app.spec }, 'test-user');
    apps.forEach(rendered); // while the older operator works
    await allSettled('the older operator settled all 50 CRs');
    await expectNoOperatorWrites(ns, 3_000);
    const phrase: Record<Change, string> = { none: 'changes nothing', writes: 'changes objects but not the pod template', rolls: 'changes the pod template' };
    const mismatches: string[] = [];
    await Promise.all(apps.map(async (app) => {
      const [live, d, s] = [await rest.get<Resource>(cr(app)), await deploymentOf(app), await serviceOf(app)];
      before.set(app.name, {
        generation: d!.metadata!.generation!,
        template: templateOf(d ?? undefined),
        versions: { cr: live!.metadata!.resourceVersion!, deployment: d!.metadata!.resourceVersion!, service: s!.metadata!.resourceVersion! },
      });
      // The goldens' word on the app, held to what the older operator applied.
      const diff = await differences(app);
      const templateDiffers = firstDifference(templateOf(renderedDeployment(app)), templateOf(d ?? undefined)) !== undefined;
      const seen: Change = templateDiffers ? 'rolls' : diff.length > 0 ? 'writes' : 'none';
      if (seen !== app.change) {
        mismatches.push(`${app.name} (a copy of ${app.case}): expected ${app.change}, by ${app.why}; against what the older operator applied, this checkout's rendering ${phrase[seen]}${diff.length ? `: ${diff.join(', ')}` : ''}`);
      }
    }));
    expect(mismatches.sort()).toEqual([]);
    expect(await olderProcess!.stop('SIGTERM')).toBe(0);
    expect(olderProcess!.logs.filter((l) => l.level === 'error')).toEqual([]);
  }, 240_000);

  test("this checkout's operator takes over: apps whose rendering changed roll once, in waves; the others get no write", async () => {
    expect(before.size).toBe(50);
    const since = new Date().toISOString();
    const appOf = new Map(apps.map((a) => [`${a.name}-deployment`, a]));
    const rolls = (d: Deployment) => appOf.get(d.metadata?.name ?? '')?.change === 'rolls';
    newer = await OperatorProcess.start(ns, { APPKIND_CONFIG: newerFile });
    // Sampled from the start: at most maxConcurrent of a kind rolling at once, until every Deployment holds this checkout's rendering and none rolls.
    const atNew = (d: Deployment) => drift(renderedDeployment(appOf.get(d.metadata!.name!)!)!, d) === undefined;
    const { most, samples } = await sampleRollout({
      list: async () => (await rest.list<Deployment>('apps/v1', 'Deployment', ns)).items,
      groupOf: (d) => (rolls(d) ? appOf.get(d.metadata!.name!)!.kind.kind : undefined),
      done: (all) => all.length === 50 && all.every((d) => atNew(d) && !rolling(d)),
      progress: (all) => `${all.filter(atNew).length} of 50 Deployments at this checkout's rendering, ${all.filter(rolling).map((d) => d.metadata?.name).join(', ') || 'none'} rolling`,
      timeoutMs: 180_000,
    });
    const rolled = (kind: string) => apps.filter((a) => a.kind.kind === kind && a.change === 'rolls').length;
    const over = SERVED.filter((s) => (most.get(s.kind) ?? 0) > s.maxConcurrent).map((s) => `${s.kind}: ${most.get(s.kind)} rolling at once, maxConcurrent ${s.maxConcurrent}`);
    expect(over).toEqual([]);
    // Waves, not one app at a time, and sampled often enough to see them.
    const waves = SERVED.filter((s) => rolled(s.kind) > s.maxConcurrent);
    expect(waves.map((s) => [s.kind, (most.get(s.kind) ?? 0) > 1, samples > rolled(s.kind) / s.maxConcurrent])).toEqual(waves.map((s) => [s.kind, true, true]));
    // Each CR reconciled at least once by the newer operator, so "no write" is not "not yet".
    const reconciled = (app: App) => newer!.logs.some((l) => l.msg === 'reconcile finished' && l.key === `${app.kind.kind}/${ns}/${app.name}`);
    await eventually('the newer operator reconciled every CR', async () => apps.every(reconciled), 120_000);
    await allSettled('all 50 CRs settled again');
    await expectNoOperatorWrites(ns, 3_000);

    const writes = await writesByApp(since);
    for (const app of apps) {
      // Its objects' writes, besides status writes saying the rollout's progress (or its wait for a
      // turn). One apply of a Deployment that rolls: a reconcile woken by the CR's own status write,
      // watched back before the Deployment's update, compares with what the apply returned
      // (Expectations), not with the older cached Deployment.
      const own = (writes.get(app.name) ?? []).filter((w) => !w.startsWith(`patch ${app.kind.plural}/status `));
      const status = (writes.get(app.name) ?? []).length - own.length;
      const told = app.change === 'none' && own.length + status === 0 ? '' : JSON.stringify(newer.logs.filter((l) => l.key === `${app.kind.kind}/${ns}/${app.name}` && l.level !== 'debug').map(({ ts, msg, object, field }) => ({ ts, msg, object, field })));
      expect([app.name, app.why, own.sort(), app.change === 'none' ? status : 0, told]).toEqual([app.name, app.why, [...app.writes].sort(), 0, told]);
    }
    expect(writes.get('-') ?? []).toEqual([]);

    await Promise.all(apps.map(async (app) => {
      const [live, d, s] = [await rest.get<Resource>(cr(app)), await deploymentOf(app), await serviceOf(app)];
      const was = before.get(app.name)!;
      const now = { generation: d!.metadata!.generation!, deployment: d!.metadata!.resourceVersion!, service: s!.metadata!.resourceVersion!, cr: live!.metadata!.resourceVersion! };
      expect([app.name, await differences(app)]).toEqual([app.name, []]);
      if (app.change === 'rolls') {
        // One rollout: the generation up by one, the Service as before unless the goldens changed it.
        const service = app.writes.some((w) => w.startsWith('patch services ')) ? now.service : was.versions.service;
        expect([app.name, now.generation, now.service]).toEqual([app.name, was.generation + 1, service]);
        if (app.kind.kind === CHANGED_KIND) expect(d!.spec!.template.spec!.containers[0]!.env).toEqual(expect.arrayContaining([ADDED_ENV]));
      } else if (app.change === 'writes') {
        expect([app.name, templateOf(d ?? undefined)]).toEqual([app.name, was.template]);
      } else {
        expect([app.name, now.generation, now.deployment, now.service, now.cr]).toEqual([app.name, was.generation, was.versions.deployment, was.versions.service, was.versions.cr]);
      }
    }));
    expect(newer.logs.filter((l) => l.level === 'error')).toEqual([]);
  }, 300_000);
});
