// `npm run bench:bad-neighbours`: does bad input delay the other CRs? On a fresh
// control plane with the operator (compiled, as its ServiceAccount): the time a healthy CR takes to
// converge on its own (median of --repeat runs), then 50 bad CRs (half asking for a NodePort another CR
// holds, so every apply fails; half whose Deployment name is taken by a Deployment they do not own), and
// the same healthy-CR time measured right after the 50th bad one and again once all 50 are Degraded;
// and, as the floor for "right after", right after 50 healthy CRs (the backlog any 50 creates leave),
// and as the floor for "once Degraded", once those 50 healthy CRs converged (a cluster and caches as
// full, nothing failing). The ratios divide by the "alone" time of the same run, and the bad figures
// by their floors. It also counts the bad CRs' retries and the operator's requests while the
// healthy CRs are measured once the bad ones are Degraded. Writes `badNeighbours` into
// bench/results.json, leaving the N=1000 phases of `npm run bench` as they are.
// Usage: npm run bench:bad-neighbours [-- --bad 50] [--repeat 5]
import { type KubernetesObject, type V1Deployment } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { ControlPlane } from '../tools/controlplane/controlplane.js';
import { httpGet, waitFor } from '../tools/controlplane/readiness.js';
import { buildOperator, kind, NS, OPERATOR_MAIN, setUpOperator } from './operator-setup.js';
import { metricSum } from './phase.js';
import { Tracker } from './tracker.js';

const root = join(import.meta.dirname, '..');
const CR_API = `${kind.group}/${kind.version}`;
const log = (line: string) => void process.stderr.write(`${line}\n`);

type Condition = { type: string; status: string; reason?: string };
type Resource = KubernetesObject & { spec?: { size?: number }; status?: { nodes?: string[]; nodePort?: number; observedGeneration?: number; conditions?: Condition[] } };

export interface Timing {
  readonly converged: number;
  readonly deployment: number;
}

/** What this benchmark adds to bench/results.json. */
export interface BadNeighboursResult {
  readonly date: string;
  readonly command: string;
  readonly machine: { cpus: number; loadAverageAtStart: number[]; node: string; kubernetes: string };
  readonly bad: { readonly nodePortClash: number; readonly nameConflict: number };
  /**
   * Per healthy CR: seconds from its create request to converged (Ready, 1 pod in status.nodes,
   * observedGeneration), and to its Deployment appearing (the operator's part alone: the rest is the
   * Deployment controller, scheduler and kwok, busy with the bad CRs' children too).
   */
  readonly alone: Timing[];
  /** Created right after 50 healthy CRs of size 0: the backlog any 50 creates leave in the queue. */
  readonly rightAfterGood: Timing;
  readonly rightAfterBad: Timing;
  /**
   * Created once the 50 healthy CRs converged: the floor for `afterBadDegraded`, with as many more
   * objects in the cluster and caches as the bad ones add, none of them failing.
   */
  readonly afterGoodConverged: Timing[];
  readonly afterBadDegraded: Timing[];
  /**
   * Median (or the single figure) divided by the median alone figure; and right after the bad ones
   * divided by right after the good ones (what their being bad adds to the backlog of their creates).
   */
  readonly ratios: {
    readonly rightAfterGood: Timing; readonly rightAfterBad: Timing; readonly afterGoodConverged: Timing; readonly afterBadDegraded: Timing;
    readonly rightAfterBadVsGood: Timing;
    /** afterBadDegraded's median over afterGoodConverged's: what the 50 failing ones add once settled. */
    readonly afterBadDegradedVsGood: Timing;
  };
  /** Failed reconciles (all of them the bad CRs') from their creation to the end: bounded by the backoff. */
  readonly badReconcileErrors: number;
  /**
   * What went on while the healthy CRs of `afterBadDegraded` were measured: the bad CRs' failed
   * reconciles (their retries), and the operator's requests by method (the healthy CRs' own included).
   */
  readonly duringAfterBadDegraded: { readonly badReconcileErrors: number; readonly requests: Record<string, number>; readonly seconds: number };
  readonly operatorExitCode: number | null;
}

function args(argv: string[]) {
  const value = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    const n = Number(i >= 0 ? argv[i + 1] : fallback);
    if (!Number.isInteger(n) || n < 1) throw new Error(`bench: ${flag} wants a positive integer, got ${argv[i + 1]}`);
    return n;
  };
  return { bad: value('--bad', 50), repeat: value('--repeat', 5) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (x: number) => Math.round(x * 100) / 100;
const cr = (name: string, spec: Record<string, unknown>) => ({ apiVersion: CR_API, kind: kind.kind, metadata: { name, namespace: NS }, spec });
const converged = (r: Resource) => r.status?.nodes?.length === 1 && r.status.observedGeneration === r.metadata?.generation &&
  r.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
const degraded = (r: Resource) => r.status?.conditions?.find((c) => c.type === 'Degraded')?.status === 'True';

async function main(): Promise<void> {
  const s = args(process.argv.slice(2));
  await buildOperator();
  const loadAverageAtStart = loadavg().map((l) => round(l));
  const cp = await ControlPlane.start({ log, pods: 200 });
  let exitCode: number | null = null;
  try {
    const { rest, port, env } = await setUpOperator(cp);
    const kubernetes = (await rest.request<{ gitVersion: string }>('GET', '/version')).gitVersion;
    const child = spawn(process.execPath, [OPERATOR_MAIN], { cwd: root, env, stdio: ['ignore', 'ignore', 'inherit'] });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await waitFor('operator ready', async () => (await httpGet(`http://127.0.0.1:${port}/readyz`).catch(() => ({ status: 0 }))).status === 200, { timeoutMs: 60_000 });
      const errors = async () => metricSum((await httpGet(`http://127.0.0.1:${port}/metrics`)).body, 'controller_runtime_reconcile_errors_total');
      /** The operator's requests so far by method (rest_client_requests_total summed over codes). */
      const requests = async () => {
        const out: Record<string, number> = {};
        for (const l of (await httpGet(`http://127.0.0.1:${port}/metrics`)).body.split('\n')) {
          const m = /^rest_client_requests_total\{.*method="([A-Z]+)".*\} ([0-9.e+]+)$/.exec(l);
          if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
        }
        return out;
      };
      const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
      const deployments = new Tracker<V1Deployment>(rest, { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespace: NS });
      await Promise.all([crs.start(), deployments.start()]);

      /** Seconds from the create request until the CR converged, and until its Deployment appeared. */
      const healthy = async (name: string): Promise<Timing> => {
        const seen = crs.next((r) => r.metadata?.name === name && converged(r));
        const applied = deployments.next((d) => d.metadata?.name === `${name}-deployment`);
        const t = performance.now();
        await rest.apply(cr(name, { size: 1 }), 'bench');
        return { converged: round(((await seen) - t) / 1000), deployment: round(((await applied) - t) / 1000) };
      };

      log(`bench: bad neighbours: a healthy CR on its own, ${s.repeat} times`);
      const alone: Timing[] = [];
      for (let i = 0; i < s.repeat; i++) alone.push(await healthy(`alone-${i}`));

      log(`bench: bad neighbours: ${s.bad} healthy CRs of size 0, then a healthy CR right after them`);
      for (let i = 0; i < s.bad; i++) await rest.apply(cr(`good-${i}`, { size: 0 }), 'bench');
      const rightAfterGood = await healthy('right-after-good');
      await crs.waitFor(`${s.bad} good CRs converged`, s.bad, (r) => /^good-/.test(r.metadata?.name ?? '') &&
        r.status?.observedGeneration === r.metadata?.generation && r.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 300_000);
      log(`bench: bad neighbours: the ${s.bad} healthy ones converged; a healthy CR again, ${s.repeat} times`);
      const afterGoodConverged: Timing[] = [];
      for (let i = 0; i < s.repeat; i++) afterGoodConverged.push(await healthy(`after-good-${i}`));

      // The bad ones: a NodePort held by another CR, and Deployment names taken by Deployments of someone else.
      const nodePort = 30_080;
      await rest.apply(cr('holder', { size: 0, nodePort }), 'bench');
      await crs.waitFor('holder has its NodePort', 1, (r) => r.metadata?.name === 'holder' && r.status?.nodePort === nodePort, 120_000);
      const clash = Math.ceil(s.bad / 2);
      const taken = s.bad - clash;
      for (let i = 0; i < taken; i++) {
        await rest.apply({
          apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `taken-${i}-deployment`, namespace: NS },
          spec: { replicas: 0, selector: { matchLabels: { app: `taken-${i}` } }, template: { metadata: { labels: { app: `taken-${i}` } }, spec: { containers: [{ name: 'c', image: 'example.com/theirs:1' }] } } },
        } as KubernetesObject, 'someone-else');
      }
      const errorsBefore = await errors();
      log(`bench: bad neighbours: ${clash} CRs asking for NodePort ${nodePort}, ${taken} whose Deployment name is taken; then a healthy CR`);
      for (let i = 0; i < Math.max(clash, taken); i++) {
        if (i < clash) await rest.apply(cr(`clash-${i}`, { size: 0, nodePort }), 'bench');
        if (i < taken) await rest.apply(cr(`taken-${i}`, { size: 1 }), 'bench');
      }
      const rightAfterBad = await healthy('right-after');
      await crs.waitFor(`${s.bad} bad CRs Degraded`, s.bad, (r) => /^(clash|taken)-/.test(r.metadata?.name ?? '') && degraded(r), 300_000);
      log(`bench: bad neighbours: all ${s.bad} Degraded; a healthy CR again, ${s.repeat} times`);
      const afterBadDegraded: Timing[] = [];
      const [errorsBeforeAfter, requestsBeforeAfter, afterStarted] = [await errors(), await requests(), performance.now()];
      for (let i = 0; i < s.repeat; i++) afterBadDegraded.push(await healthy(`after-${i}`));
      const requestsAfter = await requests();
      const duringAfterBadDegraded = {
        badReconcileErrors: (await errors()) - errorsBeforeAfter,
        requests: Object.fromEntries(Object.entries(requestsAfter).map(([m, n]) => [m, n - (requestsBeforeAfter[m] ?? 0)]).filter(([, n]) => n !== 0)),
        seconds: round((performance.now() - afterStarted) / 1000),
      };
      const badReconcileErrors = (await errors()) - errorsBefore;
      crs.stop();
      deployments.stop();
      rest.close();

      const typical = (ts: Timing[]): Timing => ({ converged: median(ts.map((t) => t.converged)), deployment: median(ts.map((t) => t.deployment)) });
      const base = typical(alone);
      const ratio = (t: Timing): Timing => ({ converged: round(t.converged / base.converged), deployment: round(t.deployment / base.deployment) });
      const result: Omit<BadNeighboursResult, 'operatorExitCode'> = {
        date: new Date().toISOString(),
        command: `npm run bench:bad-neighbours${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
        machine: { cpus: cpus().length, loadAverageAtStart, node: process.version, kubernetes },
        bad: { nodePortClash: clash, nameConflict: taken },
        alone,
        rightAfterGood,
        rightAfterBad,
        afterGoodConverged,
        afterBadDegraded,
        ratios: {
          rightAfterGood: ratio(rightAfterGood), rightAfterBad: ratio(rightAfterBad), afterGoodConverged: ratio(typical(afterGoodConverged)), afterBadDegraded: ratio(typical(afterBadDegraded)),
          rightAfterBadVsGood: { converged: round(rightAfterBad.converged / rightAfterGood.converged), deployment: round(rightAfterBad.deployment / rightAfterGood.deployment) },
          afterBadDegradedVsGood: {
            converged: round(typical(afterBadDegraded).converged / typical(afterGoodConverged).converged),
            deployment: round(typical(afterBadDegraded).deployment / typical(afterGoodConverged).deployment),
          },
        },
        badReconcileErrors,
        duringAfterBadDegraded,
      };
      child.kill('SIGTERM');
      exitCode = await exited;
      const file = join(root, 'bench', 'results.json');
      const results = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      writeFileSync(file, `${JSON.stringify({ ...results, badNeighbours: { ...result, operatorExitCode: exitCode } }, null, 2)}\n`);
      process.stdout.write(`${JSON.stringify({ ...result, operatorExitCode: exitCode }, null, 2)}\n`);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    }
  } finally {
    await cp.stop();
  }
}

main().catch((e: unknown) => {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
