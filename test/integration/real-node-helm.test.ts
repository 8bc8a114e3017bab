// Helm 4's `install --wait` of a chart holding a CR, on the real node (containerd, kubelet): it returns
// once the app's pod passes its readiness probe (and it answers on its NodePort), and fails at once for a
// CR that can never be ready (its Deployment name taken: Stalled), instead of waiting out --timeout.
// The app is test/integration/realapp. Needs root and Linux.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CoreV1Api, KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { rmSync } from 'node:fs';
import { AppKind } from 'cdk8s-appkind';
import { RestClient } from '../../operator/runtime/rest.js';
import { chartHolding, runHelm } from '../gitops-clients.js';
import { eventually, foreignDeployment } from './cluster.js';
import { RealAppNode, startRealAppNode } from './real-app-node.js';
import { getLocal } from './real-node-pods.js';

type Resource = KubernetesObject & { status?: { nodePort?: number; conditions?: { type: string; status: string }[] } };

let node: RealAppNode | undefined;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let kind: AppKind;
const charts: string[] = [];

const chartOf = (name: string, spec: Record<string, unknown>) =>
  chartHolding(charts, { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name }, spec });
const helm = (...args: string[]) => runHelm(node!.cp.kubeconfigPath, ns, args);

beforeAll(async () => {
  node = await startRealAppNode('realnode-helm', (image) => ({
    group: 'helm.realnode.example.com', version: 'v1', kind: 'Charted', image, port: 8080, readinessProbe: { httpGet: { path: '/ready' }, periodSeconds: 1 },
  }));
  ({ kc, rest, ns, kind } = node);
}, 600_000);

afterAll(async () => {
  expect(await node?.stop()).toBe(0);
  for (const dir of charts) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('helm install --wait on the real node', () => {
  test('returns once the app\'s pod is ready; the app answers on its NodePort', async () => {
    const installed = await helm('install', 'shop', chartOf('shop', { size: 1 }), '--wait', '--timeout', '240s');
    expect(installed).toMatchObject({ code: 0, output: expect.stringContaining('STATUS: deployed') });
    // Right when helm returns, not eventually: the pod passes its readiness probe and serves.
    const pods = (await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/instance=shop' })).items;
    expect(pods.map((p) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status)).toEqual(['True']);
    const cr = await rest.get<Resource>({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name: 'shop', namespace: ns } });
    // Through the NodePort once kube-proxy has programmed it (the Service's routing, not the app's readiness).
    let answer = { status: 0, body: '' };
    await eventually('the NodePort answers', async () => (answer = await getLocal(cr!.status!.nodePort!, '/ready')).status > 0, 60_000);
    expect(answer.status).toBe(200);
  }, 300_000);

  test('fails at once for a CR that can never be ready (Stalled: its Deployment name taken)', async () => {
    await rest.apply(foreignDeployment(ns, 'taken-deployment'), 'someone-else');
    const installed = await helm('install', 'taken', chartOf('taken', { size: 1 }), '--wait', '--timeout', '300s');
    expect(installed.code).toBe(1);
    expect(installed.output).toContain(`resource ${kind.kind}/${ns}/taken not ready. status: Failed, message: Deployment ${ns}/taken-deployment`);
    expect(installed.output).not.toContain('context deadline exceeded');
  }, 300_000);
});
