// Go: jsii-pacmak generates Go bindings of the packed library, and of cdk8s and cdk8s-plus-27 from
// their .jsii assemblies (the cdk8s-team Go modules are not on the module proxy reachable here); the
// program in test/consumers/go composes ContainerApp next to a cdk8s-plus-27 ConfigMap and declares a
// kind as an AppKindObject, and its YAML must equal the TypeScript synth of the same charts.
import { describe, expect, test } from '@jest/globals';
import { App, Chart } from 'cdk8s';
import { AppKindDeletionPolicy, AppKindObject, ContainerApp, ImagePullPolicy, ServiceType } from 'cdk8s-appkind';
import * as kplus from 'cdk8s-plus-27';
import { copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { cached, freshDir, installedVersion, must, pacmak, QUIET_JSII, removeDir, ROOT, unpackLibrary } from './consumer.js';

/** The charts of test/consumers/go/main.go, in TypeScript. */
function typescriptSynth(): string {
  const app = new App();
  const chart = new Chart(app, 'shop', { namespace: 'shop' });
  const settings = new kplus.ConfigMap(chart, 'settings', { data: { GREETING: 'hello' } });
  new ContainerApp(chart, 'echo', {
    image: 'takeyan/flask:0.0.3',
    port: 5000,
    replicas: 2,
    command: ['gunicorn'],
    args: ['--workers', '2'],
    env: [
      { name: 'SETTINGS', value: settings.name },
      { name: 'GREETING', valueFrom: { configMapKeyRef: { name: settings.name, key: 'GREETING' } } },
      { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ],
    envFrom: [{ configMapRef: { name: settings.name } }, { prefix: 'DB_', secretRef: { name: 'db', optional: true } }],
    readinessProbe: { httpGet: { path: '/healthz' }, periodSeconds: 5, failureThreshold: 3 },
    livenessProbe: { tcpSocket: {} },
    startupProbe: { exec: { command: ['cat', '/tmp/started'] }, failureThreshold: 30 },
    volumes: [
      { name: 'cache', emptyDir: { sizeLimit: '64Mi' } },
      { name: 'conf', configMap: { name: settings.name } },
      { name: 'tls', secret: { secretName: 'echo-tls', items: [{ key: 'tls.key', path: 'key.pem', mode: 256 }] } },
      { name: 'data', persistentVolumeClaim: { claimName: 'echo-data' } },
    ],
    volumeMounts: [
      { name: 'cache', mountPath: '/var/cache/app' },
      { name: 'conf', mountPath: '/etc/app', readOnly: true },
      { name: 'tls', mountPath: '/etc/tls', readOnly: true },
      { name: 'data', mountPath: '/var/lib/app', subPath: 'echo' },
    ],
    imagePullSecrets: [{ name: 'regcred' }],
    serviceAccountName: 'echo',
    automountServiceAccountToken: true,
    serviceType: ServiceType.CLUSTER_IP,
    podDisruptionBudget: { maxUnavailable: '1' },
    networkPolicy: {
      from: [
        { podSelector: { matchLabels: { role: 'frontend' } } },
        { namespaceSelector: { matchLabels: { team: 'blue' } } },
        { ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.5.0/24'] } },
      ],
    },
    imagePullPolicy: ImagePullPolicy.ALWAYS,
    resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
    securityContext: { runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true },
    labels: { team: 'blue' },
  });
  new AppKindObject(new Chart(app, 'kinds'), 'echoflask', {
    appKind: {
      group: 'swallowlab.com', version: 'v1alpha1', kind: 'EchoFlask', plural: 'echoflasks',
      image: 'takeyan/flask:0.0.3', port: 5000, appName: 'echoflask',
      rollout: { maxConcurrent: '25%', progressDeadlineSeconds: 120 },
    },
    deletionPolicy: AppKindDeletionPolicy.DELETE,
  });
  return app.synthYaml();
}

describe('Go bindings', () => {
  test('a Go program composing ContainerApp, a cdk8s-plus-27 ConfigMap and an AppKindObject synthesizes the same YAML as TypeScript', async () => {
    const work = freshDir('go');
    try {
      const library = await unpackLibrary(work);
      const ours = join(work, 'bindings');
      mkdirSync(ours);
      await pacmak('go', ours, [library]);
      // cdk8s and cdk8s-plus-27 depend only on the installed versions, so their bindings are kept.
      const key = `go-bindings/cdk8s${installedVersion('cdk8s')}-plus27-${installedVersion('cdk8s-plus-27')}-pacmak${installedVersion('jsii-pacmak')}`;
      const theirs = await cached(key, (dir) => pacmak('go', dir, [join(ROOT, 'node_modules', 'cdk8s'), join(ROOT, 'node_modules', 'cdk8s-plus-27')]));

      const module = join(work, 'module');
      mkdirSync(join(module, '_bindings'), { recursive: true });
      for (const file of ['main.go', 'go.mod', 'go.sum']) copyFileSync(join(ROOT, 'test', 'consumers', 'go', file), join(module, file));
      symlinkSync(join(ours, 'go', 'cdk8sappkind'), join(module, '_bindings', 'cdk8sappkind'));
      symlinkSync(join(theirs, 'go', 'cdk8s'), join(module, '_bindings', 'cdk8s'));
      symlinkSync(join(theirs, 'go', 'cdk8splus27'), join(module, '_bindings', 'cdk8splus27'));

      const yaml = await must('go', ['run', '.'], module, { ...QUIET_JSII, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' });
      const expected = typescriptSynth();
      expect(expected).toMatch(/kind: ConfigMap[\s\S]*name: shop-echo-[0-9a-f]{8}-deployment[\s\S]*type: ClusterIP/);
      // The new props reached the YAML (the /tmp emptyDir comes from the read-only root filesystem).
      for (const fact of ['secretKeyRef:', 'fieldPath: metadata.name', 'path: /healthz', 'mountPath: /tmp', 'kind: PodDisruptionBudget', 'kind: NetworkPolicy',
        'serviceAccountName: echo', 'automountServiceAccountToken: true', '- gunicorn', 'prefix: DB_', '- /tmp/started', 'secretName: echo-tls',
        'mode: 256', 'claimName: echo-data', 'subPath: echo', 'cidr: 10.0.0.0/16',
        'kind: AppKind', 'name: echoflasks.swallowlab.com', 'deletionPolicy: Delete', 'maxConcurrent: 25%', 'progressDeadlineSeconds: 120']) {
        expect(expected).toContain(fact);
      }
      expect(yaml).toBe(expected);
    } finally {
      removeDir(work);
    }
  }, 20 * 60_000);
});
