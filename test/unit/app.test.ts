import { describe, expect, test } from '@jest/globals';
import { ApiObject, App, Chart, Size, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import * as kplus33 from 'cdk8s-plus-33';
import { Construct } from 'constructs';
import { ContainerApp, ContainerAppProps, ImagePullPolicy, ServiceType, WhenUnsatisfiable } from 'cdk8s-appkind';

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
      env: [{ name: 'GREETING', value: 'hello' }],
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
    expect(ContainerApp.objectNames('example-echoflask')).toEqual({
      deployment: 'example-echoflask-deployment', service: 'example-echoflask-svc', podDisruptionBudget: 'example-echoflask-pdb', networkPolicy: 'example-echoflask-ingress',
    });
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

type PodSpec = { containers: Record<string, unknown>[]; volumes?: unknown[]; imagePullSecrets?: unknown[]; serviceAccountName?: string; automountServiceAccountToken?: boolean };
const podSpecOf = (objs: Obj[]) => templateOf(deploymentOf(objs)).spec as unknown as PodSpec;
const appContainer = (objs: Obj[]) => podSpecOf(objs).containers[0]!;

describe('ContainerApp: what real images need (Kubernetes names and shapes)', () => {
  test('command and args replace the image entrypoint and CMD, in order', () => {
    const c = appContainer(synth((ch) => new ContainerApp(ch, 'mc', { image: 'memcached:1.6', port: 11211, command: ['memcached'], args: ['-m', '64'] })));
    expect(c.command).toEqual(['memcached']);
    expect(c.args).toEqual(['-m', '64']);
  });

  test('env holds plain values and references to ConfigMap keys, Secret keys and pod fields, in the order given; envFrom whole ConfigMaps and Secrets', () => {
    const c = appContainer(synth((ch) => new ContainerApp(ch, 'web', {
      image: 'flask', port: 5000,
      env: [
        { name: 'MODE', value: 'production' },
        { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } },
        { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'settings', key: 'color', optional: true } } },
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ],
      envFrom: [{ configMapRef: { name: 'settings' } }, { prefix: 'DB_', secretRef: { name: 'db', optional: false } }],
    })));
    expect(c.env).toEqual([
      { name: 'MODE', value: 'production' },
      { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } },
      { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'settings', key: 'color', optional: true } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
    expect(c.envFrom).toEqual([{ configMapRef: { name: 'settings' } }, { prefix: 'DB_', secretRef: { name: 'db', optional: false } }]);
  });

  test('probes: httpGet and tcpSocket default to the app port and "/", exec runs a command; timings pass through', () => {
    const c = appContainer(synth((ch) => new ContainerApp(ch, 'jvm', {
      image: 'eclipse-temurin:21', port: 8080,
      readinessProbe: { httpGet: { path: '/actuator/health/readiness' }, initialDelaySeconds: 5, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 6, successThreshold: 2 },
      livenessProbe: { tcpSocket: {} },
      startupProbe: { exec: { command: ['cat', '/tmp/started'] }, failureThreshold: 30, periodSeconds: 2 },
    })));
    expect(c.readinessProbe).toEqual({ httpGet: { path: '/actuator/health/readiness', port: 8080 }, initialDelaySeconds: 5, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 6, successThreshold: 2 });
    expect(c.livenessProbe).toEqual({ tcpSocket: { port: 8080 } });
    expect(c.startupProbe).toEqual({ exec: { command: ['cat', '/tmp/started'] }, failureThreshold: 30, periodSeconds: 2 });
    const other = appContainer(synth((ch) => new ContainerApp(ch, 'x', { image: 'a', port: 80, readinessProbe: { httpGet: { port: 9000 } } })));
    expect(other.readinessProbe).toEqual({ httpGet: { path: '/', port: 9000 } });
  });

  test('volumes (emptyDir, ConfigMap, Secret, PersistentVolumeClaim) and their mounts', () => {
    const objs = synth((ch) => new ContainerApp(ch, 'v', {
      image: 'a', port: 80,
      volumes: [
        { name: 'cache', emptyDir: { sizeLimit: '64Mi' } },
        { name: 'conf', configMap: { name: 'nginx-conf', items: [{ key: 'default.conf', path: 'default.conf' }] } },
        { name: 'tls', secret: { secretName: 'tls', defaultMode: 0o400 } },
        { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
      ],
      volumeMounts: [
        { name: 'cache', mountPath: '/var/cache/nginx' },
        { name: 'conf', mountPath: '/etc/nginx/conf.d', readOnly: true },
        { name: 'tls', mountPath: '/etc/tls', readOnly: true },
        { name: 'data', mountPath: '/data', subPath: 'web' },
      ],
    }));
    expect(podSpecOf(objs).volumes).toEqual([
      { name: 'cache', emptyDir: { sizeLimit: '64Mi' } },
      { name: 'conf', configMap: { name: 'nginx-conf', items: [{ key: 'default.conf', path: 'default.conf' }] } },
      { name: 'tls', secret: { secretName: 'tls', defaultMode: 256 } },
      { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
    ]);
    expect(appContainer(objs).volumeMounts).toEqual([
      { name: 'cache', mountPath: '/var/cache/nginx' },
      { name: 'conf', mountPath: '/etc/nginx/conf.d', readOnly: true },
      { name: 'tls', mountPath: '/etc/tls', readOnly: true },
      { name: 'data', mountPath: '/data', subPath: 'web' },
    ]);
  });

  test('a read-only root filesystem gets a writable /tmp emptyDir unless turned off or /tmp is mounted already; a writable root gets none', () => {
    const readOnly = { securityContext: { readOnlyRootFilesystem: true } };
    const objs = synth((ch) => new ContainerApp(ch, 'ro', { image: 'a', port: 80, ...readOnly }));
    expect(podSpecOf(objs).volumes).toEqual([{ name: 'tmp', emptyDir: {} }]);
    expect(appContainer(objs).volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
    const off = synth((ch) => new ContainerApp(ch, 'ro', { image: 'a', port: 80, ...readOnly, tmpVolume: false }));
    expect(podSpecOf(off).volumes).toBeUndefined();
    expect(appContainer(off).volumeMounts).toBeUndefined();
    const own = synth((ch) => new ContainerApp(ch, 'ro', {
      image: 'a', port: 80, ...readOnly, volumes: [{ name: 'scratch', emptyDir: { medium: 'Memory' } }], volumeMounts: [{ name: 'scratch', mountPath: '/tmp' }],
    }));
    expect(podSpecOf(own).volumes).toEqual([{ name: 'scratch', emptyDir: { medium: 'Memory' } }]);
    const writable = synth((ch) => new ContainerApp(ch, 'rw', { image: 'a', port: 80 }));
    expect(podSpecOf(writable).volumes).toBeUndefined();
  });

  test('imagePullSecrets, serviceAccountName; the token stays unmounted unless asked for', () => {
    const spec = podSpecOf(synth((ch) => new ContainerApp(ch, 's', { image: 'registry.example.com/a', port: 80, imagePullSecrets: [{ name: 'regcred' }], serviceAccountName: 'web' })));
    expect(spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(spec.serviceAccountName).toBe('web');
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(podSpecOf(synth((ch) => new ContainerApp(ch, 's', { image: 'a', port: 80, automountServiceAccountToken: true }))).automountServiceAccountToken).toBe(true);
  });

  test('serviceType ClusterIP renders a Service without a NodePort; NodePort stays the default', () => {
    const s = serviceOf(synth((ch) => new ContainerApp(ch, 'c', { ...BASE, serviceType: ServiceType.CLUSTER_IP })));
    expect(s.spec.type).toBe('ClusterIP');
    expect(s.spec.ports).toEqual([{ name: 'http', port: 5000, targetPort: 5000 }]);
    expect(serviceOf(synth((ch) => new ContainerApp(ch, 'c', BASE))).spec.type).toBe('NodePort');
  });

  test('a PodDisruptionBudget and a NetworkPolicy select exactly the app\'s pods', () => {
    const objs = synth((ch) => new ContainerApp(ch, 'p', {
      ...BASE, namespace: 'shop',
      podDisruptionBudget: { minAvailable: '50%' },
      networkPolicy: { from: [{ podSelector: { matchLabels: { role: 'frontend' } } }, { namespaceSelector: { matchLabels: { team: 'ops' } }, podSelector: {} }, { ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.5.0/24'] } }] },
    }));
    const pdb = byKind(objs, 'PodDisruptionBudget')[0]!;
    expect(pdb.metadata).toMatchObject({ name: 'example-echoflask-pdb', namespace: 'shop', labels: SELECTOR });
    expect(pdb.spec).toEqual({ selector: { matchLabels: SELECTOR }, minAvailable: '50%' });
    const np = byKind(objs, 'NetworkPolicy')[0]!;
    expect(np.metadata).toMatchObject({ name: 'example-echoflask-ingress', namespace: 'shop' });
    expect(np.spec).toEqual({
      podSelector: { matchLabels: SELECTOR },
      policyTypes: ['Ingress'],
      ingress: [{
        from: [
          { podSelector: { matchLabels: { role: 'frontend' } } },
          { podSelector: { matchLabels: {} }, namespaceSelector: { matchLabels: { team: 'ops' } } },
          { ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.5.0/24'] } },
        ],
        ports: [{ protocol: 'TCP', port: 5000 }],
      }],
    });
    const defaults = synth((ch) => new ContainerApp(ch, 'p', { ...BASE, podDisruptionBudget: {}, networkPolicy: { from: [] } }));
    expect(byKind(defaults, 'PodDisruptionBudget')[0]!.spec).toEqual({ selector: { matchLabels: SELECTOR }, maxUnavailable: 1 });
    expect(byKind(defaults, 'NetworkPolicy')[0]!.spec.ingress).toEqual([]);
    expect(synth((ch) => new ContainerApp(ch, 'p', BASE)).map((o) => o.kind)).toEqual(['Deployment', 'Service']);
  });

  test('spread constraints and an anti-affinity count the app\'s own pods; the Service port\'s name and appProtocol; ephemeral storage', () => {
    const objs = synth((ch) => new ContainerApp(ch, 's', {
      ...BASE,
      topologySpreadConstraints: [
        { topologyKey: 'topology.kubernetes.io/zone' },
        { topologyKey: 'kubernetes.io/hostname', maxSkew: 2, whenUnsatisfiable: WhenUnsatisfiable.DO_NOT_SCHEDULE, minDomains: 3 },
      ],
      podAntiAffinity: {},
      portName: 'tcp-memcache',
      appProtocol: 'tcp',
      resources: { requests: { ephemeralStorage: '64Mi' }, limits: { ephemeralStorage: '1Gi', memory: '128Mi' } },
    }));
    const pod = templateOf(deploymentOf(objs)).spec as unknown as Record<string, unknown>;
    const labelSelector = { matchLabels: SELECTOR };
    expect(pod.topologySpreadConstraints).toEqual([
      { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector },
      { maxSkew: 2, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector, minDomains: 3 },
    ]);
    expect(pod.affinity).toEqual({ podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { labelSelector, topologyKey: 'kubernetes.io/hostname' } }] } });
    expect(containerOf(deploymentOf(objs)).resources).toEqual({ limits: { memory: '128Mi', 'ephemeral-storage': '1Gi' }, requests: { 'ephemeral-storage': '64Mi' } });
    expect(serviceOf(objs).spec.ports).toEqual([{ name: 'tcp-memcache', port: 5000, targetPort: 5000, appProtocol: 'tcp' }]);
    const required = synth((ch) => new ContainerApp(ch, 's', { ...BASE, podAntiAffinity: { required: true, topologyKey: 'topology.kubernetes.io/zone' } }));
    expect((templateOf(deploymentOf(required)).spec as unknown as Record<string, unknown>).affinity).toEqual({
      podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector, topologyKey: 'topology.kubernetes.io/zone' }] },
    });
    // None of them asked for: none rendered, the port named http as always.
    const plain = synth((ch) => new ContainerApp(ch, 's', BASE));
    expect(templateOf(deploymentOf(plain)).spec).not.toHaveProperty('affinity');
    expect(templateOf(deploymentOf(plain)).spec).not.toHaveProperty('topologySpreadConstraints');
    expect(serviceOf(plain).spec.ports).toEqual([{ name: 'http', port: 5000, targetPort: 5000 }]);
  });

  test.each<[string, Partial<ContainerAppProps>, RegExp]>([
    ['value and valueFrom', { env: [{ name: 'A', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }, /env A has both value and valueFrom; give one/],
    ['two sources', { env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'x' }, secretKeyRef: { name: 's', key: 'k' } } }] }, /env A.valueFrom needs exactly one of configMapKeyRef, secretKeyRef or fieldRef/],
    ['a name twice', { env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }] }, /env lists A twice/],
    ['envFrom without a source', { envFrom: [{ prefix: 'X_' }] }, /envFrom\[0\] needs exactly one of configMapRef or secretRef/],
    ['a probe with two handlers', { readinessProbe: { httpGet: {}, tcpSocket: {} } }, /readinessProbe needs exactly one of httpGet, tcpSocket or exec/],
    ['a probe with none', { livenessProbe: { periodSeconds: 5 } }, /livenessProbe needs exactly one/],
    ['a liveness successThreshold', { livenessProbe: { tcpSocket: {}, successThreshold: 2 } }, /livenessProbe.successThreshold must be 1/],
    ['a negative delay', { readinessProbe: { tcpSocket: {}, initialDelaySeconds: -1 } }, /readinessProbe.initialDelaySeconds -1 is not an integer of at least 0/],
    ['a relative http path', { readinessProbe: { httpGet: { path: 'health' } } }, /readinessProbe.httpGet.path "health" must start with "\/"/],
    ['a mount of a missing volume', { volumeMounts: [{ name: 'nope', mountPath: '/x' }] }, /volumeMount \/x names the volume "nope", which volumes does not list/],
    ['a relative mount path', { volumes: [{ name: 'v', emptyDir: {} }], volumeMounts: [{ name: 'v', mountPath: 'x' }] }, /mountPath "x" is not an absolute path/],
    ['a volume without a source', { volumes: [{ name: 'v' }] }, /volume v needs exactly one of emptyDir, configMap, secret or persistentVolumeClaim \(hostPath is not offered\)/],
    ['a volume named tmp under a read-only root', { securityContext: { readOnlyRootFilesystem: true }, volumes: [{ name: 'tmp', emptyDir: {} }] }, /volume name "tmp" is taken by the writable \/tmp/],
    ['nodePort with ClusterIP', { serviceType: ServiceType.CLUSTER_IP, nodePort: 30080 }, /nodePort is set but serviceType is ClusterIP/],
    ['both budgets', { podDisruptionBudget: { minAvailable: '1', maxUnavailable: '1' } }, /podDisruptionBudget has both minAvailable and maxUnavailable/],
    ['a budget that is no number', { podDisruptionBudget: { maxUnavailable: 'half' } }, /podDisruptionBudget.maxUnavailable "half" is neither a number/],
    ['an empty peer', { networkPolicy: { from: [{}] } }, /networkPolicy.from\[0\] needs podSelector and\/or namespaceSelector, or ipBlock alone/],
    ['a port name too long', { portName: 'memcached-binary' }, /portName "memcached-binary" is not an IANA service name/],
    ['a port name of digits', { portName: '11211' }, /portName "11211" is not an IANA service name/],
    ['an appProtocol with a space', { appProtocol: 'h 2' }, /appProtocol "h 2" is not a protocol name/],
    ['a zero skew', { topologySpreadConstraints: [{ topologyKey: 'zone', maxSkew: 0 }] }, /topologySpreadConstraints\[0\].maxSkew 0 is not an integer of at least 1/],
    ['minDomains without DoNotSchedule', { topologySpreadConstraints: [{ topologyKey: 'zone', minDomains: 2 }] }, /topologySpreadConstraints\[0\].minDomains needs whenUnsatisfiable DoNotSchedule/],
    ['an empty topology key', { topologySpreadConstraints: [{ topologyKey: '' }] }, /topologySpreadConstraints\[0\].topologyKey "" is not a node label key/],
    ['a bad anti-affinity key', { podAntiAffinity: { topologyKey: 'a b' } }, /podAntiAffinity.topologyKey "a b" is not a node label key/],
  ])('refuses %s with a message naming the construct and the fix', (_what, bad, message) => {
    expect(() => synth((ch) => new ContainerApp(ch, 'broken', { ...BASE, ...bad }))).toThrow(message);
    expect(() => synth((ch) => new ContainerApp(ch, 'broken', { ...BASE, ...bad }))).toThrow(/ContainerApp .*broken/);
  });
});
