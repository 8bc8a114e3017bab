import { describe, expect, test } from '@jest/globals';
import { ApiObject, Chart, Size, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { ContainerApp, ContainerAppProps } from '../../lib/index.js';

type Obj = { kind: string; metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec: Record<string, unknown> };
type Container = {
  name: string; image: string; imagePullPolicy: string; ports: { containerPort: number }[]; env?: { name: string; value: string }[];
  resources?: unknown; startupProbe?: unknown; securityContext: Record<string, unknown>;
};
type PodTemplate = { metadata: { labels: Record<string, string> }; spec: { containers: Container[]; securityContext?: Record<string, unknown> } };

const SELECTOR = {
  'app.kubernetes.io/name': 'echoflask',
  'app.kubernetes.io/instance': 'example-echoflask',
  'app.kubernetes.io/managed-by': 'cdk8s-appkind',
};
const BASE: ContainerAppProps = { name: 'example-echoflask', appName: 'echoflask', image: 'takeyan/flask:0.0.3', port: 5000, replicas: 3 };

function synth(build: (chart: Chart) => void): Obj[] {
  const chart = Testing.chart();
  build(chart);
  return Testing.synth(chart) as Obj[];
}
const byKind = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);
const deploymentOf = (objs: Obj[]) => byKind(objs, 'Deployment')[0]!;
const serviceOf = (objs: Obj[]) => byKind(objs, 'Service')[0]!;
const templateOf = (d: Obj) => d.spec.template as PodTemplate;
const containerOf = (d: Obj) => templateOf(d).spec.containers[0]!;

describe('ContainerApp', () => {
  test('renders the walkthrough Deployment and NodePort Service', () => {
    const objs = synth((c) => new ContainerApp(c, 'app', BASE));
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Deployment/example-echoflask-deployment', 'Service/example-echoflask-svc']);
    const d = deploymentOf(objs);
    expect(d.spec.replicas).toBe(3);
    expect(d.spec.selector).toEqual({ matchLabels: SELECTOR });
    expect(templateOf(d).metadata.labels).toEqual(SELECTOR);
    const c = containerOf(d);
    expect(c).toMatchObject({ name: 'echoflask', image: 'takeyan/flask:0.0.3', ports: [{ containerPort: 5000 }] });
    const s = serviceOf(objs);
    expect(s.spec.type).toBe('NodePort');
    expect(s.spec.ports).toEqual([{ name: 'http', port: 5000, targetPort: 5000 }]);
    expect(s.spec.selector).toEqual(SELECTOR);
    expect(s.spec.externalIPs).toBeUndefined();
    expect(objs).toMatchSnapshot();
  });

  test('runAsNonRoot renders what the "restricted" Pod Security Standard asks; runAsUser and readOnlyRootFilesystem are applied', () => {
    const d = deploymentOf(synth((c) => new ContainerApp(c, 'app', { image: 'nginx', port: 80, runAsNonRoot: true, runAsUser: 101, readOnlyRootFilesystem: true })));
    expect(containerOf(d).securityContext).toEqual({
      runAsNonRoot: true, runAsUser: 101, readOnlyRootFilesystem: true, privileged: false, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] },
    });
    expect(templateOf(d).spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    // Without runAsNonRoot nothing of "restricted" is added: capabilities and seccomp stay the runtime's.
    const plain = deploymentOf(synth((c) => new ContainerApp(c, 'app', { image: 'nginx', port: 80, runAsUser: 101 })));
    expect(containerOf(plain).securityContext).toEqual({ runAsNonRoot: false, runAsUser: 101, readOnlyRootFilesystem: false, privileged: false, allowPrivilegeEscalation: false });
    expect(templateOf(plain).spec.securityContext?.seccompProfile).toBeUndefined();
    expect(() => synth((c) => new ContainerApp(c, 'app', { image: 'nginx', port: 80, runAsNonRoot: true, runAsUser: 0 }))).toThrow(/runAsNonRoot is set but runAsUser is 0/);
  });

  test('defaults fit an arbitrary image: root allowed, writable root fs, no requests, IfNotPresent, no startup probe', () => {
    const d = deploymentOf(synth((c) => new ContainerApp(c, 'app', { image: 'nginx', port: 80 })));
    const c = containerOf(d);
    expect(c.imagePullPolicy).toBe('IfNotPresent');
    expect(c.resources).toBeUndefined();
    expect(c.startupProbe).toBeUndefined();
    expect(c.securityContext).toEqual({ runAsNonRoot: false, readOnlyRootFilesystem: false, privileged: false, allowPrivilegeEscalation: false });
    expect(templateOf(d).spec.securityContext?.runAsNonRoot).toBe(false);
    expect(d.spec.replicas).toBe(1);
    expect(d.metadata.name).toBe('app-deployment');
  });

  test('no label depends on the construct path, so a renamed or moved construct keeps its selector', () => {
    const flat = synth((c) => new ContainerApp(c, 'a', BASE));
    const nested = synth((c) => new ContainerApp(new Construct(c, 'Elsewhere'), 'renamed-construct', BASE));
    expect(nested).toEqual(flat);
    expect(JSON.stringify(flat)).not.toContain('cdk8s.io/metadata.addr');
  });

  test('every prop reaches the output; extra labels never enter the selector', () => {
    const objs = synth((c) => new ContainerApp(c, 'x', {
      ...BASE,
      env: { GREETING: 'hello' },
      resources: { cpu: { request: kplus.Cpu.millis(100) }, memory: { limit: Size.mebibytes(256) } },
      labels: { team: 'blue' },
      annotations: { 'example.com/note': 'n' },
      nodePort: 30080,
      imagePullPolicy: kplus.ImagePullPolicy.ALWAYS,
      securityContext: { ensureNonRoot: true, user: 1000 },
      managedBy: 'gitops',
      namespace: 'apps',
    }));
    const d = deploymentOf(objs);
    const s = serviceOf(objs);
    const c = containerOf(d);
    expect(c.env).toEqual([{ name: 'GREETING', value: 'hello' }]);
    expect(c.resources).toEqual({ requests: { cpu: '100m' }, limits: { memory: '256Mi' } });
    expect(c.imagePullPolicy).toBe('Always');
    expect(c.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    for (const o of [d, s]) {
      expect(o.metadata).toMatchObject({ namespace: 'apps', labels: { team: 'blue' }, annotations: { 'example.com/note': 'n' } });
    }
    expect(templateOf(d).metadata.labels.team).toBe('blue');
    expect(d.spec.selector).toEqual({ matchLabels: { ...SELECTOR, 'app.kubernetes.io/managed-by': 'gitops' } });
    expect(s.spec.selector).toEqual({ ...SELECTOR, 'app.kubernetes.io/managed-by': 'gitops' });
    expect(s.spec.ports).toEqual([{ name: 'http', port: 5000, targetPort: 5000, nodePort: 30080 }]);
  });

  test('two instances in one chart get distinct names and selectors', () => {
    const objs = synth((c) => {
      new ContainerApp(c, 'blue', { appName: 'web', image: 'nginx', port: 80 });
      new ContainerApp(c, 'green', { appName: 'web', image: 'nginx', port: 80 });
    });
    const names = objs.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(names).size).toBe(4);
    const [blue, green] = byKind(objs, 'Service').map((s) => s.spec.selector as Record<string, string>);
    expect(blue!['app.kubernetes.io/instance']).toBe('blue');
    expect(green!['app.kubernetes.io/instance']).toBe('green');
    for (const d of byKind(objs, 'Deployment')) {
      const other = byKind(objs, 'Deployment').find((x) => x !== d)!;
      const selector = (d.spec.selector as { matchLabels: Record<string, string> }).matchLabels;
      const otherPods = templateOf(other).metadata.labels;
      expect(Object.entries(selector).every(([k, v]) => otherPods[k] === v)).toBe(false);
    }
  });

  test('composes into a foreign chart beside other objects without collisions', () => {
    class ShopChart extends Chart {
      constructor() {
        super(Testing.app(), 'shop');
        new kplus.ConfigMap(this, 'settings', { metadata: { name: 'shop-settings' }, data: { a: 'b' } });
        new kplus.Deployment(this, 'frontend', { containers: [{ image: 'nginx', portNumber: 80 }] });
        new ApiObject(this, 'raw', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'frontend-svc' }, spec: { ports: [{ port: 80 }] } });
        new ContainerApp(this, 'backend', { image: 'takeyan/flask:0.0.3', port: 5000 });
      }
    }
    const objs = Testing.synth(new ShopChart()) as Obj[];
    const names = objs.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['Deployment/backend-deployment', 'Service/backend-svc', 'ConfigMap/shop-settings']));
    const backend = objs.find((o) => o.metadata.name === 'backend-svc')!;
    const selector = backend.spec.selector as Record<string, string>;
    const frontend = objs.find((o) => o.kind === 'Deployment' && o.metadata.name !== 'backend-deployment')!;
    const frontendPods = templateOf(frontend).metadata.labels;
    expect(Object.entries(selector).every(([k, v]) => frontendPods[k] === v)).toBe(false);
  });

  test.each([
    [{ port: 0 }, /port 0 is not an integer from 1 to 65535/],
    [{ port: 70000 }, /port 70000/],
    [{ image: '' }, /image "" is empty/],
    [{ replicas: -1 }, /replicas -1/],
    [{ nodePort: 8080 }, /nodePort 8080 is outside 30000-32767/],
  ])('rejects %j with a message naming the construct', (bad, message) => {
    expect(() => synth((c) => new ContainerApp(c, 'broken', { ...BASE, ...bad }))).toThrow(message);
    expect(() => synth((c) => new ContainerApp(c, 'broken', { ...BASE, ...bad }))).toThrow(/ContainerApp .*broken/);
  });
});
