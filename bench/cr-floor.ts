// The CR floor: the least work any CR-based operator makes the control plane do, at the best
// latency (--no-cr-floor skips it); the report gives the operator's ratios to it beside the floor's.
import { KubeConfig, type V1Deployment, type V1Pod, type V1Service } from '@kubernetes/client-node';
import { ContainerApp } from 'cdk8s-appkind';
import { appPropsFor, render, type AppResource, type KubeObject } from 'appkind-operator/kinds';
import { createLogger, Informer, RestClient } from 'appkind-operator/runtime';
import { computeStatus, type AppStatus } from '../operator/controller/status.js';
import type { Settings } from './cli.js';
import { kind, NS, setUpOperator } from './operator-setup.js';
import { CR_API, crConverged, crOf, deploymentReady, log, machineCpu, OPERATOR_USER, patchSize, pool, range, requests, seconds, startControlPlane, type Resource } from './phase.js';
import { cpuMeter } from './proc.js';
import { writesPerApp } from './report.js';
import type { FloorRun } from './results.js';
import { Tracker } from './tracker.js';

/** At most `k` of the calls it wraps in flight; the others wait their turn in order. */
function limiter(k: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= k) await new Promise<void>((r) => waiting.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** The children's label: the operator's pod cache selects on it. */
const CHILD_SELECTOR = `${ContainerApp.MANAGED_BY_LABEL}=${ContainerApp.DEFAULT_MANAGED_BY}`;
/** The operator's field manager (its default APPKIND_FIELD_MANAGER). */
const OPERATOR_FIELD_MANAGER = 'appkind-operator';

/**
 * The CR floor: the least work any CR-based operator makes the control plane do,
 * at the best latency. On its own fresh control plane, with the operator's CRD, RBAC and identity:
 * the bench creates the N CRs (then patches their size) at the same concurrency as in the operator's
 * run; a plain client under the operator's ServiceAccount server-side applies, as each CR's create or
 * edit is answered, exactly the children render() gives (with the ownerReference the operator sets;
 * on scale only the Deployment, which is all that changed), at the same concurrency, and patches each
 * CR's status exactly once per phase with what computeStatus gives, as soon as that app's Deployment
 * is ready (its one watch on the Deployments; the pod names status lists come from a watch of the
 * children's pods, as the operator's do). No cache of CRs, no Services watched, no reconcile, no Events.
 */
export async function crFloor(n: number, s: Settings): Promise<FloorRun> {
  const cp = await startControlPlane(n, s);
  try {
    const { rest, env } = await setUpOperator(cp);
    const kc = new KubeConfig();
    kc.loadFromFile(env.KUBECONFIG!);
    const client = new RestClient(kc);
    const crs = new Tracker<Resource>(rest, { apiVersion: CR_API, kind: kind.kind, plural: kind.plural, namespace: NS });
    await crs.start();
    const quiet = { staleMs: 600_000, log: createLogger('warn'), rest: client };
    /** Each app's CR as the last create or patch answered, and its Service as applied (NodePort). */
    const crOfApp = new Map<number, Resource & AppResource>();
    const serviceOfApp = new Map<number, V1Service>();
    /** The status written in this phase (computeStatus's previous in the next). */
    const written = new Map<number, AppStatus>();
    let phase = { size: s.size, patched: new Set<number>() };
    const statusWrites: Promise<unknown>[] = [];
    const appOf = (name: string | undefined, suffix: string) => {
      const m = name ? new RegExp(`^app-(\\d+)${suffix}$`).exec(name) : null;
      return m ? Number(m[1]) : undefined;
    };
    const pods = new Informer<V1Pod>({ apiVersion: 'v1', kind: 'Pod', plural: 'pods', namespace: NS, labelSelector: CHILD_SELECTOR }, (_t, pod) => {
      const i = appOf(pod.metadata?.labels?.[ContainerApp.INSTANCE_LABEL], '');
      if (i !== undefined) check(i);
    }, quiet);
    const deployments = new Informer<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespace: NS }, (_t, d) => {
      const i = appOf(d.metadata?.name, '-deployment');
      if (i !== undefined) check(i);
    }, quiet);
    /** The app's status patch of this phase, once its Deployment is ready and its pods are all seen. */
    const check = (i: number) => {
      const { size, patched } = phase;
      const cr = crOfApp.get(i);
      const d = deployments.get(NS, `app-${i}-deployment`);
      if (patched.has(i) || !cr || cr.spec?.size !== size || !d || !deploymentReady(size)(d)) return;
      const own = pods.list().filter((p) => p.metadata?.labels?.[ContainerApp.INSTANCE_LABEL] === `app-${i}` && !p.metadata?.deletionTimestamp);
      const props = appPropsFor(kind, cr);
      const status = computeStatus({
        size, generation: cr.metadata?.generation, selectorLabels: ContainerApp.selectorLabelsOf(props.name!, props.appName!),
        deployment: d, service: serviceOfApp.get(i), pods: own, previous: written.get(i), now: new Date(),
      });
      if (status.nodes.length !== size || status.conditions.find((c) => c.type === 'Ready')?.status !== 'True') return;
      patched.add(i);
      written.set(i, status);
      statusWrites.push(client.patchStatus(cr, status));
    };
    await pods.start();
    await deployments.start();
    const owned = (obj: KubeObject, cr: Resource): KubeObject => ({
      ...obj,
      metadata: { ...obj.metadata, namespace: NS, ownerReferences: [{ apiVersion: CR_API, kind: kind.kind, name: cr.metadata!.name!, uid: cr.metadata!.uid!, controller: true, blockOwnerDeletion: true }] },
    }) as KubeObject;
    const children = limiter(s.concurrency);
    const applyChildren = async (i: number, cr: Resource & AppResource, only?: string) => {
      const objects = render(kind, cr).filter((o) => !only || o.kind === only);
      await Promise.all(objects.map(async (o) => {
        const live = await client.apply(owned(o, cr), OPERATOR_FIELD_MANAGER);
        if (o.kind === 'Service') serviceOfApp.set(i, live as V1Service);
      }));
      check(i);
    };

    const apiserverCpu = cpuMeter(cp.pids()['kube-apiserver']!);
    const allCpu = machineCpu(cp);
    const at = () => new Date().toISOString();
    log(`bench: CR floor N=${n}: create`);
    const tCreateIso = at();
    const tCreate = performance.now();
    const applied: Promise<unknown>[] = [];
    await pool(range(n), s.concurrency, async (i) => {
      const cr = await rest.apply(crOf(i, s.size), 'bench') as Resource & AppResource;
      crOfApp.set(i, cr);
      applied.push(children(() => applyChildren(i, cr)));
    });
    const createSent = seconds(tCreate);
    await Promise.all(applied);
    await crs.waitFor(`CR floor: ${n} CRs converged`, n, crConverged(s.size), 1_800_000);
    const createSeconds = seconds(tCreate);

    log(`bench: CR floor N=${n}: scale`);
    phase = { size: s.size + 1, patched: new Set() };
    const tScaleIso = at();
    const tScale = performance.now();
    applied.length = 0;
    await pool(range(n), s.concurrency, async (i) => {
      const cr = await patchSize(rest, i, s.size + 1) as Resource & AppResource;
      crOfApp.set(i, cr);
      applied.push(children(() => applyChildren(i, cr, 'Deployment')));
    });
    const scaleSent = seconds(tScale);
    await Promise.all(applied);
    await crs.waitFor(`CR floor: ${n} CRs scaled`, n, crConverged(s.size + 1), 1_800_000);
    const scaleSeconds = seconds(tScale);
    const apiserverCpuSeconds = apiserverCpu();
    const cpuSecondsByProcess = allCpu();
    const tEndIso = at();
    await Promise.all(statusWrites);
    crs.stop();
    pods.stop();
    deployments.stop();
    client.close();
    rest.close();
    const audit = await cp.readAuditLog();
    return {
      createSeconds, scaleSeconds, apiserverCpuSeconds, cpuSecondsByProcess,
      sentSeconds: { create: createSent, scale: scaleSent },
      requests: { create: requests(audit, OPERATOR_USER, tCreateIso, tScaleIso), scale: requests(audit, OPERATOR_USER, tScaleIso, tEndIso) },
      writesPerApp: { create: writesPerApp(audit, n, tCreateIso, tScaleIso), scale: writesPerApp(audit, n, tScaleIso, tEndIso) },
    };
  } finally {
    await cp.stop();
  }
}
