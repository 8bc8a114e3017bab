// Many unrelated objects in the cluster, on a control plane of its own: before the
// operator starts, UNRELATED_OBJECTS (default 1500) Deployments (replicas 0, so each also gets a
// ReplicaSet from kube-controller-manager) and ClusterIP Services that are not ours are created in
// three other namespaces, with a few lookalikes: objects rendered for a CR of the same name but in
// another namespace and without a controller reference to any CR, some carrying our `managed-by`
// label (so the operator's caches hold them, by design) and some another `managed-by` value. The
// operator then runs cluster-wide (APPKIND_WATCH_NAMESPACE empty, as the in-cluster bundle runs it),
// as the bundle's ServiceAccount with its cluster-wide RBAC, and LOAD_CRS (default 100) CRs are
// created, 8 in flight.
//
// Asserted, from outcomes: every CR converges (load.ts endStateProblems); no unrelated object or
// lookalike was modified (resourceVersions unchanged) or deleted, and the operator sent no request at
// all into their namespaces; every list and watch the operator sent for Deployments, Services,
// ReplicaSets and pods is label-selected (or selects one object by name), and every list is
// paginated (`limit` at most the informer's PAGE_SIZE); and what those lists return (each one sent
// again as the admin, page by page as the informer reads it) is only objects carrying our label:
// none of the unrelated objects, so the caches fed by them hold our children (and the lookalikes
// made to carry our label) only. The operator exposes no cache-size metric, so the audit log's
// requestURIs, replayed, are the evidence of what its caches hold.
//
// Why it fails if the lists were not label-selected: an informer without its labelSelector would
// list `/apis/apps/v1/deployments?limit=500` cluster-wide. That URI fails the "label-selected"
// assertion, and replaying it returns the unrelated Deployments (750 of them, more than a page), so
// the "nothing unrelated returned" assertion fails as well. A list without `limit` fails the
// pagination assertion. Checked by hand: with DEPLOYMENTS' labelSelector removed in
// operator/controller/operator.ts, the test fails on all three (the list and watch URIs unselected,
// the unrelated Deployments returned, more Deployments than ours), though every CR still converges.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AppsV1Api, CoreV1Api, KubernetesObject, V1Deployment, V1Service } from '@kubernetes/client-node';
import { App, Chart } from 'cdk8s';
import { ContainerApp, OperatorBundle } from 'cdk8s-appkind';
import { CHILD_SELECTOR } from '../../operator/controller/reconcile.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { render } from '../../operator/kinds/render.js';
import { PAGE_SIZE } from '../../operator/runtime/informer.js';
import { RestClient } from '../../operator/runtime/rest.js';
import { applyManifests } from '../../tools/controlplane/apply.js';
import { ControlPlane, type AuditEvent } from '../../tools/controlplane/controlplane.js';
import { crObject } from './cluster.js';
import { applyOp, changedVersions, converged, LoadModel, sleep } from './load.js';
import { installCrds, OperatorProcess, OPERATOR_SA } from './operator-process.js';

const kind = SAMPLE_KIND;
const N = Number(process.env.LOAD_CRS ?? 100);
const UNRELATED = Number(process.env.UNRELATED_OBJECTS ?? 1500);
const NS = 'apps';
const OPERATOR_NS = 'appkind-system';
const NOISE = ['noise-0', 'noise-1', 'noise-2'];
/** Lookalikes per variant: rendered for a CR named app-<i> (as in NS), in a noise namespace, owned by nothing. */
const LOOKALIKES = 5;
const IN_FLIGHT = 8;
const CREATE_IN_FLIGHT = 16;
const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_SA}`;
/** What the operator caches; each must be listed and watched by selector only. */
const CACHED_RESOURCES = new Set(['deployments', 'services', 'replicasets', 'pods']);

let cp: ControlPlane;
let rest: RestClient;
let core: CoreV1Api;
let apps: AppsV1Api;
let operator: OperatorProcess | undefined;
const model = new LoadModel(kind, NS, true);

/** Runs `ops`, `inFlight` at a time. */
async function runAll(ops: (() => Promise<unknown>)[], inFlight: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ops.length) await ops[next++]!();
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** Someone else's Deployment (replicas 0) and ClusterIP Service, with none of our labels. */
function unrelatedPair(namespace: string, i: number): [V1Deployment & KubernetesObject, V1Service & KubernetesObject] {
  const labels = { app: `web-${i}`, team: 'others' };
  return [
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `web-${i}`, namespace, labels },
      spec: {
        replicas: 0, selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'example.com/theirs:1' }] } },
      },
    },
    {
      apiVersion: 'v1', kind: 'Service', metadata: { name: `web-${i}`, namespace, labels },
      spec: { type: 'ClusterIP', selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
    },
  ];
}

/**
 * What render() gives for a CR app-<i> of NS, put in `namespace` with no owner (replicas 0, a
 * ClusterIP Service): our labels exactly, or with `managed-by` set to another manager.
 */
function lookalikes(namespace: string, i: number, managedBy?: string): KubernetesObject[] {
  const cr = { ...crObject(kind, NS, `app-${i}`, { size: 1 }), metadata: { name: `app-${i}`, namespace: NS } };
  return render(kind, cr as Parameters<typeof render>[1]).filter((o) => o.kind === 'Deployment' || o.kind === 'Service').map((o) => {
    const obj = JSON.parse(JSON.stringify(o)) as KubernetesObject & { spec: Record<string, unknown> };
    const labels = { ...obj.metadata!.labels, ...(managedBy ? { [ContainerApp.MANAGED_BY_LABEL]: managedBy } : {}) };
    obj.metadata = { name: obj.metadata!.name, namespace, labels };
    if (obj.kind === 'Deployment') obj.spec.replicas = 0;
    if (obj.kind === 'Service') {
      obj.spec.type = 'ClusterIP';
      obj.spec.ports = (obj.spec.ports as { nodePort?: number }[]).map((p) => {
        const port = { ...p };
        delete port.nodePort;
        return port;
      });
    }
    return obj;
  });
}

/** `Kind/namespace/name` -> resourceVersion of every Deployment and Service in the noise namespaces. */
async function noiseVersions(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const ns of NOISE) {
    for (const [apiVersion, k] of [['apps/v1', 'Deployment'], ['v1', 'Service']] as const) {
      for (const o of (await rest.list<KubernetesObject>(apiVersion, k, ns, undefined, { limit: PAGE_SIZE })).items)
        out.set(`${k}/${ns}/${o.metadata!.name}`, o.metadata!.resourceVersion!);
    }
  }
  return out;
}

/** Every noise Deployment's status written by kube-controller-manager for its current generation. */
async function noiseDeploymentsSettled(): Promise<boolean> {
  for (const ns of NOISE) {
    for (const d of (await apps.listNamespacedDeployment({ namespace: ns })).items) {
      const progressing = d.status?.conditions?.find((c) => c.type === 'Progressing');
      if (d.status?.observedGeneration !== d.metadata?.generation || progressing?.reason !== 'NewReplicaSetAvailable') return false;
    }
  }
  return true;
}

let before: Map<string, string>;
let since: string;

beforeAll(async () => {
  cp = await ControlPlane.start({ auditLog: true, scheduler: true, pods: 2 * N });
  const kc = cp.kubeConfig();
  rest = new RestClient(kc);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  for (const name of [NS, OPERATOR_NS, ...NOISE]) await core.createNamespace({ body: { metadata: { name } } });
  await installCrds(kc, [kind]);
  // The bundle as a cluster admin installs it, watching every namespace (its Deployment left out: we run the process).
  const chart = new Chart(new App(), 'bundle');
  new OperatorBundle(chart, 'op', { kinds: [kind], namespace: OPERATOR_NS, createNamespace: false, crds: false });
  await applyManifests(kc, (chart.toJson() as KubernetesObject[]).filter((o) => o.kind !== 'Deployment'));

  const noise: KubernetesObject[] = [];
  for (let i = 0; i < UNRELATED / 2; i++) noise.push(...unrelatedPair(NOISE[i % NOISE.length]!, i));
  for (let i = 0; i < LOOKALIKES; i++) noise.push(...lookalikes(NOISE[0]!, i), ...lookalikes(NOISE[1]!, i, 'someone-else'));
  const started = Date.now();
  await runAll(noise.map((o) => () => rest.apply(o, 'others')), CREATE_IN_FLIGHT);
  console.log(`${noise.length} unrelated objects created in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // kube-controller-manager writes each Deployment's status (and makes its ReplicaSet); once that
  // is done and two snapshots agree, nothing but the operator could change them.
  const deadline = Date.now() + 300_000;
  while (!(await noiseDeploymentsSettled())) {
    if (Date.now() > deadline) throw new Error('the unrelated Deployments did not settle');
    await sleep(2_000);
  }
  for (;;) {
    before = await noiseVersions();
    await sleep(3_000);
    if (changedVersions(before, await noiseVersions()).length === 0) break;
    if (Date.now() > deadline) throw new Error('the unrelated objects kept changing before the operator started');
  }
  expect(before.size).toBe(UNRELATED + 4 * LOOKALIKES);

  since = new Date().toISOString();
  operator = await OperatorProcess.spawn({
    kubeconfig: await cp.serviceAccountKubeconfig(OPERATOR_NS, OPERATOR_SA),
    env: { APPKIND_WATCH_NAMESPACE: '', APPKIND_KINDS: JSON.stringify([kind]), APPKIND_LOG_LEVEL: 'info' },
    timeoutMs: 120_000,
  });
}, 600_000);

afterAll(async () => {
  await operator?.stop('SIGTERM');
  rest?.close();
  await cp?.stop();
});

/**
 * The operator's requests since it started, one event per request: a watch still open has only its
 * ResponseStarted event, a finished request its ResponseComplete (or Panic) one as well.
 */
async function operatorRequests(): Promise<AuditEvent[]> {
  const byId = new Map<string, AuditEvent>();
  for (const e of await cp.readAuditLog()) if (e.user.username === OPERATOR_USER && e.stageTimestamp > since) byId.set(e.auditID, e);
  return [...byId.values()];
}

describe(`${UNRELATED} unrelated Deployments and Services in the cluster`, () => {
  test(`${N} CRs converge; nothing unrelated is touched, listed or cached; lists are label-selected and paginated`, async () => {
    await runAll(
      Array.from({ length: N }, (_, i) => {
        model.set(`app-${i}`, { size: 1 });
        return applyOp(rest, model, `app-${i}`, 'load-test');
      }),
      IN_FLIGHT,
    );
    await converged(rest, core, model, `${N} CRs among ${UNRELATED} unrelated objects`, 300_000);

    // Nothing unrelated modified or deleted (a delete shows as "-> absent").
    expect(changedVersions(before, await noiseVersions())).toEqual([]);

    const requests = await operatorRequests();
    // No request of the operator's, of any verb, named an object in the unrelated objects' namespaces.
    expect(requests.filter((e) => NOISE.includes(e.objectRef?.namespace ?? '')).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);

    const reads = requests.filter((e) => (e.verb === 'list' || e.verb === 'watch') && CACHED_RESOURCES.has(e.objectRef?.resource ?? ''));
    // The caches were filled: a list of each cached resource (cluster-wide: no namespace in the URI).
    for (const resource of CACHED_RESOURCES) expect(reads.some((e) => e.verb === 'list' && e.objectRef?.resource === resource && !e.objectRef.namespace)).toBe(true);
    const unselected: string[] = [];
    const unpaged: string[] = [];
    const lists = new Map<string, { resource: string; apiVersion: string; namespace?: string; labelSelector?: string; fieldSelector?: string; limit: number }>();
    for (const e of reads) {
      const url = new URL(e.requestURI, 'https://apiserver');
      const labelSelector = url.searchParams.get('labelSelector') ?? undefined;
      const fieldSelector = url.searchParams.get('fieldSelector') ?? undefined;
      // Ours by label, or one object by name (a watch on someone else's object that blocks a CR).
      if (labelSelector !== CHILD_SELECTOR && !/^metadata\.name=[^,]+$/.test(fieldSelector ?? '')) unselected.push(`${e.verb} ${e.requestURI}`);
      if (e.verb !== 'list') continue;
      const limit = Number(url.searchParams.get('limit'));
      if (!(limit > 0 && limit <= PAGE_SIZE)) unpaged.push(e.requestURI);
      const ref = e.objectRef!;
      const apiVersion = ref.apiGroup ? `${ref.apiGroup}/${ref.apiVersion}` : ref.apiVersion!;
      const query = [labelSelector && `labelSelector=${labelSelector}`, fieldSelector && `fieldSelector=${fieldSelector}`, `limit=${limit}`].filter(Boolean).join('&');
      lists.set(`${ref.namespace ? `${ref.namespace}/` : ''}${ref.resource}?${query}`, {
        resource: ref.resource!, apiVersion, namespace: ref.namespace || undefined, labelSelector, fieldSelector, limit,
      });
    }

    // What those lists return now, read as the informer reads them (page by page, its limit), is
    // only objects carrying our label: none of the unrelated objects, nor a lookalike managed by
    // someone else. Without the selector the unrelated ones would be most of it.
    const kinds: Record<string, string> = { deployments: 'Deployment', services: 'Service', replicasets: 'ReplicaSet', pods: 'Pod' };
    const foreign: string[] = [];
    const oversized: string[] = [];
    for (const l of lists.values()) {
      let count = 0;
      for await (const page of rest.pages<KubernetesObject>(l.apiVersion, kinds[l.resource]!, l.namespace, l.labelSelector, { limit: l.limit, fieldSelector: l.fieldSelector })) {
        if (page.items.length > l.limit) oversized.push(`${l.resource}: a page of ${page.items.length} (limit ${l.limit})`);
        count += page.items.length;
        for (const o of page.items) {
          const labels = o.metadata?.labels ?? {};
          if (labels[ContainerApp.MANAGED_BY_LABEL] !== ContainerApp.DEFAULT_MANAGED_BY && !l.fieldSelector) foreign.push(`${l.resource} ${o.metadata?.namespace}/${o.metadata?.name}`);
        }
      }
      // Our Deployments and Services: one per CR, plus the lookalikes carrying our label.
      if ((l.resource === 'deployments' || l.resource === 'services') && count > N + LOOKALIKES)
        oversized.push(`${l.resource} ${l.labelSelector ?? ''}: ${count} objects, ours and the lookalikes are ${N + LOOKALIKES}`);
    }
    // One assertion, so that a failure shows every way the lists went wrong at once.
    expect({ unselected, unpaged, foreign: foreign.slice(0, 20), foreignCount: foreign.length, oversized }).toEqual({
      unselected: [], unpaged: [], foreign: [], foreignCount: 0, oversized: [],
    });

    // The same collections unselected span several pages: the unrelated objects are there to be missed.
    const all = await rest.list<KubernetesObject>('apps/v1', 'Deployment', undefined, undefined, { limit: PAGE_SIZE });
    expect(all.items.length).toBeGreaterThan(UNRELATED / 2);
    const rss = await operator!.metric('process_resident_memory_bytes');
    console.log(
      `${requests.length} operator requests; ${reads.filter((e) => e.verb === 'list').length} list requests of ${lists.size} cache lists (${[...lists.keys()].join('; ')}); ` +
        `${all.items.length} Deployments in the cluster; operator RSS ${(rss / 2 ** 20).toFixed(0)} MiB`,
    );
    expect(operator!.exited).toBe(false);
    expect(operator!.logs.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([]);
  }, 600_000);
});
