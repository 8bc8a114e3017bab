// The README walkthrough for real, on the real node: the README's CR (examples/example-echoflask.yaml,
// the sample kind EchoFlask, takeyan/flask:0.0.3 stood in for by examples/echo) with size 3 runs 3
// containers, and
// `curl localhost:<nodePort>/api/echo?Hello=World!` answers from the pods; size 5 gives 5 pods that
// answer; deleting the CR stops the NodePort from answering. Then the README's AppKind quick start:
// `kubectl apply -f examples/appkind-echoflask.yaml` (its image is the same takeyan/flask:0.0.3) and
// `kubectl apply -f examples/example-flask.yaml`, and the Flask app answers on its NodePort. The
// operator runs as a process on this machine with the bundle's ServiceAccount, the bundle allowing
// AppKinds the example's group (the in-cluster operator: real-node-operator.test.ts).
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { loadAppKinds } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { ControlPlane } from '../../tools/controlplane/controlplane.js';
import { loadEchoStandIn } from '../../tools/echo-image.js';
import { createTestNamespace, eventually } from './cluster.js';
import { installOperatorBundle, OPERATOR_SA, OperatorProcess } from './operator-process.js';
import { getLocal } from './real-node-pods.js';

type Pod = KubernetesObject & { status?: { phase?: string; podIP?: string; containerStatuses?: { ready: boolean; state?: { running?: object } }[] } };
type Resource = KubernetesObject & { status?: { nodes?: string[]; nodePort?: number; conditions?: { type: string; status: string }[] } };
interface Echo {
  api: string;
  nodename: string;
  pod_ip: string;
  podname: string;
  query_string: string;
  timestamp: string;
}

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const exec = promisify(execFile);
const examples = join(import.meta.dirname, '..', '..', 'examples');
const [kind] = loadAppKinds({});
const walkthroughCr = parse(readFileSync(join(examples, 'example-echoflask.yaml'), 'utf8')) as KubernetesObject & { spec: { size: number } };
const name = walkthroughCr.metadata!.name!;
const appKindFile = join(examples, 'appkind-echoflask.yaml');
const appKind = parse(readFileSync(appKindFile, 'utf8')) as KubernetesObject & { spec: { group: string; version: string; kind: string; image: string } };
const flaskFile = join(examples, 'example-flask.yaml');
const flaskCr = parse(readFileSync(flaskFile, 'utf8')) as KubernetesObject & { spec: { size: number } };

let cp: ControlPlane;
let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const cr = (): KubernetesObject => ({ apiVersion: walkthroughCr.apiVersion, kind: walkthroughCr.kind, metadata: { name, namespace: ns } });
const status = async (of = cr()): Promise<Resource['status']> => (await rest.get<Resource>(of))?.status;

/** kubectl as the README's reader runs it, in the test's namespace. */
async function kubectl(...args: string[]): Promise<string> {
  return (await exec('kubectl', ['--kubeconfig', cp.kubeconfigPath, '-n', ns, ...args])).stdout;
}

/** The CR's pods with a running, ready container (what kubectl get pods shows as 1/1 Running). */
async function runningPods(instance = name): Promise<Pod[]> {
  const pods = await rest.list<Pod>('v1', 'Pod', ns, `app.kubernetes.io/instance=${instance}`);
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready && c.state?.running));
}

async function echo(nodePort: number, path = '/api/echo?Hello=World!'): Promise<Echo> {
  const answer = await getLocal(nodePort, path);
  expect(answer.status).toBe(200);
  return JSON.parse(answer.body) as Echo;
}

/** Pod names answering over `requests` fresh connections to the NodePort. */
async function answeringPods(nodePort: number, requests: number): Promise<Set<string>> {
  const names = new Set<string>();
  for (let i = 0; i < requests; i++) names.add((await echo(nodePort)).podname);
  return names;
}

beforeAll(async () => {
  cp = await ControlPlane.start({ realNode: true, log });
  await loadEchoStandIn(cp, log);
  kc = cp.kubeConfig();
  rest = new RestClient(kc);
  ns = await createTestNamespace(kc, 'walkthrough');
  await installOperatorBundle(kc, [kind!], ns, [appKind.spec.group]);
  operator = await OperatorProcess.spawn({ kubeconfig: await cp.serviceAccountKubeconfig(ns, OPERATOR_SA), env: { WATCH_NAMESPACE: ns } });
}, 300_000);

afterAll(async () => {
  await operator?.stop('SIGTERM');
  await cp?.stop();
});

describe('the walkthrough on the real node', () => {
  let nodePort = 0;

  test('kubectl apply -f examples/example-echoflask.yaml (size 3): 3 running containers, and the NodePort on localhost answers from a pod in status.nodes', async () => {
    expect([walkthroughCr.apiVersion, walkthroughCr.kind, walkthroughCr.spec.size]).toEqual([`${kind!.group}/${kind!.version}`, kind!.kind, 3]);
    await rest.apply({ ...walkthroughCr, metadata: { name, namespace: ns } }, 'test-user');
    await eventually('3 pods Running with ready containers', async () => (await runningPods()).length === 3, 180_000);
    await eventually('status: 3 nodes, Ready, a nodePort', async () => {
      const s = await status();
      return s?.nodes?.length === 3 && !!s.nodePort && s.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    });
    const s = (await status())!;
    nodePort = s.nodePort!;
    await eventually('the NodePort answers on 127.0.0.1', async () => (await getLocal(nodePort, '/api/echo?Hello=World!')).status === 200, 60_000);
    const answer = await echo(nodePort);
    expect(answer).toMatchObject({ api: '/api/echo', query_string: 'Hello=World!' });
    expect(s.nodes).toContain(answer.podname);
    const pod = (await runningPods()).find((p) => p.metadata?.name === answer.podname);
    expect(answer.pod_ip).toBe(pod?.status?.podIP);
    expect(Number.isNaN(Date.parse(answer.timestamp))).toBe(false);
  }, 300_000);

  test('repeated requests reach different pods', async () => {
    // Ready=True says the 3 pods pass their probes; kube-proxy learns of each from the EndpointSlice a
    // moment later (until then the one pod programmed so far may answer every request), so the
    // requests are repeated until a second pod answers or the time is up.
    const names = new Set<string>();
    await eventually('a second pod answers', async () => {
      for (const podName of await answeringPods(nodePort, 30)) names.add(podName);
      return names.size > 1;
    }, 60_000);
    expect(names.size).toBeGreaterThan(1);
    for (const podName of names) expect((await status())?.nodes).toContain(podName);
  }, 120_000);

  test('size 5: 5 pods answer', async () => {
    await rest.apply({ ...cr(), spec: { size: 5 } }, 'test-user');
    await eventually('5 pods Running with ready containers', async () => (await runningPods()).length === 5, 180_000);
    await eventually('status.nodes lists 5', async () => (await status())?.nodes?.length === 5);
    const expected = new Set((await status())!.nodes);
    const seen = new Set<string>();
    // kube-proxy picks a pod at random per connection: 5 of 5 within 200 requests all but always.
    await eventually('every one of the 5 pods answers', async () => {
      for (const podName of await answeringPods(nodePort, 40)) seen.add(podName);
      return [...expected].every((n) => seen.has(n));
    }, 120_000);
    expect([...seen].sort()).toEqual([...expected].sort());
  }, 300_000);

  test('deleting the CR: the NodePort stops answering', async () => {
    await rest.delete(cr());
    await eventually('the NodePort refuses connections', async () => {
      try {
        await getLocal(nodePort, '/api/echo', 1000);
        return false;
      } catch {
        return true;
      }
    }, 120_000);
    await eventually('the pods are gone', async () => (await rest.list<Pod>('v1', 'Pod', ns, `app.kubernetes.io/instance=${name}`)).items.length === 0, 120_000);
  }, 300_000);
});

describe('the AppKind quick start on the real node', () => {
  const flask = (): KubernetesObject => ({ apiVersion: flaskCr.apiVersion, kind: flaskCr.kind, metadata: { name: flaskCr.metadata!.name!, namespace: ns } });

  test('kubectl apply -f examples/appkind-echoflask.yaml and examples/example-flask.yaml: the Flask app answers on its NodePort', async () => {
    // The example's image is the walkthrough's, which this node runs as its local stand-in.
    expect(appKind.spec.image).toBe(kind!.image);
    await kubectl('apply', '-f', appKindFile);
    await eventually(`AppKind ${appKind.metadata!.name} Ready`, async () => {
      const ak = await rest.get<Resource>({ apiVersion: appKind.apiVersion, kind: appKind.kind, metadata: { name: appKind.metadata!.name } });
      return ak?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    });
    expect(flaskCr.apiVersion).toBe(`${appKind.spec.group}/${appKind.spec.version}`);
    await kubectl('apply', '-f', flaskFile);
    const instance = flaskCr.metadata!.name!;
    await eventually(`${flaskCr.spec.size} pods Running with ready containers`, async () => (await runningPods(instance)).length === flaskCr.spec.size, 180_000);
    await eventually('status: the pods, Ready, a nodePort', async () => {
      const s = await status(flask());
      return s?.nodes?.length === flaskCr.spec.size && !!s.nodePort && s.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    });
    const s = (await status(flask()))!;
    await eventually('the NodePort answers on 127.0.0.1', async () => (await getLocal(s.nodePort!, '/api/echo?Hello=Flask')).status === 200, 60_000);
    const answer = await echo(s.nodePort!, '/api/echo?Hello=Flask');
    expect(answer).toMatchObject({ api: '/api/echo', query_string: 'Hello=Flask' });
    expect(s.nodes).toContain(answer.podname);
  }, 300_000);
});
