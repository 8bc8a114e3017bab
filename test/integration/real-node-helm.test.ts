// Helm 4's `install --wait` of a chart holding a CR, on the real node (containerd, kubelet): it returns
// once the app's pod passes its readiness probe (and it answers on its NodePort), and fails at once for a
// CR that can never be ready (its Deployment name taken: Stalled), instead of waiting out --timeout.
// The app is test/integration/realapp. Needs root and Linux.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CoreV1Api, KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { rmSync } from 'node:fs';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromDocument } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { chartHolding, runHelm } from '../gitops-clients.js';
import { createTestNamespace, eventually, foreignDeployment } from './cluster.js';
import { OperatorProcess, startOperatorOn } from './operator-process.js';
import { realAppImage } from './realapp/image.js';
import { getLocal } from './real-node-pods.js';

type Resource = KubernetesObject & { status?: { nodePort?: number; conditions?: { type: string; status: string }[] } };

const log = (line: string): void => void process.stderr.write(`${line}\n`);

let cp: ControlPlane | undefined;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let kind: AppKind;
let operator: OperatorProcess | undefined;
const charts: string[] = [];

const chartOf = (name: string, spec: Record<string, unknown>) =>
  chartHolding(charts, { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name }, spec });
const helm = (...args: string[]) => runHelm(cp!.kubeconfigPath, ns, args);

beforeAll(async () => {
  const image = await realAppImage();
  cp = await ControlPlane.start({ realNode: true, log });
  await cp.loadImageArchive(image.archive);
  kc = cp.kubeConfig();
  rest = new RestClient(kc);
  ns = await createTestNamespace(kc, 'realnode-helm');
  const config = [{ group: 'helm.realnode.example.com', version: 'v1', kind: 'Charted', image: image.name, port: 8080, readinessProbe: { httpGet: { path: '/ready' }, periodSeconds: 1 } }];
  kind = kindsFromDocument(config, 'the test kind')[0]!;
  operator = await startOperatorOn(cp, ns, [kind], { APPKIND_KINDS: JSON.stringify(config) });
}, 600_000);

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
  await cp?.stop();
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
