// What the bench's phases (floor.ts, cr-floor.ts, operator-run.ts, go-run.ts) share: the CRs they
// create and edit, what converged means, request counts from the audit log, and the control plane each starts.
import type { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { join } from 'node:path';
import { RestClient } from 'appkind-operator/runtime';
import { withPrefixedSettings } from 'appkind-operator/settings';
import type { AuditEvent } from '../tools/controlplane/audit.js';
import { ControlPlane } from '../tools/controlplane/controlplane.js';
import { httpGet, waitFor } from '../tools/controlplane/readiness.js';
import type { Settings } from './cli.js';
import { kind, NS, OPERATOR_NS } from './operator-setup.js';
import { cpuMeters } from './proc.js';
import type { ApiserverRecorder } from './profile.js';
import { isWrite, ratioOf } from './report.js';
import type { Tracker } from './tracker.js';

/** The environment with the deprecated unprefixed settings read as their APPKIND_ names. */
export const settingsEnv = withPrefixedSettings(process.env).env;

export const root = join(import.meta.dirname, '..');
export const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:appkind-operator`;
export const CR_API = `${kind.group}/${kind.version}`;
/** The default NodePort range holds 2768 Services; wider runs need a wider range (a real cluster too). */
const WIDE_NODE_PORTS = '30000-39999';
/** The kind's new default image of the rollout phase */
export const ROLLOUT_IMAGE = 'takeyan/flask:0.0.4';
/** The kind of the rollout phase: all apps at once, as before waves, unless --waves gives maxConcurrent. */
export const rolloutKindOf = (s: { waves?: string }) => ({ ...kind, image: ROLLOUT_IMAGE, rollout: { maxConcurrent: s.waves ?? '100%' } });

export const log = (line: string) => void process.stderr.write(`${line}\n`);

export type Resource = KubernetesObject & {
  spec?: { size?: number };
  status?: { nodes?: string[]; observedGeneration?: number; conditions?: { type: string; status: string }[] };
};

export const seconds = (since: number) => Math.round((performance.now() - since) / 10) / 100;

/** Runs fn over items with at most `concurrency` in flight. */
export async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

/** Each app's size when the rollout starts: the first `edits` were edited back to `size`, the rest scaled to size + 1. */
export const rolloutSize = (i: number, s: Settings) => (i < s.edits ? s.size : s.size + 1);

export const crOf = (i: number, size: number) => ({ apiVersion: CR_API, kind: kind.kind, metadata: { name: `app-${i}`, namespace: NS }, spec: { size } });
export const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export function deploymentReady(size: number) {
  return (d: V1Deployment) => d.spec?.replicas === size && d.status?.readyReplicas === size && d.status?.updatedReplicas === size &&
    d.status?.replicas === size && (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
}

/** A Deployment on the rollout image, every replica updated and ready. */
export function deploymentRolledOut(d: V1Deployment): boolean {
  const size = d.spec?.replicas ?? -1;
  return d.spec?.template.spec?.containers[0]?.image === ROLLOUT_IMAGE && deploymentReady(size)(d);
}

export function crConverged(size: number) {
  return (r: Resource) => r.status?.nodes?.length === size && r.status.observedGeneration === r.metadata?.generation &&
    r.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

/** Requests by one user between two instants: `verb resource[/subresource]` -> count. */
export function requests(audit: AuditEvent[], user: string, from: string, to: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of audit) {
    if (e.user.username !== user || e.stageTimestamp < from || e.stageTimestamp >= to) continue;
    const what = `${e.verb} ${e.objectRef?.resource ?? e.requestURI}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
    counts[what] = (counts[what] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** Status patches per CR in one phase's request counts. */
export const statusPatchesPerCr = (counts: Record<string, number>, n: number) => ratioOf(counts[`patch ${kind.plural}/status`] ?? 0, n);

/** app-i's spec.size patched as a user's edit (a merge patch). */
export function patchSize(rest: RestClient, i: number, size: number): Promise<unknown> {
  return rest.request('PATCH', `/apis/${CR_API}/namespaces/${NS}/${kind.plural}/app-${i}`, { body: { spec: { size } }, contentType: 'application/merge-patch+json' });
}

/**
 * What an operator's run (ours or the Go one, `who`) measures first: N CRs created, then each scaled
 * by one, at the run's concurrency, each phase until every CR is converged; the phases' start times
 * for the audit log. `recorder` (--profile) is told when the scale begins.
 */
export async function createThenScale(who: string, n: number, s: Settings, rest: RestClient, crs: Tracker<Resource>, recorder?: ApiserverRecorder) {
  const at = () => new Date().toISOString();
  log(`bench: ${who} N=${n}: create`);
  const tCreateIso = at();
  const tCreate = performance.now();
  await pool(range(n), s.concurrency, (i) => rest.apply(crOf(i, s.size), 'bench'));
  const createSent = seconds(tCreate);
  await crs.waitFor(`${who}: ${n} CRs converged`, n, crConverged(s.size), 1_800_000);
  const createSeconds = seconds(tCreate);

  await recorder?.mark('scale');
  log(`bench: ${who} N=${n}: scale`);
  const tScaleIso = at();
  const tScale = performance.now();
  await pool(range(n), s.concurrency, (i) => patchSize(rest, i, s.size + 1));
  const scaleSent = seconds(tScale);
  await crs.waitFor(`${who}: ${n} CRs scaled`, n, crConverged(s.size + 1), 1_800_000);
  const scaleSeconds = seconds(tScale);
  return { tCreateIso, tScaleIso, tScaledIso: at(), createSeconds, scaleSeconds, sentSeconds: { create: createSent, scale: scaleSent } };
}

export const sum = (counts: Record<string, number>, pick: (what: string) => boolean = () => true) =>
  Object.entries(counts).filter(([w]) => pick(w)).reduce((s, [, n]) => s + n, 0);

/** CPU meters of every control-plane process, and of an operator's when given. */
export function machineCpu(cp: ControlPlane, operatorPid?: number): () => Record<string, number> {
  const pids: Record<string, number> = Object.fromEntries(Object.entries(cp.pids()).filter((e): e is [string, number] => e[1] !== undefined));
  return cpuMeters(operatorPid ? { ...pids, operator: operatorPid } : pids);
}

export async function startControlPlane(n: number, s: Settings): Promise<ControlPlane> {
  // Room for the rollout's surge pods (one more per app while its pods are replaced).
  return ControlPlane.start({ auditLog: true, log, pods: n * (s.size + 2), nodePortRange: n > 2700 ? WIDE_NODE_PORTS : undefined, profiling: !!s.profile });
}

/** The sum of every sample of one metric family in a Prometheus text exposition. */
export const metricSum = (text: string, name: string) =>
  text.split('\n').filter((l) => l.startsWith(name) && (l[name.length] === '{' || l[name.length] === ' ')).reduce((t, l) => t + Number(l.split(' ').pop()), 0);

/**
 * Start and restart at N converged CRs: the process is started again on a control
 * plane whose N CRs are converged, and timed from its spawn until its caches are synced and every CR
 * was checked: at least N reconciles counted (controller_runtime_reconcile_total, which both operators
 * export) and the work queue empty. Its writes meanwhile come from the audit log (Leases left out).
 */
export async function timedRestart<P>(who: string, n: number, metricsUrl: string, start: () => Promise<P>): Promise<{ proc: P; seconds: number; fromIso: string; toIso: string }> {
  log(`bench: ${who} N=${n}: restarted on ${n} converged CRs, until every CR is checked`);
  const fromIso = new Date().toISOString();
  const t = performance.now();
  const proc = await start();
  await waitFor(`${who}: ${n} CRs checked after the restart`, async () => {
    const m = (await httpGet(metricsUrl).catch(() => ({ status: 0, body: '' }))).body;
    return metricSum(m, 'controller_runtime_reconcile_total') >= n && metricSum(m, 'workqueue_depth') === 0;
  }, { timeoutMs: 600_000, intervalMs: 100 });
  return { proc, seconds: seconds(t), fromIso, toIso: new Date().toISOString() };
}

/** Writes in a window's request counts, Lease renewals left out. */
export const writesBesidesLeases = (counts: Record<string, number>) => sum(counts, (what) => isWrite(what) && !what.split(' ')[1]!.startsWith('leases'));
