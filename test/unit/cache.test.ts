import { describe, expect, it } from '@jest/globals';
import { V1ContainerStatus, V1Deployment, V1Pod, V1Service } from '@kubernetes/client-node';
import { ownerIndex, withoutManagedFields } from '../../operator/runtime/cache.js';
import { crNameOfChild, freedNodePorts, nodePortIndex, podSummary } from '../../operator/controller/indexes.js';
import { deploymentChanged, podChanged, statusOnlyChange } from '../../operator/controller/predicates.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { appPropsFor, render } from '../../operator/kinds/render.js';
import { RenderCache } from '../../operator/controller/render-cache.js';

const pod: V1Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'a-deployment-1', namespace: 'ns', uid: 'u1', resourceVersion: '7',
    labels: { 'app.kubernetes.io/instance': 'a' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs1', controller: true }],
    managedFields: [{ manager: 'kubelet', operation: 'Update' }],
  },
  spec: { containers: [{ name: 'c', image: 'x' }] },
  status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'True' }] },
};

describe('cache trims and indexes', () => {
  it('keeps of a pod only what status reads', () => {
    const s = podSummary(pod);
    expect(s).toEqual({
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'a-deployment-1', namespace: 'ns', uid: 'u1', resourceVersion: '7', labels: { 'app.kubernetes.io/instance': 'a' }, ownerReferences: pod.metadata!.ownerReferences },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    expect(ownerIndex(s)).toEqual(['rs1']);
  });

  it('sees a pod change only when readiness, deletion or labels change', () => {
    const s = podSummary(pod);
    expect(podChanged(s, podSummary({ ...pod, metadata: { ...pod.metadata, resourceVersion: '8' }, status: { ...pod.status, podIP: '10.0.0.2' } }))).toBe(false);
    expect(podChanged(s, podSummary({ ...pod, status: { conditions: [{ type: 'Ready', status: 'False' }] } }))).toBe(true);
    expect(podChanged(s, podSummary({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date() } }))).toBe(true);
    expect(podChanged(undefined, s)).toBe(true);
  });

  it('keeps what the kubelet says is wrong, and sees a change only when its class or the exit code does, not at every retry', () => {
    const crashing = (restartCount: number, state: V1ContainerStatus['state']): V1Pod => ({
      ...pod,
      status: {
        phase: 'Running', conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [c]', lastTransitionTime: new Date(restartCount) }],
        containerStatuses: [{ name: 'c', image: 'x', imageID: 'sha256:1', ready: false, restartCount, started: false, state, lastState: { terminated: { exitCode: 3, reason: 'Error', startedAt: new Date(restartCount), finishedAt: new Date(restartCount) } } }],
      },
    });
    const backOff = podSummary(crashing(1, { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=c' } }));
    expect(backOff.status!.containerStatuses).toEqual([
      { name: 'c', image: 'x', imageID: '', ready: false, restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=c' } }, lastState: { terminated: { exitCode: 3, reason: 'Error' } } },
    ]);
    expect(podChanged(backOff, podSummary(crashing(2, { running: { startedAt: new Date(5) } })))).toBe(false);
    expect(podChanged(backOff, podSummary(crashing(2, { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=c' } })))).toBe(false);
    expect(podChanged(backOff, podSummary(crashing(2, { waiting: { reason: 'CreateContainerConfigError', message: 'runAsNonRoot' } })))).toBe(true);
    const pull = (reason: string) => podSummary({ ...pod, status: { phase: 'Pending', containerStatuses: [{ name: 'c', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message: reason } } }] } });
    expect(podChanged(pull('ErrImagePull'), pull('ImagePullBackOff'))).toBe(false);
    expect(podChanged(pull('ContainerCreating'), pull('ErrImagePull'))).toBe(true);
  });

  it('tells a Deployment change that reconcile reads from the controller\'s status ticks', () => {
    const d: V1Deployment = {
      apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: { name: 'a-deployment', namespace: 'ns', generation: 2, resourceVersion: '10', labels: { app: 'a' } },
      spec: { replicas: 3, selector: { matchLabels: { app: 'a' } }, template: {} },
      status: {
        observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 2, availableReplicas: 2,
        conditions: [{ type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', lastUpdateTime: new Date(1000) }],
      },
    };
    const next = (change: (x: V1Deployment) => void): V1Deployment => {
      const x = structuredClone(d);
      x.metadata!.resourceVersion = '11';
      change(x);
      return x;
    };
    // Not read by reconcile: resourceVersion, availableReplicas, a condition's timestamps.
    expect(deploymentChanged(d, next((x) => {
      x.status!.availableReplicas = 3;
      x.status!.conditions![0]!.lastUpdateTime = new Date(2000);
    }))).toBe(false);
    // Read: the status fields status shows, a new generation (any spec change), labels, a ReplicaFailure.
    expect(deploymentChanged(d, next((x) => (x.status!.readyReplicas = 3)))).toBe(true);
    expect(deploymentChanged(d, next((x) => (x.status!.observedGeneration = 3)))).toBe(true);
    expect(deploymentChanged(d, next((x) => (x.metadata!.generation = 3)))).toBe(true);
    expect(deploymentChanged(d, next((x) => (x.metadata!.labels = { app: 'b' })))).toBe(true);
    expect(deploymentChanged(d, next((x) => x.status!.conditions!.push({ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'quota' })))).toBe(true);
    expect(deploymentChanged(d, next((x) => (x.metadata!.deletionTimestamp = new Date(3000))))).toBe(true);
    // A rollout past its progress deadline (the CR is then Stalled); the same condition's other reasons are not read.
    expect(deploymentChanged(d, next((x) => (x.status!.conditions = [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }])))).toBe(true);
    expect(deploymentChanged(d, next((x) => (x.status!.conditions = [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }])))).toBe(false);
    expect(deploymentChanged(undefined, d)).toBe(true);
  });

  it('tells a CR change of its status only (our own status write, watched back) from any other', () => {
    const cr = { apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', metadata: { name: 'a', namespace: 'ns', generation: 1, resourceVersion: '1' }, spec: { size: 1 } };
    const statusOnly = { ...cr, metadata: { ...cr.metadata, resourceVersion: '2' }, status: { observedGeneration: 1 } };
    expect(statusOnlyChange(cr, statusOnly)).toBe(true);
    expect(statusOnlyChange(cr, { ...statusOnly, metadata: { ...statusOnly.metadata, generation: 2 } })).toBe(false);
    expect(statusOnlyChange(cr, { ...statusOnly, metadata: { ...statusOnly.metadata, labels: { a: 'b' } } })).toBe(false);
    expect(statusOnlyChange(undefined, statusOnly)).toBe(false);
  });

  it('drops managedFields and indexes children by their controller uid', () => {
    const d: V1Deployment = { metadata: { name: 'd', managedFields: [{ manager: 'm' }], ownerReferences: [{ apiVersion: 'v', kind: 'K', name: 'a', uid: 'cr1', controller: true }] }, spec: { selector: {}, template: {} } };
    const trimmed = withoutManagedFields(d);
    expect(trimmed.metadata).not.toHaveProperty('managedFields');
    expect(trimmed.spec).toBe(d.spec);
    expect(d.metadata!.managedFields).toHaveLength(1); // the original is left alone
    expect(ownerIndex(trimmed)).toEqual(['cr1']);
    expect(ownerIndex({ metadata: { name: 'x' } })).toEqual([]);
  });
});

describe('NodePorts a Service gives up', () => {
  const svc = (...nodePorts: (number | undefined)[]): V1Service => ({ metadata: { name: 's' }, spec: { ports: nodePorts.map((nodePort, i) => ({ port: 80 + i, nodePort })) } });

  it('are all of a deleted Service\'s, those an update dropped, none on add', () => {
    expect(freedNodePorts('delete', svc(30001, 30002))).toEqual([30001, 30002]);
    expect(freedNodePorts('update', svc(30003), svc(30001))).toEqual([30001]);
    expect(freedNodePorts('update', svc(30001), svc(30001))).toEqual([]);
    expect(freedNodePorts('update', svc(30001, 30005), svc(30001, undefined))).toEqual([]);
    expect(freedNodePorts('add', svc(30001))).toEqual([]);
    expect(freedNodePorts('delete', { metadata: { name: 'cluster-ip' }, spec: { ports: [{ port: 80 }] } })).toEqual([]);
  });

  it('index CRs by the NodePort their spec asks for', () => {
    expect(nodePortIndex({ spec: { nodePort: 30080 } })).toEqual(['30080']);
    expect(nodePortIndex({ spec: {} })).toEqual([]);
    expect(nodePortIndex({})).toEqual([]);
  });
});

describe('child names a foreign object can take', () => {
  it('finds the CR by the name render() gives its Deployment, Service, PodDisruptionBudget or NetworkPolicy, and no CR by any other', () => {
    const cr = { apiVersion: 'x/v1', kind: SAMPLE_KIND.kind, metadata: { name: 'web', namespace: 'ns' }, spec: { size: 1 } };
    const guarded = { ...SAMPLE_KIND, podDisruptionBudget: {}, networkPolicy: { from: [] } };
    const children = render(guarded, cr).map((o) => [o.kind, o.metadata.name] as const);
    expect(children.map(([kind, name]) => `${kind}/${name}`).sort()).toEqual([
      'Deployment/web-deployment',
      'NetworkPolicy/web-ingress',
      'PodDisruptionBudget/web-pdb',
      'Service/web-svc',
    ]);
    for (const [kind, name] of children) expect(crNameOfChild(kind, name)).toBe('web');
    expect(crNameOfChild('Deployment', 'web-svc-deployment')).toBe('web-svc');
    expect(crNameOfChild('Deployment', 'web-svc')).toBeUndefined();
    expect(crNameOfChild('Deployment', '-deployment')).toBeUndefined();
    expect(crNameOfChild('Service', 'web')).toBeUndefined();
    expect(crNameOfChild('ConfigMap', 'web-deployment')).toBeUndefined();
  });
});

describe('RenderCache', () => {
  const cr = (size: number) => ({ apiVersion: 'v', kind: SAMPLE_KIND.kind, metadata: { name: 'a', namespace: 'ns', uid: 'u' }, spec: { size } });

  it('renders what render() renders, once per spec', () => {
    const cache = new RenderCache();
    const first = cache.render(SAMPLE_KIND, cr(2));
    expect(first.objects).toEqual(render(SAMPLE_KIND, cr(2)));
    expect(first.props).toEqual(appPropsFor(SAMPLE_KIND, cr(2)));
    // A new object with the same spec (another event of the CR) is a hit.
    expect(cache.render(SAMPLE_KIND, { ...cr(2), metadata: { ...cr(2).metadata, generation: 1 } })).toBe(first);
    const scaled = cache.render(SAMPLE_KIND, cr(3));
    expect(scaled).not.toBe(first);
    expect(scaled.objects.find((o) => o.kind === 'Deployment')).toMatchObject({ spec: { replicas: 3 } });
    expect(scaled.props.replicas).toBe(3);
    cache.forget({ kind: SAMPLE_KIND.kind, namespace: 'ns', name: 'a' });
    expect(cache.size).toBe(0);
  });
});
