// The operator loads its in-cluster config as in a pod: no kubeconfig, the ServiceAccount token, CA
// and namespace under /var/run/secrets/kubernetes.io/serviceaccount, KUBERNETES_SERVICE_HOST/PORT.
// The files are placed in a private mount namespace (a tmpfs over /run), so the host is untouched.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { RestClient } from '../../operator/runtime/rest.js';
import { requestServiceAccountToken } from '../../tools/controlplane/serviceaccount.js';
import { eventually } from './cluster.js';
import { OPERATOR_SA, OperatorProcess, prepareOperatorNamespace } from './operator-process.js';

type Resource = KubernetesObject & { status?: { nodes?: string[] } };
type Lease = KubernetesObject & { spec?: { holderIdentity?: string } };

const kind = SAMPLE_KIND;
// Mounts a tmpfs over /run in a new mount namespace, copies the pod files in, then runs the command.
const WRAPPER = [
  'unshare', '--mount', '--propagation', 'private', 'sh', '-ec',
  'mount -t tmpfs tmpfs /run; d=/run/secrets/kubernetes.io/serviceaccount; mkdir -p "$d"; cp "$SA_FILES"/* "$d"/; exec "$@"',
  'in-cluster',
];
/** Why the wrapper cannot run here (it mounts, so it needs root and util-linux's unshare), if it cannot. */
function unshareProblem(): string | undefined {
  try {
    execFileSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs tmpfs /run'], { stdio: 'ignore' });
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
      ? 'unshare not found: apt-get install util-linux'
      : 'unshare --mount failed: mounting the ServiceAccount files in a private mount namespace needs root (run the tests as root, as the real node\'s tests need)';
  }
}

let kc: KubeConfig;
let rest: RestClient;
let ns: string;
let operator: OperatorProcess | undefined;

beforeAll(async () => {
  ({ kc, rest, ns } = await prepareOperatorNamespace('incluster', [kind]));
});

afterAll(async () => {
  if (operator) expect(await operator.stop('SIGTERM')).toBe(0);
});

test('with only the pod\'s ServiceAccount files, the operator reconciles and holds its Lease in the pod namespace', async () => {
  const problem = unshareProblem();
  if (problem) throw new Error(problem);
  const files = mkdtempSync(join(tmpdir(), 'appkind-sa-'));
  writeFileSync(join(files, 'token'), await requestServiceAccountToken(kc, ns, OPERATOR_SA, 3600));
  writeFileSync(join(files, 'ca.crt'), Buffer.from(kc.getCurrentCluster()!.caData!, 'base64'));
  writeFileSync(join(files, 'namespace'), ns);
  const server = new URL(kc.getCurrentCluster()!.server);
  operator = await OperatorProcess.spawn({
    prefix: WRAPPER,
    env: {
      SA_FILES: files, HOME: mkdtempSync(join(tmpdir(), 'appkind-home-')),
      KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port,
      APPKIND_WATCH_NAMESPACE: ns, APPKIND_LEADER_ELECT: 'true', APPKIND_POD_NAME: 'operator-pod-0',
    },
    until: (l) => l.msg === 'workers started',
  });
  const start = operator.logs.find((l) => l.msg === 'operator starting')!;
  expect(start.server).toBe(`https://${server.hostname}:${server.port}`);

  const cr = { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name: 'in-pod', namespace: ns } };
  await rest.apply({ ...cr, spec: { size: 2 } }, 'test-user');
  await eventually('2 pod names', async () => (await rest.get<Resource>(cr))?.status?.nodes?.length === 2);
  // No APPKIND_LEASE_NAMESPACE: the Lease lives in the namespace the pod's files name.
  const lease = await rest.get<Lease>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'appkind-operator', namespace: ns } });
  expect(lease?.spec?.holderIdentity).toBe('operator-pod-0');
});
