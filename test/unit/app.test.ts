import { describe, expect, test } from '@jest/globals';
import { ApiObject, App, Chart, Size, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import * as kplus33 from 'cdk8s-plus-33';
import { Construct } from 'constructs';
import { ContainerApp, ContainerAppProps, ImagePullPolicy } from 'cdk8s-appkind';

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

  test('dropAllCapabilities and seccompRuntimeDefault with runAsNonRoot render what the "restricted" Pod Security Standard asks', () => {
    const security = { runAsNonRoot: true, runAsUser: 101, readOnlyRootFilesystem: true, dropAllCapabilities: true, seccompRuntimeDefault: true };
    const d = deploymentOf(synth((c) => new ContainerApp(c, 'app', { image: 'nginx', port: 80, securityContext: security })));
    expect(containerOf(d).securityContext).toEqual({
      runAsNonRoot: true, runAsUser: 101, readOnlyRootFilesystem: true, privileged: false, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] },
    });
    expect(templateOf(d).spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    // Without them nothing of "restricted" is added: capabilities and seccomp stay the runtime's.
    const plain = deploymentOf(synth((c) => new ContainerApp(c, 'app', { image: 'nginx', port: 80, securityContext: { runAsUser: 101 } })));
    expect(containerOf(plain).securityContext).toEqual({ runAsNonRoot: false, runAsUser: 101, readOnlyRootFilesystem: false, privileged: false, allowPrivilegeEscalation: false });
    expect(templateOf(plain).spec.securityContext?.seccompProfile).toBeUndefined();
    expect(() => synth((c) => new ContainerApp(c, 'app', { image: 'nginx', port: 80, securityContext: { runAsNonRoot: true, runAsUser: 0 } }))).toThrow(/runAsNonRoot is set but runAsUser is 0/);
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
    expect(d.metadata.name).toMatch(/^test-app-[0-9a-f]{8}-deployment$/);
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
      resources: { requests: { cpu: '100m' }, limits: { memory: '256Mi' } },
      labels: { team: 'blue' },
      annotations: { 'example.com/note': 'n' },
      nodePort: 30080,
      imagePullPolicy: ImagePullPolicy.ALWAYS,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 2000, readOnlyRootFilesystem: true },
      managedBy: 'gitops',
      namespace: 'apps',
    }));
    const d = deploymentOf(objs);
    const s = serviceOf(objs);
    const c = containerOf(d);
    expect(c.env).toEqual([{ name: 'GREETING', value: 'hello' }]);
    expect(c.resources).toEqual({ requests: { cpu: '100m' }, limits: { memory: '256Mi' } });
    expect(c.imagePullPolicy).toBe('Always');
    expect(c.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 2000, readOnlyRootFilesystem: true, privileged: false, allowPrivilegeEscalation: false });
    for (const o of [d, s]) {
      expect(o.metadata).toMatchObject({ namespace: 'apps', labels: { team: 'blue' }, annotations: { 'example.com/note': 'n' } });
    }
    expect(templateOf(d).metadata.labels.team).toBe('blue');
    expect(d.spec.selector).toEqual({ matchLabels: { ...SELECTOR, 'app.kubernetes.io/managed-by': 'gitops' } });
    expect(s.spec.selector).toEqual({ ...SELECTOR, 'app.kubernetes.io/managed-by': 'gitops' });
    expect(s.spec.ports).toEqual([{ name: 'http', port: 5000, targetPort: 5000, nodePort: 30080 }]);
  });

  test('two instances in one chart get distinct names and selectors', () => {
    const apps: ContainerApp[] = [];
    const objs = synth((c) => {
      apps.push(new ContainerApp(c, 'blue', { appName: 'web', image: 'nginx', port: 80 }));
      apps.push(new ContainerApp(c, 'green', { appName: 'web', image: 'nginx', port: 80 }));
    });
    const names = objs.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(names).size).toBe(4);
    const [blue, green] = byKind(objs, 'Service').map((s) => s.spec.selector as Record<string, string>);
    expect(apps[0]!.name).toMatch(/^test-blue-[0-9a-f]{8}$/);
    expect(blue!['app.kubernetes.io/instance']).toBe(apps[0]!.name);
    expect(green!['app.kubernetes.io/instance']).toBe(apps[1]!.name);
    expect(names).toContain(`Service/${apps[1]!.serviceName}`);
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
    expect(names).toEqual(expect.arrayContaining(['Deployment/shop-backend-c8459dcf-deployment', 'Service/shop-backend-c8459dcf-svc', 'ConfigMap/shop-settings']));
    const backend = objs.find((o) => o.metadata.name === 'shop-backend-c8459dcf-svc')!;
    const selector = backend.spec.selector as Record<string, string>;
    const frontend = objs.find((o) => o.kind === 'Deployment' && o.metadata.name !== 'shop-backend-c8459dcf-deployment')!;
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

  test('the same id in two charts of one app gives distinct object names (derived from the construct path)', () => {
    const app = Testing.app();
    const first = new ContainerApp(new Chart(app, 'team-a'), 'echo', { image: 'nginx', port: 80 });
    const second = new ContainerApp(new Chart(app, 'team-b'), 'echo', { image: 'nginx', port: 80 });
    expect(first.name).not.toBe(second.name);
    expect(first.name).toMatch(/^team-a-echo-[0-9a-f]{8}$/);
    expect(second.deploymentName).toBe(`${second.name}-deployment`);
    const names = app.charts.flatMap((c) => (Testing.synth(c) as Obj[]).map((o) => `${o.kind}/${o.metadata.name}`));
    expect(new Set(names).size).toBe(4);
  });

  test('static helpers give the names and selector the construct renders (the operator relies on them)', () => {
    const app = synth((c) => new ContainerApp(c, 'x', BASE));
    expect(ContainerApp.objectNames('example-echoflask')).toEqual({ deployment: 'example-echoflask-deployment', service: 'example-echoflask-svc' });
    expect(ContainerApp.selectorLabelsOf('example-echoflask', 'echoflask')).toEqual(SELECTOR);
    expect(deploymentOf(app).spec.selector).toEqual({ matchLabels: ContainerApp.selectorLabelsOf('example-echoflask', 'echoflask') });
  });

  test('a chart on cdk8s-plus-33 passes the resources and security context its own constructs render', () => {
    const chart = new Chart(new App(), 'plus33');
    const reference = new kplus33.Deployment(chart, 'reference', {
      containers: [{
        image: 'nginx',
        resources: { cpu: { request: kplus33.Cpu.millis(250), limit: kplus33.Cpu.units(1) }, memory: { request: Size.mebibytes(128), limit: Size.mebibytes(512) } },
        securityContext: { ensureNonRoot: true, user: 1000, group: 3000, readOnlyRootFilesystem: true, privileged: false, allowPrivilegeEscalation: false },
      }],
    });
    const referenceObject = (chart.toJson() as Obj[]).find((o) => o.metadata.name === ApiObject.of(reference).name)!;
    const wanted = containerOf(referenceObject);
    const sc = wanted.securityContext as { runAsNonRoot: boolean; runAsUser: number; runAsGroup: number; readOnlyRootFilesystem: boolean };
    const app = new ContainerApp(chart, 'app', {
      image: 'nginx',
      port: 80,
      resources: wanted.resources as ContainerAppProps['resources'],
      securityContext: { runAsNonRoot: sc.runAsNonRoot, runAsUser: sc.runAsUser, runAsGroup: sc.runAsGroup, readOnlyRootFilesystem: sc.readOnlyRootFilesystem },
    });
    const rendered = chart.toJson() as Obj[];
    const container = containerOf(rendered.find((o) => o.metadata.name === app.deploymentName)!);
    expect(wanted.resources).toEqual({ limits: { cpu: '1', memory: '512Mi' }, requests: { cpu: '250m', memory: '128Mi' } });
    expect(container.resources).toEqual(wanted.resources);
    expect(container.securityContext).toEqual(wanted.securityContext);
  });
});
