// A kind's change reaching 300 running apps in waves, on the shared control plane (kwok makes pods
// Ready): the kind's image changed in its kinds file never has more than maxConcurrent (10% of 300)
// Deployments rolling at once, counted from the Deployments' own status; an image whose pods an
// admission policy refuses stops the rollout after its first wave, the other apps untouched and the
// kind's apps saying why; a later fix rolls every app, the failed ones too.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubernetesObject } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RestClient } from '../../operator/runtime/rest.js';
import { crObject, eventually, sharedCluster } from './cluster.js';
import { allowPodsAgain, refusePodsOfImage } from './refuse-image.js';
import { OperatorProcess, prepareOperatorNamespace } from './operator-process.js';
import { type Deployment, rolling, sampleRollout } from './rollout-sampler.js';

const N = Number(process.env.WAVES_CRS ?? 300);
/** The default maxConcurrent, 10% of the kind's CRs (at least 1). */
const MAX = Math.max(1, Math.floor(N / 10));
const BROKEN = 'example.com/waves/web:broken';
const kind: AppKind = {
  group: 'waves.appkind.test', version: 'v1', kind: 'Wave', plural: 'waves', appName: 'wave',
  image: 'example.com/waves/web:1', port: 8080, rollout: { progressDeadlineSeconds: 600 },
};

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };
type Event = KubernetesObject & { reason: string; message: string; type: string; involvedObject: { name: string; kind: string } };

let rest: RestClient;
let ns: string;
let operator: OperatorProcess;
let dir: string;
const names = Array.from({ length: N }, (_, i) => `app-${String(i).padStart(3, '0')}`);
const policyName = () => `waves-refuse-${ns}`;

/** Serves `image` as the kind's image: the kinds file rewritten in one rename, as the kubelet swaps a ConfigMap. */
function serveImage(image: string): void {
  writeFileSync(join(dir, 'next.json'), JSON.stringify({ kinds: [{ ...kind, image }] }));
  renameSync(join(dir, 'next.json'), join(dir, 'kinds.json'));
}

const imageOf = (d: Deployment) => d.spec?.template.spec?.containers[0]?.image;
const deployments = async () => (await rest.list<Deployment>('apps/v1', 'Deployment', ns)).items;

/** Samples the Deployments until `done` holds of them; resolves with the most seen rolling to `image` at once. */
async function sampleRolloutTo(image: string, done: (all: Deployment[]) => boolean, timeoutMs: number): Promise<{ most: number; samples: number }> {
  const { most, samples } = await sampleRollout({
    list: deployments,
    groupOf: (d) => (imageOf(d) === image ? image : undefined),
    done,
    timeoutMs,
    progress: (all) => {
      const at = all.filter((d) => imageOf(d) === image);
      return `${at.length}/${N} Deployments at ${image}, ${at.filter(rolling).length} rolling`;
    },
  });
  return { most: most.get(image) ?? 0, samples };
}
const allRolledTo = (image: string) => (all: Deployment[]) => all.length === N && all.every((d) => imageOf(d) === image && !rolling(d));

const condition = async (name: string, type: string) => (await rest.get<Resource>(crObject(kind, ns, name)))?.status?.conditions?.find((c) => c.type === type);

beforeAll(async () => {
  if (!sharedCluster().hasScheduler) throw new Error('the shared control plane has no kube-scheduler or kwok: bash tools/controlplane/build.sh builds them (or add them to KUBEBUILDER_ASSETS)');
  ({ rest, ns } = await prepareOperatorNamespace('waves', [kind]));
  dir = mkdtempSync(join(tmpdir(), 'kind-waves-'));
  serveImage(kind.image);
  operator = await OperatorProcess.start(ns, { APPKIND_CONFIG: join(dir, 'kinds.json'), APPKIND_LOG_LEVEL: 'info' });
  // New CRs go at once, outside any wave.
  for (let i = 0; i < N; i += 25) await Promise.all(names.slice(i, i + 25).map((name) => rest.apply(crObject(kind, ns, name, { size: 1 }), 'test-user')));
  await sampleRolloutTo(kind.image, allRolledTo(kind.image), 600_000);
  await eventually('every CR Ready', async () =>
    (await rest.list<Resource>(`${kind.group}/${kind.version}`, kind.kind, ns)).items.filter((cr) => cr.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length === N, 300_000);
}, 1_200_000);

afterAll(async () => {
  // The operator's log lines, for a failure's reader (WAVES_OPERATOR_LOG=<file>).
  if (process.env.WAVES_OPERATOR_LOG && operator) writeFileSync(process.env.WAVES_OPERATOR_LOG, operator.logs.map((l) => JSON.stringify(l)).join('\n'));
  await allowPodsAgain(rest, policyName());
  expect(await operator?.stop('SIGTERM')).toBe(0);
  expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  rest?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a kind-wide image change reaches its apps in waves', () => {
  test(`never more than ${MAX} Deployments rolling at once, and every app reaches the new image`, async () => {
    const image = 'example.com/waves/web:2';
    serveImage(image);
    const { most, samples } = await sampleRolloutTo(image, allRolledTo(image), 900_000);
    expect(most).toBeLessThanOrEqual(MAX);
    // Waves, not one app at a time, and sampled often enough to see them.
    expect(most).toBeGreaterThan(1);
    expect(samples).toBeGreaterThan(N / MAX);
    await eventually('the metrics count every app updated', async () => (await operator.metric('appkind_kind_rollout_apps', { kind: kind.kind, state: 'updated' })) === N);
    expect(await operator.metric('appkind_kind_rollout_apps', { kind: kind.kind, state: 'waiting' })).toBe(0);
    expect(await operator.metric('appkind_kind_rollout_stopped', { kind: kind.kind })).toBe(0);
  }, 1_200_000);

  test('an image whose pods are refused stops after the first wave: the rest keep their image, the kind says why; a fix rolls them all', async () => {
    const before = 'example.com/waves/web:2';
    // Pods of the broken image are refused at admission, as a policy of the cluster would refuse them.
    await refusePodsOfImage(rest, ns, policyName(), BROKEN);

    serveImage(BROKEN);
    await eventually('the rollout stopped', async () => (await operator.metric('appkind_kind_rollout_stopped', { kind: kind.kind })) === 1, 300_000);
    const broken = async () => (await deployments()).filter((d) => imageOf(d) === BROKEN).map((d) => d.metadata!.name!.replace(/-deployment$/, ''));
    const wave = await broken();
    expect(wave.length).toBeGreaterThanOrEqual(1);
    expect(wave.length).toBeLessThanOrEqual(MAX);
    // Stopped: nothing more rolls while the kind stays broken.
    await new Promise((r) => setTimeout(r, 15_000));
    expect((await broken()).sort()).toEqual([...wave].sort());
    const all = await deployments();
    expect(all.filter((d) => imageOf(d) === before)).toHaveLength(N - wave.length);

    // The kind says why: its metrics, every waiting app's Progressing condition, an Event on a failed app.
    const failed = await operator.metric('appkind_kind_rollout_apps', { kind: kind.kind, state: 'failed' });
    expect(failed).toBeGreaterThanOrEqual(1);
    expect(await operator.metric('appkind_kind_rollout_apps', { kind: kind.kind, state: 'waiting' })).toBe(N - wave.length);
    const untouched = names.find((n) => !wave.includes(n))!;
    await eventually('a waiting app says the rollout stopped', async () => (await condition(untouched, 'Progressing'))?.reason === 'KindRolloutStopped');
    const progressing = (await condition(untouched, 'Progressing'))!;
    expect(progressing.status).toBe('True');
    expect(progressing.message).toMatch(new RegExp(`the Wave rollout stopped: ${ns}/app-\\d{3} \\(FailedCreate\\).* did not become Ready at the new pod template; fix or revert the kind's settings`));
    // The app keeps serving at its image: Ready, as before the change.
    expect((await condition(untouched, 'Ready'))?.status).toBe('True');
    const events = (await rest.list<Event>('v1', 'Event', ns)).items.filter((e) => e.reason === 'KindRolloutStopped');
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(wave).toContain(events[0]!.involvedObject.name);
    expect(events[0]!.type).toBe('Warning');

    // A fix of the kind starts a new rollout: in waves again, the failed apps rolled too.
    const fixed = 'example.com/waves/web:3';
    serveImage(fixed);
    const { most } = await sampleRolloutTo(fixed, allRolledTo(fixed), 900_000);
    expect(most).toBeLessThanOrEqual(MAX);
    await eventually('the metrics say the rollout is done', async () =>
      (await operator.metric('appkind_kind_rollout_stopped', { kind: kind.kind })) === 0 &&
      (await operator.metric('appkind_kind_rollout_apps', { kind: kind.kind, state: 'updated' })) === N);
    expect((await condition(untouched, 'Progressing'))?.reason).toBe('RolloutComplete');
  }, 1_800_000);
});
