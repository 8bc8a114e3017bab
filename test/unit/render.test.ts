import { describe, expect, test } from '@jest/globals';
import { Testing } from 'cdk8s';
import { EchoFlask } from '../../imports/swallowlab.com.js';
import { Takara } from '../../imports/maho.takara.org.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { crdObjects } from '../../operator/kinds/crd-yaml.js';
import { render, type AppResource } from '../../operator/kinds/render.js';
import { sampleResource } from '../../sample.js';

const cr = (spec: AppResource['spec'], namespace = 'default'): AppResource => ({
  apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', metadata: { name: 'example-echoflask', namespace }, spec,
});
type Rendered = { kind: string; metadata: { name: string; namespace?: string }; spec: { replicas?: number; ports?: unknown[]; template?: { spec: { containers: { image: string; ports: unknown[] }[] } } } };
const asList = (objs: unknown[]) => objs as Rendered[];

describe('render', () => {
  test('CR in, the Deployment and NodePort Service out, in the CR namespace', () => {
    const [deployment, service] = asList(render(SAMPLE_KIND, cr({ size: 3 })));
    expect(deployment).toMatchObject({ kind: 'Deployment', metadata: { name: 'example-echoflask-deployment', namespace: 'default' }, spec: { replicas: 3 } });
    expect(deployment!.spec.template!.spec.containers[0]).toMatchObject({ image: 'takeyan/flask:0.0.3', ports: [{ containerPort: 5000 }] });
    expect(service).toMatchObject({ kind: 'Service', metadata: { name: 'example-echoflask-svc', namespace: 'default' }, spec: { type: 'NodePort', ports: [{ port: 5000, targetPort: 5000 }] } });
  });

  test('the same children whatever version a CR was read at, and whatever versions its kind lists', () => {
    const kind = { ...SAMPLE_KIND, versions: [{ name: 'v1alpha1' }, { name: 'v1', storage: true }] };
    const atV1 = { ...cr({ size: 2, image: 'takeyan/flask:0.0.3' }), apiVersion: 'swallowlab.com/v1' };
    expect(render(kind, atV1)).toEqual(render(SAMPLE_KIND, cr({ size: 2, image: 'takeyan/flask:0.0.3' })));
  });

  test('the spec overrides the kind defaults', () => {
    const [deployment, service] = asList(render(SAMPLE_KIND, cr({ size: 0, image: 'nginx:1.27', port: 8080, nodePort: 31000 }, 'shop')));
    expect(deployment!.spec.replicas).toBe(0);
    expect(deployment!.metadata.namespace).toBe('shop');
    expect(deployment!.spec.template!.spec.containers[0]).toMatchObject({ image: 'nginx:1.27', ports: [{ containerPort: 8080 }] });
    expect(service!.spec.ports).toEqual([{ name: 'http', port: 8080, targetPort: 8080, nodePort: 31000 }]);
  });

  test('pod security comes from the kind; fields a CR adds for it are ignored (the API server prunes them anyway)', () => {
    const kind = { ...SAMPLE_KIND, runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true };
    const sneaky = { size: 1, securityContext: { runAsUser: 0, privileged: true }, runAsNonRoot: false } as AppResource['spec'];
    const [deployment] = render(kind, cr(sneaky)) as unknown as { spec: { template: { spec: { securityContext: unknown; containers: { securityContext: unknown }[] } } } }[];
    expect(deployment!.spec.template.spec.containers[0]!.securityContext).toEqual({
      runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true, privileged: false, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] },
    });
    expect(deployment!.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
  });

  test('a CR sets args, env, envFrom, resources and serviceAccountName only where the kind allows; the rest comes from the kind', () => {
    const base = { ...SAMPLE_KIND, args: ['--kind'], env: [{ name: 'A', value: 'kind' }, { name: 'B', value: 'kind' }], resources: { limits: { cpu: '1', memory: '1Gi' } }, serviceAccountName: 'kind-sa' };
    const spec = {
      args: ['--cr'], env: [{ name: 'B', value: 'cr' }, { name: 'C', value: 'cr' }], envFrom: [{ secretRef: { name: 's' } }],
      resources: { limits: { memory: '2Gi' } }, serviceAccountName: 'cr-sa',
    };
    type Pod = { serviceAccountName?: string; containers: { args?: string[]; env?: unknown[]; envFrom?: unknown[]; resources?: unknown }[] };
    const podOf = (kind: typeof base) => (render(kind, cr(spec))[0] as unknown as { spec: { template: { spec: Pod } } }).spec.template.spec;
    const closed = podOf(base);
    expect(closed.containers[0]).toMatchObject({ args: ['--kind'], env: base.env, resources: base.resources });
    expect(closed.containers[0]!.envFrom).toBeUndefined();
    expect(closed.serviceAccountName).toBe('kind-sa');
    const open = podOf({ ...base, overrides: { args: true, env: {}, envFrom: true, resources: {}, serviceAccountName: true } } as typeof base);
    expect(open.containers[0]).toMatchObject({
      args: ['--cr'],
      env: [{ name: 'A', value: 'kind' }, { name: 'B', value: 'cr' }, { name: 'C', value: 'cr' }],
      envFrom: [{ secretRef: { name: 's' } }],
      resources: { limits: { cpu: '1', memory: '2Gi' } },
    });
    expect(open.serviceAccountName).toBe('cr-sa');
  });

  test('a CR replaces the kind\'s PodDisruptionBudget only where the kind allows it; its CRD then has the field, one of the two counts', () => {
    const base = { ...SAMPLE_KIND, podDisruptionBudget: { minAvailable: '1' } };
    const budgetOf = (kind: typeof base, spec: AppResource['spec']) =>
      (render(kind, cr(spec)).find((o) => o.kind === 'PodDisruptionBudget') as unknown as { spec: Record<string, unknown> } | undefined)?.spec;
    expect(budgetOf(base, { size: 4, podDisruptionBudget: { maxUnavailable: '50%' } })).toMatchObject({ minAvailable: 1 });
    const open = { ...base, overrides: { podDisruptionBudget: true } };
    expect(budgetOf(open, { size: 4, podDisruptionBudget: { maxUnavailable: '50%' } })).toMatchObject({ maxUnavailable: '50%' });
    expect(budgetOf(open, { size: 4 })).toMatchObject({ minAvailable: 1 });
    // A kind without a budget of its own lets a CR ask for one.
    expect(budgetOf({ ...SAMPLE_KIND, overrides: { podDisruptionBudget: true } } as typeof base, { podDisruptionBudget: {} })).toMatchObject({ maxUnavailable: 1 });
    type Props = Record<string, { properties?: Record<string, { pattern?: string }>; 'x-kubernetes-validations'?: unknown }>;
    const specProps = (kind: typeof base) => (crdObjects([kind])[0] as unknown as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Props } } } } }[] } })
      .spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
    expect(specProps(base)).not.toHaveProperty('podDisruptionBudget');
    const field = specProps(open).podDisruptionBudget!;
    expect(field.properties!.maxUnavailable!.pattern).toBe('^[0-9]+%?$');
    expect(field['x-kubernetes-validations']).toEqual([{ rule: '!(has(self.minAvailable) && has(self.maxUnavailable))', message: 'give minAvailable or maxUnavailable, not both' }]);
  });

  test('a CR without spec gets one pod; a missing namespace stays unset', () => {
    const [deployment] = asList(render(SAMPLE_KIND, { ...sampleResource(SAMPLE_KIND), spec: undefined }));
    expect(deployment!.spec.replicas).toBe(1);
    expect(deployment!.metadata.namespace).toBeUndefined();
  });

  test('is pure: the same CR gives equal output, and calls do not see each other', () => {
    const first = render(SAMPLE_KIND, cr({ size: 2 }));
    render(SAMPLE_KIND, cr({ size: 9 }));
    expect(render(SAMPLE_KIND, cr({ size: 2 }))).toEqual(first);
  });

  test('bad spec values fail with the CR name in the message', () => {
    expect(() => render(SAMPLE_KIND, cr({ port: 0 }))).toThrow(/example-echoflask: port 0/);
  });
});

describe('typed CR classes (cdk8s import of our CRDs)', () => {
  test('new EchoFlask(chart, id, { spec: { size: 3 } })', () => {
    const chart = Testing.chart();
    new EchoFlask(chart, 'x', { metadata: { name: 'example-echoflask' }, spec: { size: 3 } });
    new Takara(chart, 'y', { metadata: { name: 'example-takara' }, spec: { size: 2, image: 'memcached:1.6' } });
    expect(Testing.synth(chart)).toEqual([
      { apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', metadata: { name: 'example-echoflask' }, spec: { size: 3 } },
      { apiVersion: 'maho.takara.org/v1alpha1', kind: 'Takara', metadata: { name: 'example-takara' }, spec: { size: 2, image: 'memcached:1.6' } },
    ]);
  });
});
