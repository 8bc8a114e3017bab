import { describe, expect, test } from '@jest/globals';
import { V1ContainerStatus, V1Deployment, V1Pod, V1Service } from '@kubernetes/client-node';
import { computeStatus, kubeletFailureEvent, podsRefusedEvent, replicaFailureOf, selectorString, statusChanges, statusEqual, StatusInput } from '../../operator/controller/status.js';

const labels = { 'app.kubernetes.io/name': 'echoflask', 'app.kubernetes.io/instance': 'example-echoflask', 'app.kubernetes.io/managed-by': 'cdk8s-appkind' };
const pod = (name: string, ready: boolean, deleting = false): V1Pod => ({
  metadata: { name, labels, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
const deployment = (replicas: number, ready: number, updated = replicas, generation = 2, observed = 2): V1Deployment => ({
  metadata: { name: 'example-echoflask-deployment', generation },
  status: { replicas, readyReplicas: ready, updatedReplicas: updated, observedGeneration: observed },
});
const service: V1Service = { metadata: { name: 'example-echoflask-svc' }, spec: { ports: [{ port: 5000, nodePort: 31234 }] } };
const NOW = new Date('2026-12-02T10:00:00Z');
const base: StatusInput = { size: 3, generation: 4, selectorLabels: labels, pods: [], now: NOW };
const condition = (s: ReturnType<typeof computeStatus>, type: string) => s.conditions.find((c) => c.type === type)!;

describe('computeStatus', () => {
  test('a converged app: sorted pod names, counts, the allocated NodePort, Ready', () => {
    const status = computeStatus({ ...base, deployment: deployment(3, 3), service, pods: [pod('b', true), pod('c', true), pod('a', true)] });
    expect(status).toMatchObject({ nodes: ['a', 'b', 'c'], replicas: 3, readyReplicas: 3, nodePort: 31234, observedGeneration: 4 });
    expect(status.selector).toBe('app.kubernetes.io/instance=example-echoflask,app.kubernetes.io/managed-by=cdk8s-appkind,app.kubernetes.io/name=echoflask');
    expect(condition(status, 'Ready')).toMatchObject({ status: 'True', reason: 'AllReplicasReady', message: '3/3 pods ready', observedGeneration: 4 });
    expect(condition(status, 'Progressing')).toMatchObject({ status: 'False', reason: 'RolloutComplete' });
    expect(condition(status, 'Degraded')).toMatchObject({ status: 'False', reason: 'ReconcileSucceeded' });
    expect(status.conditions.every((c) => c.lastTransitionTime === '2026-12-02T10:00:00Z')).toBe(true);
  });

  test('pods the ReplicaSet cannot create: Ready carries the refusal the Deployment controller copied', () => {
    const refusal = 'pods "example-echoflask-deployment-6b474476c4-" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1';
    const refusedDeployment: V1Deployment = {
      ...deployment(1, 1, 1),
      status: { ...deployment(1, 1, 1).status, conditions: [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: refusal }] },
    };
    expect(replicaFailureOf(refusedDeployment)).toEqual({ reason: 'FailedCreate', message: refusal });
    const status = computeStatus({ ...base, deployment: refusedDeployment, pods: [pod('a', true)] });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'FailedCreate', message: `${refusal} (1/3 pods ready)` });
    // A Warning Event once per new refusal, not again for the same refusal with other counts.
    expect(podsRefusedEvent(undefined, status, replicaFailureOf(refusedDeployment))).toEqual({ reason: 'FailedCreate', message: refusal });
    const later = computeStatus({ ...base, deployment: { ...refusedDeployment, status: { ...refusedDeployment.status, readyReplicas: 0 } } });
    expect(condition(later, 'Ready').message).toBe(`${refusal} (0/3 pods ready)`);
    expect(podsRefusedEvent(status, later, replicaFailureOf(refusedDeployment))).toBeUndefined();
    // Once the condition is gone (quota raised), Ready is the usual count again.
    expect(replicaFailureOf(deployment(3, 3))).toBeUndefined();
    expect(condition(computeStatus({ ...base, deployment: deployment(3, 2) }), 'Ready').reason).toBe('ReplicasNotReady');
  });

  test('pods ready before the Deployment controller counts them: not Ready, the Deployment\'s count', () => {
    // The Deployment's status as the API server serves it after the rollout, before the ReplicaSet's
    // ready pods reached it: readyReplicas, 0, is left out.
    const counting: V1Deployment = { ...deployment(3, 0), status: { replicas: 3, updatedReplicas: 3, observedGeneration: 2 } };
    const status = computeStatus({ ...base, deployment: counting, pods: [pod('a', true), pod('b', true), pod('c', true)] });
    expect(status.readyReplicas).toBe(0);
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'ReplicasNotReady', message: '0/3 pods ready' });
    expect(condition(computeStatus({ ...base, deployment: { ...counting, status: { ...counting.status, readyReplicas: 3 } } }), 'Ready').status).toBe('True');
  });

  test('terminating pods are not listed', () => {
    const status = computeStatus({ ...base, deployment: deployment(3, 3), pods: [pod('a', true), pod('old', true, true)] });
    expect(status.nodes).toEqual(['a']);
  });

  test('scaling up: Progressing until the Deployment has the new size, not Ready', () => {
    const status = computeStatus({ ...base, size: 5, deployment: deployment(3, 3), pods: [pod('a', true)] });
    expect(condition(status, 'Progressing')).toMatchObject({ status: 'True', reason: 'RollingOut', message: 'Deployment has 3/5 up-to-date replicas' });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'ReplicasNotReady', message: '3/5 pods ready' });
  });

  test('a Deployment controller that has not seen the new generation is still progressing', () => {
    const status = computeStatus({ ...base, deployment: deployment(3, 3, 3, 3, 2) });
    expect(condition(status, 'Progressing').status).toBe('True');
    expect(condition(status, 'Ready').status).toBe('False');
  });

  test('no Deployment yet', () => {
    const status = computeStatus(base);
    expect(status).toMatchObject({ nodes: [], replicas: 0, readyReplicas: 0 });
    expect(status.nodePort).toBeUndefined();
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'DeploymentMissing' });
  });

  test('a failure is Degraded with its reason and message', () => {
    const status = computeStatus({ ...base, failure: { reason: 'NameConflict', message: 'Service default/x-svc already exists' } });
    expect(condition(status, 'Degraded')).toMatchObject({ status: 'True', reason: 'NameConflict', message: 'Service default/x-svc already exists' });
  });

  test('lastTransitionTime moves only when a condition flips', () => {
    const before = computeStatus({ ...base, deployment: deployment(3, 3), pods: [pod('a', true)] });
    const later = new Date('2026-12-02T11:00:00Z');
    const same = computeStatus({ ...base, deployment: deployment(3, 3), pods: [pod('a', true)], previous: before, now: later });
    expect(same.conditions.map((c) => c.lastTransitionTime)).toEqual(before.conditions.map((c) => c.lastTransitionTime));
    const scaled = computeStatus({ ...base, deployment: deployment(3, 2), pods: [pod('a', true)], previous: before, now: later });
    expect(condition(scaled, 'Ready').lastTransitionTime).toBe('2026-12-02T11:00:00Z');
    expect(condition(scaled, 'Degraded').lastTransitionTime).toBe('2026-12-02T10:00:00Z');
  });

  test('never Ready while the current generation is not applied, however ready the pods of the older spec are', () => {
    const failed = computeStatus({ ...base, deployment: deployment(3, 3), failure: { reason: 'ApplyFailed', message: 'm' } });
    expect(condition(failed, 'Degraded')).toMatchObject({ status: 'True', reason: 'ApplyFailed', message: 'm' });
    expect(condition(failed, 'Ready')).toMatchObject({ status: 'False', reason: 'ApplyFailed', message: 'generation 4 is not applied (see Degraded); 3/3 pods ready' });
    expect(failed.readyReplicas).toBe(3);
  });
});

describe('statusEqual', () => {
  test('the same status is equal whatever the key or condition order; any change is not', () => {
    const s = computeStatus({ ...base, deployment: deployment(3, 3), service, pods: [pod('a', true)] });
    const reordered = JSON.parse(JSON.stringify({ ...s, conditions: [...s.conditions].reverse() }));
    expect(statusEqual(reordered, s)).toBe(true);
    expect(statusEqual({ ...s, nodes: ['a', 'b'] }, s)).toBe(false);
    expect(statusEqual({ ...s, readyReplicas: 2 }, s)).toBe(false);
    expect(statusEqual(undefined, s)).toBe(false);
  });

  test('statusChanges names the fields and conditions a write changes', () => {
    const s = computeStatus({ ...base, deployment: deployment(3, 3), service, pods: [pod('a', true)] });
    expect(statusChanges(s, s)).toEqual([]);
    const more = computeStatus({ ...base, deployment: deployment(3, 3), service, pods: [pod('a', true), pod('b', true)], previous: s });
    expect(statusChanges(s, more)).toEqual(['nodes']);
    const rolling = computeStatus({ ...base, deployment: deployment(3, 2), service, pods: [pod('a', true)], previous: s });
    expect(statusChanges(s, rolling)).toEqual(['readyReplicas', 'Ready', 'Reconciling']);
    expect(statusChanges({ observedGeneration: 0 }, s)).toEqual(['nodePort', 'nodes', 'observedGeneration', 'readyReplicas', 'replicas', 'selector', 'Degraded', 'Progressing', 'Ready']);
  });

  test('selectorString sorts keys', () => {
    expect(selectorString({ b: '2', a: '1' })).toBe('a=1,b=2');
  });
});

describe('what only a kubelet reports, on the CR', () => {
  const failing = (name: string, cs: Partial<V1ContainerStatus>, phase = 'Pending'): V1Pod => ({
    metadata: { name, labels },
    status: {
      phase,
      conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [app]' }],
      containerStatuses: [{ name: 'app', image: 'x', imageID: '', ready: false, restartCount: 0, ...cs }],
    },
  });
  const pull = (reason: string, message: string) => failing('p1', { state: { waiting: { reason, message } } });
  const crash = (restartCount: number, backoff: string) =>
    failing('p1', { restartCount, state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off ${backoff} restarting failed container=app pod=p1_ns(uid)` } }, lastState: { terminated: { exitCode: 3, reason: 'Error' } } }, 'Running');
  const rolling = { ...base, size: 1, deployment: deployment(1, 0) };

  test('an image not found: Ready=False ErrImagePull with the kubelet message; the ImagePullBackOff between pulls writes no new status', () => {
    const first = computeStatus({ ...rolling, pods: [pull('ErrImagePull', 'failed to pull and unpack image "docker.io/library/nope:1": not found')] });
    expect(condition(first, 'Ready')).toMatchObject({
      status: 'False', reason: 'ErrImagePull',
      message: 'container "app" of pod p1: failed to pull and unpack image "docker.io/library/nope:1": not found (0/1 pods ready)',
    });
    expect(kubeletFailureEvent(undefined, first)).toEqual({ reason: 'ErrImagePull', message: condition(first, 'Ready').message });
    const backOff = computeStatus({ ...rolling, pods: [pull('ImagePullBackOff', 'Back-off pulling image "docker.io/library/nope:1"')], previous: first, now: new Date('2026-12-02T10:05:00Z') });
    expect(statusEqual(first, backOff)).toBe(true);
    expect(kubeletFailureEvent(first, backOff)).toBeUndefined();
  });

  test('a container that exits: CrashLoopBackOff with the last exit code, and no status change per restart', () => {
    const first = computeStatus({ ...rolling, pods: [crash(1, '10s')] });
    expect(condition(first, 'Ready')).toMatchObject({
      status: 'False', reason: 'CrashLoopBackOff',
      message: 'container "app" of pod p1 exited with code 3 (Error); the kubelet restarts it with back-off (0/1 pods ready)',
    });
    // The next restarts: running again (not ready), exited, back-off doubled.
    const running = failing('p1', { restartCount: 2, state: { running: {} }, lastState: { terminated: { exitCode: 3, reason: 'Error' } } }, 'Running');
    const exited = failing('p1', { restartCount: 2, state: { terminated: { exitCode: 3, reason: 'Error' } }, lastState: { terminated: { exitCode: 3, reason: 'Error' } } }, 'Running');
    for (const pod of [running, exited, crash(2, '20s'), crash(5, '2m40s')]) {
      const next = computeStatus({ ...rolling, pods: [pod], previous: first });
      expect(statusEqual(first, next)).toBe(true);
    }
    expect(kubeletFailureEvent(first, computeStatus({ ...rolling, pods: [crash(2, '20s')], previous: first }))).toBeUndefined();
    // A running container that exited once, seen with no CrashLoopBackOff before, is only not ready.
    expect(condition(computeStatus({ ...rolling, pods: [running] }), 'Ready').reason).toBe('ContainersNotReady');
  });

  test('a root image in a runAsNonRoot kind: CreateContainerConfigError with the kubelet message', () => {
    const pod = failing('p1', { state: { waiting: { reason: 'CreateContainerConfigError', message: 'container has runAsNonRoot and image will run as root (pod: "p1_ns(uid)", container: app)' } } });
    const status = computeStatus({ ...rolling, pods: [pod] });
    expect(condition(status, 'Ready')).toMatchObject({ reason: 'CreateContainerConfigError', message: expect.stringContaining('container has runAsNonRoot and image will run as root') });
    expect(kubeletFailureEvent(undefined, status)?.reason).toBe('CreateContainerConfigError');
  });

  test('a running pod not ready: the kubelet reason and message, an ordinary rollout reason (no Event)', () => {
    const status = computeStatus({ ...rolling, pods: [failing('p1', { state: { running: {} } }, 'Running')] });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady', message: 'pod p1: containers with unready status: [app] (0/1 pods ready)' });
    expect(kubeletFailureEvent(undefined, status)).toBeUndefined();
  });

  test('a failure to apply and a refusal by admission come first; Ready pods hide nothing', () => {
    const pods = [pull('ErrImagePull', 'not found')];
    expect(condition(computeStatus({ ...rolling, pods, failure: { reason: 'ApplyFailed', message: 'm' } }), 'Ready').reason).toBe('ApplyFailed');
    expect(condition(computeStatus({ ...rolling, deployment: deployment(1, 1), pods: [pod('p1', true)] }), 'Ready').status).toBe('True');
    // A pending pod the kubelet has not started yet (ContainerCreating) is the rollout, not a failure.
    expect(condition(computeStatus({ ...rolling, pods: [failing('p1', { state: { waiting: { reason: 'ContainerCreating' } } })] }), 'Ready').reason).toBe('ReplicasNotReady');
  });
});

describe('kstatus conditions: Reconciling and Stalled', () => {
  const deadline = (d: V1Deployment, observed = d.metadata!.generation!): V1Deployment => ({
    ...d,
    status: {
      ...d.status,
      observedGeneration: observed,
      conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "x-6b4" has timed out progressing.' }],
    },
  });
  const types = (s: ReturnType<typeof computeStatus>) => s.conditions.map((c) => `${c.type}=${c.status}`).sort();

  test('a settled app has neither: its status is the same as without them', () => {
    const status = computeStatus({ ...base, deployment: deployment(3, 3), pods: [pod('a', true)] });
    expect(types(status)).toEqual(['Degraded=False', 'Progressing=False', 'Ready=True']);
  });

  test('a rollout: Reconciling=True with Ready\'s reason and message, so both change in the same write', () => {
    const status = computeStatus({ ...base, size: 5, deployment: deployment(3, 3), pods: [pod('a', true)] });
    expect(types(status)).toEqual(['Degraded=False', 'Progressing=True', 'Ready=False', 'Reconciling=True']);
    expect(condition(status, 'Reconciling')).toMatchObject({ reason: 'ReplicasNotReady', message: '3/5 pods ready', observedGeneration: 4 });
    expect(condition(computeStatus(base), 'Reconciling').reason).toBe('DeploymentMissing');
  });

  test('a failure the operator retries (the API server, a webhook) is Reconciling, not Stalled', () => {
    const status = computeStatus({ ...base, failure: { reason: 'ApplyFailed', message: 'Deployment default/x: etcd timeout' } });
    expect(condition(status, 'Reconciling')).toMatchObject({ status: 'True', reason: 'ApplyFailed' });
    expect(status.conditions.find((c) => c.type === 'Stalled')).toBeUndefined();
  });

  test.each(['NameConflict', 'ImageNotAllowed', 'InvalidSpec'])('%s is Stalled at once, with the failure\'s message, and not Reconciling', (reason) => {
    const status = computeStatus({ ...base, deployment: deployment(3, 3), failure: { reason, message: `the ${reason} message` } });
    expect(condition(status, 'Stalled')).toMatchObject({ status: 'True', reason, message: `the ${reason} message`, observedGeneration: 4 });
    expect(types(status)).toEqual(['Degraded=True', 'Progressing=False', 'Ready=False', 'Stalled=True']);
  });

  test('a kubelet failure is Reconciling until the Deployment\'s progress deadline passes, then Stalled with the kubelet\'s reason', () => {
    const failing: V1Pod = {
      metadata: { name: 'p1', labels },
      status: { phase: 'Pending', containerStatuses: [{ name: 'app', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "nope:1"' } } }] },
    };
    const rolling = { ...base, size: 1, pods: [failing] };
    const early = computeStatus({ ...rolling, deployment: deployment(1, 0) });
    expect(condition(early, 'Reconciling')).toMatchObject({ status: 'True', reason: 'ErrImagePull' });
    const stuck = computeStatus({ ...rolling, deployment: deadline(deployment(1, 0)), previous: early, now: new Date('2026-12-02T10:10:00Z') });
    expect(condition(stuck, 'Stalled')).toMatchObject({
      status: 'True',
      reason: 'ErrImagePull',
      message: 'container "app" of pod p1: Back-off pulling image "nope:1" (0/1 pods ready); ReplicaSet "x-6b4" has timed out progressing. (the Deployment\'s progressDeadlineSeconds)',
      lastTransitionTime: '2026-12-02T10:10:00Z',
    });
    expect(stuck.conditions.find((c) => c.type === 'Reconciling')).toBeUndefined();
    // Ready keeps its lastTransitionTime: only Stalled is new.
    expect(condition(stuck, 'Ready').lastTransitionTime).toBe('2026-12-02T10:00:00Z');
    // A rollout stuck with no kubelet failure (a readiness probe that never passes) is Stalled too.
    expect(condition(computeStatus({ ...base, size: 1, deployment: deadline(deployment(1, 0)) }), 'Stalled').reason).toBe('ProgressDeadlineExceeded');
  });

  test('a fix rolling out is Reconciling: the deadline of the rollout it replaces is not its own', () => {
    // The Deployment controller has not seen the new generation yet: its condition is the old rollout's.
    const fixing = computeStatus({ ...base, size: 1, deployment: deadline(deployment(1, 0, 1, 3, 3), 2) });
    expect(condition(fixing, 'Reconciling').status).toBe('True');
    expect(fixing.conditions.find((c) => c.type === 'Stalled')).toBeUndefined();
  });

  test('Ready pods are neither, whatever the Deployment said before', () => {
    const status = computeStatus({ ...base, size: 1, deployment: deadline(deployment(1, 1)), pods: [pod('a', true)] });
    expect(types(status)).toEqual(['Degraded=False', 'Progressing=False', 'Ready=True']);
  });
});
