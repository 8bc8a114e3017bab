// Pod security per kind on the real control plane: pods of a kind declared runAsNonRoot are admitted
// in a namespace enforcing the "restricted" Pod Security Standard; pods of a default kind are refused
// there, and the CR's Ready condition and a Warning Event carry the API server's reason.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { AppKind } from 'cdk8s-appkind';
import { RestClient } from '../../operator/runtime/rest.js';
import { createTestNamespace, crObject, eventually, sharedCluster } from './cluster.js';
import { installCrds, installOperatorIdentity, OperatorProcess } from './operator-process.js';

type Condition = { type: string; status: string; reason: string; message: string };
type Resource = KubernetesObject & { status?: { conditions?: Condition[] } };
type Event = KubernetesObject & { reason: string; message: string; type: string; involvedObject: { name: string; kind: string } };

const restricted: AppKind = {
  group: 'podsecurity.appkind.test', version: 'v1', kind: 'Hardened', plural: 'hardeneds', appName: 'hardened',
  image: 'takeyan/flask:0.0.3', port: 5000, runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true,
};
const plain: AppKind = { group: 'podsecurity.appkind.test', version: 'v1', kind: 'Plain', plural: 'plains', appName: 'plain', image: 'takeyan/flask:0.0.3', port: 5000 };

let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess;

const cr = (kind: AppKind, name: string, spec: Record<string, unknown>) => crObject(kind, ns, name, spec);
const podsOf = async (name: string) =>
  (await rest.list<V1Pod>('v1', 'Pod', ns, `app.kubernetes.io/instance=${name}`)).items.filter((p) => !p.metadata?.deletionTimestamp);
const ready = async (kind: AppKind, name: string) => (await rest.get<Resource>(cr(kind, name, {})))?.status?.conditions?.find((c) => c.type === 'Ready');

beforeAll(async () => {
  kc = sharedCluster().kubeConfig;
  rest = new RestClient(kc);
  ns = await createTestNamespace(kc, 'restricted');
  await rest.request('PATCH', `/api/v1/namespaces/${ns}`, {
    body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } } },
    contentType: 'application/merge-patch+json',
  });
  await installCrds(kc, [restricted, plain]);
  await installOperatorIdentity(kc, [restricted, plain], ns);
  operator = await OperatorProcess.start(ns, { APPKIND_KINDS: JSON.stringify([restricted, plain]) });
});

afterAll(async () => {
  expect(await operator?.stop('SIGTERM')).toBe(0);
});

describe('a namespace enforcing "restricted"', () => {
  test('admits the pods of a runAsNonRoot kind, with the kind\'s security settings', async () => {
    await rest.apply(cr(restricted, 'hardened', { size: 2 }), 'cr-author');
    await eventually('two pods created', async () => (await podsOf('hardened')).length === 2, 90_000);
    const pod = (await podsOf('hardened'))[0]!;
    expect(pod.spec!.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.spec!.containers[0]!.securityContext).toMatchObject({
      runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ['ALL'] },
    });
    expect((await ready(restricted, 'hardened'))?.reason).not.toBe('FailedCreate');
    if (sharedCluster().hasScheduler) await eventually('Ready', async () => (await ready(restricted, 'hardened'))?.status === 'True', 90_000);
  });

  test('refuses the pods of a default kind, and the CR says why', async () => {
    await rest.apply(cr(plain, 'plain', { size: 1 }), 'cr-author');
    await eventually('Ready names the Pod Security refusal', async () => {
      const c = await ready(plain, 'plain');
      return c?.status === 'False' && c.reason === 'FailedCreate' && c.message.includes('violates PodSecurity "restricted:latest"');
    }, 90_000);
    expect((await ready(plain, 'plain'))!.message).toMatch(/runAsNonRoot != true/);
    expect(await podsOf('plain')).toHaveLength(0);
    await eventually('a Warning Event', async () =>
      (await rest.list<Event>('v1', 'Event', ns)).items.some((e) =>
        e.involvedObject.kind === 'Plain' && e.involvedObject.name === 'plain' && e.type === 'Warning' && e.reason === 'FailedCreate' && e.message.includes('PodSecurity')));
  });
});
