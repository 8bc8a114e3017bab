// Shared by the tests that change hundreds of CRs while faults happen (faults-under-load.test.ts, faults-under-load-2.test.ts,
// soak.test.ts): a model of what the test asked for, and a check of the end state against it that
// reads everything fresh from the API server; throttling.test.ts uses its check of one CR's convergence.
import { CoreV1Api, KubernetesObject, V1Deployment, V1Pod, V1Service } from '@kubernetes/client-node';
import { AppKind, ContainerApp } from 'cdk8s-appkind';
import { CHILD_SELECTOR } from '../../operator/controller/reconcile.js';
import { render, type AppResource, type AppSpec } from '../../operator/kinds/render.js';
import { ApiError, RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane, ControlPlaneOptions } from '../../tools/controlplane/controlplane.js';
import { crObject } from './cluster.js';
import { installCrds, installOperatorIdentity, OPERATOR_SA } from './operator-process.js';

type Condition = { type: string; status: string };
export type LoadResource = AppResource & KubernetesObject & {
  status?: { nodes?: string[]; observedGeneration?: number; readyReplicas?: number; nodePort?: number; conditions?: Condition[] };
};

/** A control plane of a load test's own, ready for the operator: see startLoadCluster. */
export interface LoadCluster {
  readonly cp: ControlPlane;
  /** Admin clients. */
  readonly rest: RestClient;
  readonly core: CoreV1Api;
  /** The operator's ServiceAccount's kubeconfig (its RBAC as the install bundle gives it). */
  readonly operatorKubeconfig: string;
}

/**
 * Starts a control plane with the scheduler and kwok (pods turn Ready on fake nodes, so status.nodes
 * and Ready mean something) for up to `pods` pods, and installs in it the namespace, the kind's CRD and
 * the operator's identity.
 */
export async function startLoadCluster(
  kind: AppKind,
  namespace: string,
  pods: number,
  opts: Pick<ControlPlaneOptions, 'watchCache'> = {},
): Promise<LoadCluster> {
  const cp = await ControlPlane.start({ scheduler: true, pods, ...opts });
  const kc = cp.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await installCrds(kc, [kind]);
  await installOperatorIdentity(kc, [kind], namespace);
  return { cp, rest: new RestClient(kc), core, operatorKubeconfig: await cp.serviceAccountKubeconfig(namespace, OPERATOR_SA) };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What one CR should be: its spec (fields left out take the kind's defaults) and labels. */
export interface WantedCr {
  spec: AppSpec;
  labels?: Record<string, string>;
  /**
   * Changes asked for that change the Deployment's spec (size, or the image or port in effect),
   * the first apply counted: how often the Deployment's `metadata.generation` may have moved.
   */
  deploymentChanges: number;
}

/**
 * What the test asked for. `exactGenerations`: every change was made on a converged CR, one at a
 * time, so each Deployment's generation must equal its count of changes; otherwise (changes made
 * faster than the operator converges, which it may coalesce) it must not exceed it.
 */
export class LoadModel {
  readonly wanted = new Map<string, WantedCr>();
  readonly deleted = new Set<string>();

  constructor(readonly kind: AppKind, readonly namespace: string, readonly exactGenerations: boolean) {}

  /** The CR as the test applies it: the whole wanted state (a field left out is released). */
  object(name: string): KubernetesObject & { spec?: Record<string, unknown> } {
    const w = this.wanted.get(name);
    if (!w) throw new Error(`load model: ${name} is not wanted`);
    const obj = crObject(this.kind, this.namespace, name, { ...w.spec });
    return w.labels ? { ...obj, metadata: { ...obj.metadata, labels: w.labels } } : obj;
  }

  /** Records a create or an update of `name`, counting it when it changes the Deployment. */
  set(name: string, spec: AppSpec, labels?: Record<string, string>): void {
    const before = this.wanted.get(name);
    const changes = (before?.deploymentChanges ?? 0) + (!before || this.deploymentDiffers(before.spec, spec) ? 1 : 0);
    this.wanted.set(name, { spec, labels, deploymentChanges: changes });
    this.deleted.delete(name);
  }

  delete(name: string): void {
    this.wanted.delete(name);
    this.deleted.add(name);
  }

  private deploymentDiffers(a: AppSpec, b: AppSpec): boolean {
    return (a.size ?? 1) !== (b.size ?? 1) || (a.image ?? this.kind.image) !== (b.image ?? this.kind.image) || (a.port ?? this.kind.port) !== (b.port ?? this.kind.port);
  }
}

/** Retries `op` until it succeeds: the API server may be restarting or paused meanwhile. */
export async function retrying(what: string, op: () => Promise<void>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await op();
      return;
    } catch (e) {
      // Refused (invalid, forbidden): no fault explains it and no retry helps.
      const refused = e instanceof ApiError && [400, 403, 422].includes(e.code);
      if (refused || Date.now() > deadline) throw new Error(`${what}: ${(e as Error).message}`);
      await sleep(250);
    }
  }
}

/**
 * The apply of the model's state of `name` now (as field manager `manager`), to run later,
 * retrying through faults.
 */
export function applyOp(rest: RestClient, model: LoadModel, name: string, manager: string): () => Promise<void> {
  const obj = model.object(name);
  return () => retrying(`apply ${name}`, async () => { await rest.apply(obj, manager); });
}

/** The delete of the CR `name` (gone already counts), to run later, retrying through faults. */
export function deleteOp(rest: RestClient, model: LoadModel, name: string): () => Promise<void> {
  const ref = crObject(model.kind, model.namespace, name);
  return () => retrying(`delete ${name}`, async () => {
    try {
      await rest.delete(ref);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
  });
}

/** A change to a CR, to run later. */
export type Op = () => Promise<void>;

/**
 * Batches of CR creates, scales and deletes that keep `model` up to date, run `inFlight` at a time
 * with a fault injected partway (faults-under-load.test.ts and faults-under-load-2.test.ts).
 */
export class LoadBatches {
  private serial = 0;

  constructor(
    private readonly rest: RestClient,
    private readonly model: LoadModel,
    private readonly inFlight: number,
    private readonly manager = 'load-test',
  ) {}

  /** A new CR `app-<serial>` of size 1. */
  create(): Op {
    const name = `app-${this.serial++}`;
    this.model.set(name, { size: 1 });
    return applyOp(this.rest, this.model, name, this.manager);
  }

  /** The CR `name` scaled between 1 and 2. */
  scale(name: string): Op {
    this.model.set(name, { size: this.model.wanted.get(name)!.spec.size === 1 ? 2 : 1 });
    return applyOp(this.rest, this.model, name, this.manager);
  }

  delete(name: string): Op {
    this.model.delete(name);
    return deleteOp(this.rest, this.model, name);
  }

  /** A third each of creates, scales and deletes (of CRs that exist), interleaved. */
  mixed(n: number): Op[] {
    const existing = [...this.model.wanted.keys()];
    const third = Math.floor(n / 3);
    const toDelete = existing.slice(0, third);
    const toScale = existing.slice(third, 2 * third);
    const ops: Op[] = [];
    for (let i = 0; i < n - 2 * third; i++) {
      ops.push(this.create());
      if (toScale[i]) ops.push(this.scale(toScale[i]!));
      if (toDelete[i]) ops.push(this.delete(toDelete[i]!));
    }
    return ops;
  }

  /**
   * Runs the ops `inFlight` at a time, and `fault` once `faultAfter` of them are done (the rest still
   * in flight or to come), and resolves when both are done.
   */
  async run(ops: Op[], faultAfter: number, fault: () => Promise<void>): Promise<void> {
    let next = 0;
    let done = 0;
    const worker = async (): Promise<void> => {
      while (next < ops.length) {
        const op = ops[next++]!;
        await op();
        done++;
      }
    };
    const injected = (async () => {
      while (done < faultAfter) await sleep(50);
      await fault();
    })();
    await Promise.all([...Array.from({ length: this.inFlight }, worker), injected]);
  }
}

/** Every leaf `want` sets has the same value in `have` (arrays element by element); what differs goes to `out`. */
export function missingFields(want: unknown, have: unknown, path: string, out: string[]): void {
  if (want !== null && typeof want === 'object') {
    if (have === null || typeof have !== 'object' || Array.isArray(want) !== Array.isArray(have)) {
      out.push(`${path}: want ${JSON.stringify(want)}, have ${JSON.stringify(have)}`);
      return;
    }
    if (Array.isArray(want) && want.length !== (have as unknown[]).length) {
      out.push(`${path}: want ${want.length} items, have ${(have as unknown[]).length}`);
      return;
    }
    for (const [k, v] of Object.entries(want)) missingFields(v, (have as Record<string, unknown>)[k], `${path}.${k}`, out);
  } else if (want !== have && !(have === undefined && (want === 0 || want === false || want === ''))) {
    // The API server leaves Go zero values (omitempty) out of what it returns: minReadySeconds 0, hostNetwork false.
    out.push(`${path}: want ${JSON.stringify(want)}, have ${JSON.stringify(have)}`);
  }
}

const isReady = (pod: V1Pod): boolean => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * What keeps the CR `name` from converged at `size`: a status not of its generation, not Ready or
 * Degraded, status.nodes not its pods among `pods`, or its pods not all ready. Each a line naming the CR.
 */
export function convergenceProblems(kind: AppKind, name: string, cr: KubernetesObject & Pick<LoadResource, 'status'>, size: number, pods: V1Pod[]): string[] {
  const out: string[] = [];
  const status = cr.status;
  if (status?.observedGeneration !== cr.metadata!.generation) out.push(`CR ${name}: observedGeneration ${status?.observedGeneration} != generation ${cr.metadata!.generation}`);
  if (status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') out.push(`CR ${name}: not Ready`);
  if (status?.conditions?.find((c) => c.type === 'Degraded')?.status !== 'False') out.push(`CR ${name}: Degraded not False`);
  const selector = ContainerApp.selectorLabelsOf(name, kind.appName);
  const own = pods.filter((p) => Object.entries(selector).every(([k, v]) => p.metadata?.labels?.[k] === v));
  const podNames = own.map((p) => p.metadata!.name!).sort();
  if (JSON.stringify(status?.nodes ?? []) !== JSON.stringify(podNames)) out.push(`CR ${name}: status.nodes ${JSON.stringify(status?.nodes)} != pods ${JSON.stringify(podNames)}`);
  if (podNames.length !== size || !own.every(isReady)) out.push(`CR ${name}: ${own.filter(isReady).length}/${podNames.length} pods ready, size ${size}`);
  return out;
}

type Child = (V1Deployment | V1Service) & { kind: string; metadata: { name: string } };

/**
 * What is wrong with the end state now (empty: converged). Reads everything fresh from the API
 * server. For every CR: its spec as asked; Ready, not Degraded, observedGeneration == generation;
 * status.nodes equal to its live pods, all Ready, as many as the size; status.readyReplicas and
 * status.nodePort true to the cluster; its Deployment and Service carrying every field render()
 * sets (labels and spec, leaf by leaf) and controller-owned by it; the Deployment's generation
 * moved no more often than the changes asked for (exactly as often with `exactGenerations`).
 * Across the namespace: no Deployment or Service with the operator's label that no CR renders, no
 * pod of a CR that is gone, no CR the test deleted.
 */
export async function endStateProblems(rest: RestClient, core: CoreV1Api, model: LoadModel): Promise<string[]> {
  const { kind, namespace: ns } = model;
  const out: string[] = [];
  const crs = (await rest.list<LoadResource>(`${kind.group}/${kind.version}`, kind.kind, ns)).items;
  const pods = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const [deployments, services] = await Promise.all([
    rest.list<Child>('apps/v1', 'Deployment', ns, CHILD_SELECTOR),
    rest.list<Child>('v1', 'Service', ns, CHILD_SELECTOR),
  ]);
  const children = new Map<string, Child>([...deployments.items, ...services.items].map((o) => [`${o.kind}/${o.metadata.name}`, o]));

  const names = new Set(crs.map((c) => c.metadata.name));
  for (const name of model.wanted.keys()) if (!names.has(name)) out.push(`CR ${name} missing`);
  for (const name of model.deleted) if (names.has(name) && !model.wanted.has(name)) out.push(`CR ${name} deleted but still there`);

  const expectedChildren = new Set<string>();
  const uids = new Map<string, string>();
  for (const cr of crs) {
    const name = cr.metadata.name;
    uids.set(cr.metadata.uid!, name);
    const w = model.wanted.get(name);
    if (w) {
      const asked = JSON.stringify(Object.entries(w.spec).filter(([, v]) => v !== undefined).sort());
      const have = JSON.stringify(Object.entries(cr.spec ?? {}).sort());
      if (asked !== have) out.push(`CR ${name}: spec ${have}, asked ${asked}`);
      for (const [k, v] of Object.entries(w.labels ?? {})) if (cr.metadata.labels?.[k] !== v) out.push(`CR ${name}: label ${k}=${cr.metadata.labels?.[k]}, asked ${v}`);
    }
    const size = cr.spec?.size ?? 1;
    const status = cr.status;
    out.push(...convergenceProblems(kind, name, cr, size, pods));
    if ((status?.readyReplicas ?? 0) !== size) out.push(`CR ${name}: status.readyReplicas ${status?.readyReplicas}, size ${size}`);

    for (const desired of render(kind, cr)) {
      const key = `${desired.kind}/${desired.metadata.name}`;
      expectedChildren.add(key);
      const live = children.get(key);
      if (!live) {
        out.push(`CR ${name}: ${key} missing`);
        continue;
      }
      const owner = live.metadata.ownerReferences?.find((r) => r.controller);
      if (owner?.uid !== cr.metadata.uid) out.push(`${key}: controller owner ${owner?.uid}, CR uid ${cr.metadata.uid}`);
      const diff: string[] = [];
      missingFields({ metadata: { labels: desired.metadata.labels }, spec: desired.spec }, live, key, diff);
      out.push(...diff);
      if (live.kind === 'Service') {
        const nodePort = (live as V1Service).spec?.ports?.[0]?.nodePort;
        if (status?.nodePort !== nodePort) out.push(`CR ${name}: status.nodePort ${status?.nodePort}, ${key} has ${nodePort}`);
      }
      if (live.kind === 'Deployment' && w) {
        const generation = live.metadata.generation ?? 0;
        const bad = model.exactGenerations ? generation !== w.deploymentChanges : generation > w.deploymentChanges;
        if (bad) out.push(`${key}: metadata.generation ${generation}, ${model.exactGenerations ? '' : 'at most '}${w.deploymentChanges} (1 + the spec changes asked): a write changed it more often`);
      }
    }
  }
  // No child without its CR (orphans), none left of a deleted CR, no pod of a CR that is gone.
  for (const [key, live] of children) {
    if (expectedChildren.has(key)) continue;
    const owner = live.metadata.ownerReferences?.find((r) => r.controller);
    out.push(`${key}: not rendered by any CR (controller owner ${owner?.name ?? 'none'}, ${owner && uids.has(owner.uid) ? 'exists' : 'gone'})`);
  }
  for (const pod of pods) {
    const instance = pod.metadata?.labels?.[ContainerApp.INSTANCE_LABEL];
    if (instance !== undefined && !names.has(instance)) out.push(`pod ${pod.metadata?.name}: its CR ${instance} is gone`);
  }
  return out;
}

/** Waits for endStateProblems() to come back empty; fails with what is still wrong. Resolves with the seconds it took. */
export async function converged(rest: RestClient, core: CoreV1Api, model: LoadModel, what: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  let last: string[] = [];
  while (Date.now() - started < timeoutMs) {
    try {
      last = await endStateProblems(rest, core, model);
      if (process.env.LOAD_DEBUG) process.stderr.write(`${what}: ${last.length} problems: ${last.slice(0, 3).join(' | ')}\n`);
      if (last.length === 0) {
        const seconds = (Date.now() - started) / 1000;
        console.log(`${what}: converged ${seconds.toFixed(1)} s after the changes; ${model.wanted.size} CRs, ${model.deleted.size} deleted`);
        return seconds;
      }
    } catch (e) {
      last = [`reading the end state: ${(e as Error).message}`];
    }
    await sleep(2_000);
  }
  throw new Error(`${what}: not converged after ${timeoutMs / 1000} s; ${last.length} problems, first 30:\n${last.slice(0, 30).join('\n')}`);
}

/**
 * resourceVersions of the CRs and their children in the namespace, to show nothing writes once
 * everything converged (zero steady-state writes, no late duplicate apply).
 */
export async function resourceVersions(rest: RestClient, model: LoadModel): Promise<Map<string, string>> {
  const { kind, namespace: ns } = model;
  const lists = await Promise.all([
    rest.list<KubernetesObject>(`${kind.group}/${kind.version}`, kind.kind, ns),
    rest.list<KubernetesObject>('apps/v1', 'Deployment', ns, CHILD_SELECTOR),
    rest.list<KubernetesObject>('v1', 'Service', ns, CHILD_SELECTOR),
  ]);
  const kinds = [kind.kind, 'Deployment', 'Service'];
  return new Map(lists.flatMap((l, i) => l.items.map((o) => [`${kinds[i]}/${o.metadata!.name}`, o.metadata!.resourceVersion!] as const)));
}

/** Keys whose resourceVersion differs between two snapshots (or that appear in only one). */
export function changedVersions(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k) !== after.get(k)).map((k) => `${k}: ${before.get(k) ?? 'absent'} -> ${after.get(k) ?? 'absent'}`);
}
