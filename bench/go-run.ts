// The Go run (--go): the controller-runtime reference operator (bench/go-operator/) on its own fresh
// control plane, measured as the operator's run measures create, scale and restart.
import type { AppResource } from 'appkind-operator/kinds';
import { freePort } from '../tools/controlplane/ports.js';
import type { Settings } from './cli.js';
import { checkSameChildren, startGoOperator } from './go-operator.js';
import { kind, NS, setUpOperator } from './operator-setup.js';
import { CR_API, createThenScale, log, machineCpu, OPERATOR_USER, requests, startControlPlane, statusPatchesPerCr, timedRestart, writesBesidesLeases, type Resource } from './phase.js';
import { cpuMeter, memoryMiB } from './proc.js';
import { writesPerApp } from './report.js';
import type { GoOperatorRun } from './results.js';
import { Tracker } from './tracker.js';

/**
 * The Go reference operator, as the operator's run measures it: its own fresh control plane, the
 * same ServiceAccount and RBAC, N CRs created then scaled at the same concurrency, until converged
 * by the same test; then its children of app-0 checked against render() (throws when they differ).
 */
export async function goOperatorRun(n: number, s: Settings, binary: string): Promise<GoOperatorRun> {
  const cp = await startControlPlane(n, s);
  try {
    const { rest, port, env } = await setUpOperator(cp);
    const health = await freePort();
    let op = await startGoOperator(binary, kind, env, { metrics: port, health });
    try {
      const rssIdleMiB = memoryMiB(op.pid, 'VmRSS');
      const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
      await crs.start();
      const apiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
      const operatorCpu = cpuMeter(op.pid);
      const allCpu = machineCpu(cp, op.pid);
      const at = () => new Date().toISOString();

      const { tCreateIso, tScaleIso, tScaledIso, createSeconds, scaleSeconds } = await createThenScale('Go operator', n, s, rest, crs);
      const apiserverCpuSeconds = apiserverCpu();
      const cpuSeconds = operatorCpu();
      const cpuSecondsByProcess = allCpu();
      const tEndIso = at();
      const rssPeakMiB = memoryMiB(op.pid, 'VmHWM');

      // Restart on N converged CRs, timed as the operator's.
      const code = await op.stop();
      if (code !== 0) log(`bench: Go operator exited with ${code}`);
      const restarted = await timedRestart('Go operator', n, `http://127.0.0.1:${port}/metrics`, () => startGoOperator(binary, kind, env, { metrics: port, health }));
      op = restarted.proc;

      // The comparison is only fair with the very same objects: app-0's children against render().
      const cr0 = crs.list().find((r) => r.metadata?.name === 'app-0');
      crs.stop();
      if (!cr0) throw new Error('bench --go: app-0 is not in the cache');
      await checkSameChildren(rest, kind, cr0 as Resource & AppResource);
      log(`bench: Go operator N=${n}: app-0's Deployment and Service are render()'s, field by field`);
      rest.close();

      const audit = await cp.readAuditLog();
      const create = requests(audit, OPERATOR_USER, tCreateIso, tScaleIso);
      const scale = requests(audit, OPERATOR_USER, tScaleIso, tEndIso);
      const statusPatches = (counts: Record<string, number>) => statusPatchesPerCr(counts, n);
      return {
        createSeconds, scaleSeconds, apiserverCpuSeconds, cpuSeconds, cpuSecondsByProcess,
        rssMiB: { idle: rssIdleMiB, peak: rssPeakMiB },
        requests: { create, scale },
        writesPerApp: { create: writesPerApp(audit, n, tCreateIso, tScaleIso), scale: writesPerApp(audit, n, tScaleIso, tScaledIso) },
        statusPatchesPerCr: { create: statusPatches(create), scale: statusPatches(scale) },
        sameChildrenAs: 'app-0',
        workers: 4,
        restart: { seconds: restarted.seconds, writes: writesBesidesLeases(requests(audit, OPERATOR_USER, restarted.fromIso, restarted.toIso)) },
      };
    } finally {
      const code = await op.stop();
      if (code !== 0) log(`bench: Go operator exited with ${code}`);
    }
  } finally {
    await cp.stop();
  }
}
