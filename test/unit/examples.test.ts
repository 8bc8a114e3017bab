// The real-app kinds of examples/real-apps.yaml and the CRs of examples/real-apps-crs.yaml: what each
// renders, field by field, and the spec fields each kind's CRD offers.
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { AppKind } from 'cdk8s-appkind';
import { kindsFromDocument, kindsFromFile } from 'appkind-operator/kinds';
import { crdObjects } from '../../operator/kinds/crd-yaml.js';
import { render, type AppResource } from '../../operator/kinds/render.js';

const root = join(import.meta.dirname, '..', '..');
const kinds = new Map(kindsFromFile(join(root, 'examples', 'real-apps.yaml')).map((k) => [k.kind, k]));
const crs = parseAllDocuments(readFileSync(join(root, 'examples', 'real-apps-crs.yaml'), 'utf8')).map((d) => d.toJS() as AppResource);

type Container = Record<string, unknown> & { name: string; image: string };
type Pod = { containers: Container[]; volumes?: unknown[]; securityContext?: Record<string, unknown>; automountServiceAccountToken?: boolean };
type Obj = { kind: string; metadata: { name: string }; spec: Record<string, unknown> & { replicas?: number; template?: { spec: Pod } } };

function rendered(kindName: string, crName: string): { deployment: Obj; service: Obj; pod: Pod; container: Container } {
  const cr = { ...crs.find((c) => c.kind === kindName && c.metadata.name === crName)!, metadata: { name: crName, namespace: 'apps' } };
  const objs = render(kinds.get(kindName)!, cr) as unknown as Obj[];
  const deployment = objs.find((o) => o.kind === 'Deployment')!;
  const pod = deployment.spec.template!.spec;
  return { deployment, service: objs.find((o) => o.kind === 'Service')!, pod, container: pod.containers[0]! };
}

function specOf(kind: AppKind): Record<string, Record<string, unknown>> {
  const crd = crdObjects([kind])[0] as unknown as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, Record<string, unknown>> } } } } }[] } };
  return crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
}

describe('examples/real-apps.yaml', () => {
  test('four kinds, each with a CR in examples/real-apps-crs.yaml', () => {
    expect([...kinds.keys()]).toEqual(['Memcached', 'FlaskApp', 'Nginx', 'JvmApp']);
    expect(crs.map((c) => c.kind)).toEqual(['Memcached', 'FlaskApp', 'Nginx', 'JvmApp']);
  });

  test('memcached: args -m 64 from the kind, -m 256 and a larger memory limit from the CR', () => {
    const { deployment, container } = rendered('Memcached', 'sessions');
    expect(deployment.spec.replicas).toBe(2);
    expect(container.image).toBe('memcached:1.6-alpine');
    expect(container.args).toEqual(['-m', '256']);
    expect(container.resources).toEqual({ requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '384Mi' } });
    expect(container.readinessProbe).toEqual({ tcpSocket: { port: 11211 } });
    const kindOnly = render(kinds.get('Memcached')!, { apiVersion: 'cache.example.com/v1', kind: 'Memcached', metadata: { name: 'm' } }) as unknown as Obj[];
    expect(kindOnly[0]!.spec.template!.spec.containers[0]!.args).toEqual(['-m', '64']);
    expect(Object.keys(specOf(kinds.get('Memcached')!)).sort()).toEqual(['args', 'image', 'nodePort', 'port', 'resources', 'size']);
  });

  test('Flask: DATABASE_URL from the Secret (a reference, never a value), the pod name, an uploads volume, and the CR\'s own variable and ConfigMap', () => {
    const { pod, container } = rendered('FlaskApp', 'shop');
    expect(container.env).toEqual([
      { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'flask-db', key: 'url' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'LOG_LEVEL', value: 'debug' },
    ]);
    expect(container.envFrom).toEqual([{ configMapRef: { name: 'shop-settings' } }]);
    expect(container.readinessProbe).toEqual({ httpGet: { path: '/', port: 5000 }, periodSeconds: 5 });
    expect(container.volumeMounts).toEqual([{ name: 'uploads', mountPath: '/app/uploads' }]);
    expect(pod.volumes).toEqual([{ name: 'uploads', emptyDir: { sizeLimit: '1Gi' } }]);
    const env = specOf(kinds.get('FlaskApp')!).env!;
    expect(env['x-kubernetes-validations']).toEqual([{ rule: "self.all(e, !(e.name in ['DATABASE_URL']))", message: 'spec.env may not set DATABASE_URL: the kind reserves it' }]);
    // Under items the rules must be written as the API server reads them (cdk8s does not translate there).
    const item = env.items as { 'x-kubernetes-validations': unknown; properties: { valueFrom: Record<string, unknown> } };
    expect(item['x-kubernetes-validations']).toEqual([{ rule: '!(has(self.value) && has(self.valueFrom))', message: 'give value or valueFrom, not both' }]);
    expect(item.properties.valueFrom['x-kubernetes-validations']).toEqual([{
      rule: '[has(self.configMapKeyRef), has(self.secretKeyRef), has(self.fieldRef)].filter(x, x).size() == 1',
      message: 'valueFrom needs exactly one of configMapKeyRef, secretKeyRef, fieldRef',
    }]);
    expect(JSON.stringify(specOf(kinds.get('FlaskApp')!))).not.toContain('xKubernetes');
  });

  test('nginx: read-only root filesystem with writable /var/cache/nginx, /var/run and /tmp; a ClusterIP Service', () => {
    const { service, pod, container } = rendered('Nginx', 'www');
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true });
    expect(container.volumeMounts).toEqual([
      { name: 'cache', mountPath: '/var/cache/nginx' },
      { name: 'run', mountPath: '/var/run' },
      { name: 'tmp', mountPath: '/tmp' },
    ]);
    expect(pod.volumes).toEqual([{ name: 'cache', emptyDir: {} }, { name: 'run', emptyDir: {} }, { name: 'tmp', emptyDir: {} }]);
    expect(container.readinessProbe).toEqual({ httpGet: { path: '/', port: 80 } });
    expect(container.livenessProbe).toEqual({ tcpSocket: { port: 80 }, periodSeconds: 20 });
    expect(service.spec.type).toBe('ClusterIP');
    // No overrides and no NodePort: a CR of this kind sets size, image and port only.
    expect(Object.keys(specOf(kinds.get('Nginx')!)).sort()).toEqual(['image', 'port', 'size']);
  });

  test('JVM: readiness, liveness and startup probes on the actuator, the memory limit the heap follows, the CR\'s larger memory within the kind\'s bound', () => {
    const { container } = rendered('JvmApp', 'petclinic');
    expect(container.readinessProbe).toEqual({ httpGet: { path: '/actuator/health/readiness', port: 8080 }, periodSeconds: 5, failureThreshold: 3 });
    expect(container.livenessProbe).toEqual({ httpGet: { path: '/actuator/health/liveness', port: 8080 }, periodSeconds: 10 });
    expect(container.startupProbe).toEqual({ httpGet: { path: '/actuator/health/liveness', port: 8080 }, periodSeconds: 5, failureThreshold: 60 });
    expect(container.env).toEqual([{ name: 'JAVA_TOOL_OPTIONS', value: '-XX:MaxRAMPercentage=75' }]);
    expect(container.resources).toEqual({ requests: { cpu: '500m', memory: '1536Mi' }, limits: { memory: '2Gi' } });
    const memory = (specOf(kinds.get('JvmApp')!).resources!.properties as Record<string, { properties: Record<string, Record<string, unknown>> }>).limits!.properties.memory!;
    expect(memory['x-kubernetes-validations']).toEqual([{ rule: "quantity(self).compareTo(quantity('4Gi')) <= 0", message: 'memory must be at most 4Gi (the most a JvmApp may ask)' }]);
  });

  test('a CR asking past the kind\'s limits or for a reserved variable is refused by render() too (CRs stored before the kind tightened)', () => {
    const cr = (spec: AppResource['spec']): AppResource => ({ apiVersion: 'apps.example.com/v1', kind: 'JvmApp', metadata: { name: 'big', namespace: 'apps' }, spec });
    expect(() => render(kinds.get('JvmApp')!, cr({ resources: { limits: { memory: '8Gi' } } }))).toThrow(/spec.resources.limits.memory 8Gi is above the kind's most, 4Gi/);
    expect(() => render(kinds.get('JvmApp')!, cr({ env: [{ name: 'JAVA_TOOL_OPTIONS', value: '-Xmx8g' }] }))).toThrow(/spec.env sets JAVA_TOOL_OPTIONS, which the kind JvmApp reserves/);
  });

  test('the README\'s kind is valid and abridges the FlaskApp of examples/real-apps.yaml', () => {
    const block = /```yaml\n(kinds:[\s\S]*?)```/.exec(readFileSync(join(root, 'README.md'), 'utf8'))![1]!;
    const readme = (parseYaml(block) as { kinds: Record<string, unknown>[] }).kinds[0]!;
    expect(kindsFromDocument({ kinds: [readme] }, 'README.md')[0]!.kind).toBe('FlaskApp');
    const file = (parseYaml(readFileSync(join(root, 'examples', 'real-apps.yaml'), 'utf8')) as { kinds: Record<string, unknown>[] }).kinds.find((k) => k.kind === 'FlaskApp')!;
    expect(file).toMatchObject({ ...readme, env: expect.arrayContaining(readme.env as unknown[]) });
    expect(Object.keys(readme)).toEqual(expect.arrayContaining(['env', 'readinessProbe', 'volumes', 'volumeMounts']));
  });
});

describe('examples/production.yaml', () => {
  const [kind, ...others] = kindsFromFile(join(root, 'examples', 'production.yaml'));
  const [cr] = parseAllDocuments(readFileSync(join(root, 'examples', 'production-crs.yaml'), 'utf8')).map((d) => d.toJS() as AppResource);

  test('one kind and its CR: a Deployment, a ClusterIP Service, a PodDisruptionBudget and a NetworkPolicy, all named for the CR', () => {
    expect(others).toEqual([]);
    expect(cr).toMatchObject({ apiVersion: 'prod.example.com/v1', kind: 'WebFront', spec: { size: 3 } });
    const objs = render(kind!, { ...cr!, metadata: { ...cr!.metadata, namespace: 'shop' } }) as unknown as Obj[];
    expect(objs.map((o) => `${o.kind} ${o.metadata.name}`)).toEqual([
      'Deployment storefront-deployment', 'Service storefront-svc', 'PodDisruptionBudget storefront-pdb', 'NetworkPolicy storefront-ingress',
    ]);
    const pod = objs[0]!.spec.template!.spec as Pod & { affinity?: unknown; topologySpreadConstraints?: unknown[] };
    expect(pod.containers[0]).toMatchObject({
      imagePullPolicy: 'Always',
      resources: { requests: { 'ephemeral-storage': '64Mi' }, limits: { 'ephemeral-storage': '256Mi', cpu: '500m', memory: '128Mi' } },
      securityContext: { runAsUser: 10101, runAsGroup: 10101, readOnlyRootFilesystem: true, runAsNonRoot: true },
    });
    expect(pod.affinity).toBeDefined();
    expect(pod.topologySpreadConstraints).toHaveLength(1);
    expect(objs[1]!.spec).toMatchObject({ type: 'ClusterIP', ports: [{ name: 'http', appProtocol: 'http', port: 8080 }] });
    // No CR field for any of them: the CRD offers size, image and port only (ClusterIP: no nodePort).
    expect(Object.keys(specOf(kind!)).sort()).toEqual(['image', 'port', 'size']);
  });
});
