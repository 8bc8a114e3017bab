// `npm run bench`: the operator on the real control plane. Starts a fresh control plane, installs
// the sample kind and the operator's RBAC from the bundle construct, runs the operator as its own
// process with that ServiceAccount, and measures convergence, steady-state writes, reconcile
// counts and the memory of the compiled operator. Prints JSON and writes bench/results.json.
// Knobs: BENCH_CRS (default 50), BENCH_SIZE (2), BENCH_WORKERS (4), BENCH_STEADY_SECONDS (30).
import type { KubernetesObject } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { OperatorBundle } from 'cdk8s-appkind';
import { SAMPLE_KIND } from '../operator/config.js';
import { RestClient } from '../operator/rest.js';
import { applyManifests } from '../tools/controlplane/apply.js';
import { ControlPlane } from '../tools/controlplane/controlplane.js';
import { freePort } from '../tools/controlplane/ports.js';
import { httpGet, waitFor } from '../tools/controlplane/readiness.js';

const root = join(import.meta.dirname, '..');
const CRS = Number(process.env.BENCH_CRS ?? 50);
const SIZE = Number(process.env.BENCH_SIZE ?? 2);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 4);
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 30);
const NS = 'bench';
const OPERATOR_NS = 'appkind-system';
const kind = SAMPLE_KIND;

type Resource = KubernetesObject & { status?: { nodes?: string[]; conditions?: { type: string; status: string }[] } };
const log = (line: string) => void process.stderr.write(`${line}\n`);
const seconds = (since: number) => Math.round((Date.now() - since) / 10) / 100;
const condition = (r: Resource, type: string) => r.status?.conditions?.find((c) => c.type === type)?.status;

function procStatus(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
}

function metric(text: string, name: string, match: (labels: string) => boolean = () => true): number {
  return text.split('\n').filter((l) => l.startsWith(name) && match(l)).reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

async function waitAll(rest: RestClient, what: string, done: (r: Resource) => boolean, timeoutMs = 600_000): Promise<void> {
  await waitFor(what, async () => {
    const list = await rest.list<Resource>(`${kind.group}/${kind.version}`, kind.kind, NS);
    return list.items.length === CRS && list.items.every(done);
  }, { timeoutMs, intervalMs: 500 });
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const cp = await ControlPlane.start({ auditLog: true, log });
  const startupSeconds = seconds(t0);
  try {
    const kc = cp.kubeConfig();
    const rest = new RestClient(kc);
    const chart = new Chart(new App(), 'bundle');
    new OperatorBundle(chart, 'op', { kinds: [kind], namespace: OPERATOR_NS });
    await applyManifests(kc, (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment'));
    await rest.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, 'bench');
    const kubeconfig = await cp.serviceAccountKubeconfig(OPERATOR_NS, 'appkind-operator');
    const metricsPort = await freePort();
    // The compiled operator, as the image runs it (tsx would add its own memory to the figures).
    execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
    const operator = spawn(process.execPath, [join(root, 'build', 'operator', 'main.js')], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig, WORKERS: String(WORKERS), METRICS_PORT: String(metricsPort), HEALTH_PORT: String(metricsPort), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const metrics = async () => (await httpGet(`http://127.0.0.1:${metricsPort}/metrics`)).body;
    await waitFor('operator ready', async () => (await httpGet(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200, { timeoutMs: 60_000 });
    const baselineRssMiB = procStatus(operator.pid!, 'VmRSS');

    const tCreate = Date.now();
    for (let i = 0; i < CRS; i++) {
      await rest.apply({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name: `app-${i}`, namespace: NS }, spec: { size: SIZE } }, 'bench');
    }
    const createSeconds = seconds(tCreate);
    await waitAll(rest, `${CRS} CRs list ${SIZE} pods`, (r) => r.status?.nodes?.length === SIZE && condition(r, 'Degraded') === 'False');
    const convergeSeconds = seconds(tCreate);
    let readySeconds: number | undefined;
    if (cp.hasScheduler) {
      await waitAll(rest, `${CRS} CRs Ready`, (r) => condition(r, 'Ready') === 'True');
      readySeconds = seconds(tCreate);
    }

    const tScale = Date.now();
    for (let i = 0; i < CRS; i++) {
      await rest.request('PATCH', `/apis/${kind.group}/${kind.version}/namespaces/${NS}/${kind.plural}/app-${i}`, { body: { spec: { size: SIZE + 1 } }, contentType: 'application/merge-patch+json' });
    }
    await waitAll(rest, `${CRS} CRs scaled`, (r) => r.status?.nodes?.length === SIZE + 1 && (!cp.hasScheduler || condition(r, 'Ready') === 'True'));
    const scaleSeconds = seconds(tScale);

    await new Promise((r) => setTimeout(r, 3_000));
    const before = await metrics();
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, STEADY_SECONDS * 1000));
    const after = await metrics();
    const user = `system:serviceaccount:${OPERATOR_NS}:appkind-operator`;
    const audit = await cp.readAuditLog();
    const steadyWrites = audit.filter((e) => e.user.username === user && e.stageTimestamp > since && ['create', 'update', 'patch', 'delete'].includes(e.verb)).length;
    const writes = audit.filter((e) => e.user.username === user && ['create', 'update', 'patch', 'delete'].includes(e.verb));
    const totalWrites = writes.length;
    const writesByResource: Record<string, number> = {};
    for (const e of writes) {
      const what = `${e.verb} ${e.objectRef?.resource ?? '?'}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
      writesByResource[what] = (writesByResource[what] ?? 0) + 1;
    }
    const reconciles = metric(after, 'controller_runtime_reconcile_total');
    const steadyReconciles = reconciles - metric(before, 'controller_runtime_reconcile_total');
    const rssMiB = procStatus(operator.pid!, 'VmRSS');
    const peakRssMiB = procStatus(operator.pid!, 'VmHWM');

    operator.kill('SIGTERM');
    const exitCode = await new Promise<number | null>((r) => operator.once('exit', (code) => r(code)));
    const results = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
      params: { crs: CRS, size: SIZE, workers: WORKERS, steadySeconds: STEADY_SECONDS, scheduler: cp.hasScheduler },
      controlPlaneStartupSeconds: startupSeconds,
      createSeconds,
      convergeSeconds,
      readySeconds,
      scaleSeconds,
      reconcilesTotal: reconciles,
      operatorWritesTotal: totalWrites,
      operatorWritesByResource: writesByResource,
      steadyStateWrites: steadyWrites,
      steadyStateReconciles: steadyReconciles,
      operatorRssMiB: { idle: baselineRssMiB, afterRun: rssMiB, peak: peakRssMiB },
      operatorExitCode: exitCode,
    };
    const json = JSON.stringify(results, null, 2);
    writeFileSync(join(root, 'bench', 'results.json'), `${json}\n`);
    process.stdout.write(`${json}\n`);
  } finally {
    await cp.stop();
  }
}

main().catch((e: unknown) => {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
