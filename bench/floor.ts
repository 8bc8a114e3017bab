// The floor: render()'s objects server-side applied by a plain client with no operator, on a fresh
// control plane, created, scaled and (unless --no-rollout) rolled out to a new image as the operator's apps are.
import { KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { render } from 'appkind-operator/kinds';
import { RestClient } from 'appkind-operator/runtime';
import { waitFor } from '../tools/controlplane/readiness.js';
import type { Settings } from './cli.js';
import { kind, NS } from './operator-setup.js';
import { crOf, deploymentReady, deploymentRolledOut, log, machineCpu, pool, range, requests, rolloutKindOf, rolloutSize, seconds, startControlPlane } from './phase.js';
import { cpuMeter } from './proc.js';
import { ApiserverRecorder } from './profile.js';
import { writesPerApp } from './report.js';
import type { FloorRun } from './results.js';
import { Tracker } from './tracker.js';

const FLOOR_SA = 'bench-floor';
const FLOOR_USER = `system:serviceaccount:${NS}:${FLOOR_SA}`;

/** The Kubernetes version the floor's control plane reported (every run's control plane is the same build). */
export let kubernetes = 'unknown';

export async function floor(n: number, s: Settings): Promise<FloorRun> {
  const cp = await startControlPlane(n, s);
  try {
    const admin = new RestClient(cp.kubeConfig());
    kubernetes = (await admin.request<{ gitVersion: string }>('GET', '/version')).gitVersion;
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, 'bench');
    // The floor's client has its own ServiceAccount, like the operator: its requests are told apart
    // from the controllers' (which use the admin identity) in the audit log, and both pay the same
    // token authentication. RBAC: edit in the bench namespace.
    await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: FLOOR_SA, namespace: NS } }, 'bench');
    await admin.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: FLOOR_SA, namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ kind: 'ServiceAccount', name: FLOOR_SA, namespace: NS }],
    }, 'bench');
    admin.close();
    const kc = new KubeConfig();
    kc.loadFromFile(await cp.serviceAccountKubeconfig(NS, FLOOR_SA));
    const rest = new RestClient(kc);
    await waitFor('floor RBAC', async () => !!(await rest.list('apps/v1', 'Deployment', NS).catch(() => undefined)), { timeoutMs: 60_000 });
    const deployments = new Tracker<V1Deployment>(rest, { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespace: NS });
    await deployments.start();
    const recorder = s.profile ? new ApiserverRecorder(cp.kubeConfig(), s.profile, `floor-${n}`) : undefined;
    recorder?.start();
    await recorder?.mark('create');
    const apiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
    const allCpu = machineCpu(cp);
    const at = () => new Date().toISOString();

    log(`bench: floor N=${n}: create`);
    const tCreateIso = at();
    const tCreate = performance.now();
    const objects = range(n).flatMap((i) => render(kind, crOf(i, s.size)));
    await pool(objects, s.concurrency, (o) => rest.apply(o, 'bench-floor'));
    const createSent = seconds(tCreate);
    await deployments.waitFor(`floor: ${n} Deployments ready`, n, deploymentReady(s.size), 1_800_000);
    const createSeconds = seconds(tCreate);

    await recorder?.mark('scale');
    log(`bench: floor N=${n}: scale`);
    const tScaleIso = at();
    const tScale = performance.now();
    const scaled = range(n).flatMap((i) => render(kind, crOf(i, s.size + 1)).filter((o) => o.kind === 'Deployment'));
    await pool(scaled, s.concurrency, (o) => rest.apply(o, 'bench-floor'));
    const scaleSent = seconds(tScale);
    await deployments.waitFor(`floor: ${n} Deployments scaled`, n, deploymentReady(s.size + 1), 1_800_000);
    const scaleSeconds = seconds(tScale);
    const apiserverCpuSeconds = apiserverCpu();
    const cpuSecondsByProcess = allCpu();
    const tEndIso = at();

    // The rollout's floor: the objects render() gives with the kind's new image, at the sizes the
    // operator's apps have by then, applied straight; until every Deployment has rolled out.
    let rolloutSeconds: number | undefined;
    let rolloutWindow: [string, string] | undefined;
    if (s.rollout) {
      await recorder?.mark('rollout');
      log(`bench: floor N=${n}: rollout of a new image`);
      const tRollout = performance.now();
      const tRolloutIso = at();
      const rolled = range(n).flatMap((i) => render(rolloutKindOf(s), crOf(i, rolloutSize(i, s))).filter((o) => o.kind === 'Deployment'));
      await pool(rolled, s.concurrency, (o) => rest.apply(o, 'bench-floor'));
      await deployments.waitFor(`floor: ${n} Deployments rolled out`, n, (d) => deploymentRolledOut(d), 1_800_000);
      rolloutSeconds = seconds(tRollout);
      rolloutWindow = [tRolloutIso, at()];
    }
    await recorder?.mark('end');
    await recorder?.stop();

    deployments.stop();
    rest.close();
    const audit = await cp.readAuditLog();
    return {
      createSeconds,
      scaleSeconds,
      rolloutSeconds,
      apiserverCpuSeconds,
      cpuSecondsByProcess,
      sentSeconds: { create: createSent, scale: scaleSent },
      requests: { create: requests(audit, FLOOR_USER, tCreateIso, tScaleIso), scale: requests(audit, FLOOR_USER, tScaleIso, tEndIso) },
      writesPerApp: {
        create: writesPerApp(audit, n, tCreateIso, tScaleIso),
        scale: writesPerApp(audit, n, tScaleIso, tEndIso),
        ...(rolloutWindow ? { rollout: writesPerApp(audit, n, ...rolloutWindow) } : {}),
      },
    };
  } finally {
    await cp.stop();
  }
}
