import { describe, expect, test } from '@jest/globals';
import { Ajv } from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ConfigError, kindsFromDocument } from 'appkind-operator/kinds';
import { CONFIG_SCHEMA, configSchemaJson, KIND_PROPERTIES } from '../../operator/kinds/schema.js';

const root = join(import.meta.dirname, '..', '..');
const editorCheck = new Ajv({ strict: true }).compile(CONFIG_SCHEMA);
const kind = { group: 'a.example.com', version: 'v1', kind: 'A', image: 'a:1', port: 80 };

describe('schema/appkinds.schema.json (what an editor checks)', () => {
  test('is what operator/kinds/schema.ts gives (run `npm run schema` when this fails)', () => {
    expect(readFileSync(join(root, 'schema', 'appkinds.schema.json'), 'utf8')).toBe(configSchemaJson());
  });

  test.each(['appkinds.yaml', 'real-apps.yaml', 'production.yaml', 'autoscaling.yaml'])('accepts examples/%s, as the operator does', (file) => {
    const doc = parse(readFileSync(join(root, 'examples', file), 'utf8')) as unknown;
    expect(editorCheck(doc)).toBe(true);
    expect(kindsFromDocument(doc, file).length).toBeGreaterThan(0);
  });

  test('lists every setting the operator keeps, and the operator keeps every setting it lists', () => {
    const everything = {
      ...kind, plural: 'as', appName: 'a', shortNames: ['aa'], maxSize: 3, allowedImages: ['a:*'], runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true,
      tmpVolume: false, command: ['a'], args: ['b'], env: [{ name: 'E', value: 'v' }], envFrom: [{ secretRef: { name: 's' } }],
      readinessProbe: { tcpSocket: {} }, livenessProbe: { tcpSocket: {} }, startupProbe: { tcpSocket: {} }, resources: { limits: { memory: '1Gi' } },
      volumes: [{ name: 'v', emptyDir: {} }], volumeMounts: [{ name: 'v', mountPath: '/v' }], imagePullSecrets: [{ name: 'r' }],
      serviceAccountName: 'sa', automountServiceAccountToken: true, serviceType: 'ClusterIP', overrides: { args: true },
      runAsGroup: 1000, portName: 'tcp-a', appProtocol: 'tcp', imagePullPolicy: 'Always', podDisruptionBudget: { minAvailable: '50%' },
      networkPolicy: { from: [{ podSelector: { matchLabels: { a: 'b' } } }] }, topologySpreadConstraints: [{ topologyKey: 'zone' }], podAntiAffinity: {},
      rollout: { maxConcurrent: 5, progressDeadlineSeconds: 60 },
      versions: [{ name: 'v1', storage: true }, { name: 'v1beta1', served: false }],
    };
    expect(Object.keys(everything).sort()).toEqual(Object.keys(KIND_PROPERTIES).sort());
    expect(editorCheck({ kinds: [everything] })).toBe(true);
    expect(Object.keys(kindsFromDocument({ kinds: [everything] }, 'test')[0]!).sort()).toEqual(Object.keys(KIND_PROPERTIES).sort());
  });

  test.each([
    ['an unknown key', { ...kind, argz: [] }],
    ['an unknown nested key', { ...kind, env: [{ name: 'A', valueFrom: { secretKeyRf: {} } }] }],
    ['a hostPath volume', { ...kind, volumes: [{ name: 'h', hostPath: { path: '/' } }] }],
    ['a number for a quantity', { ...kind, resources: { limits: { cpu: 1 } } }],
    ['a mount without a path', { ...kind, volumeMounts: [{ name: 'v' }] }],
    ['an unknown override', { ...kind, overrides: { securityContext: true } }],
    ['a bad service type', { ...kind, serviceType: 'LoadBalancer' }],
    ['a maxConcurrent of 0', { ...kind, rollout: { maxConcurrent: 0 } }],
    ['a maxConcurrent over 100%', { ...kind, rollout: { maxConcurrent: '150%' } }],
    ['a version without a name', { ...kind, versions: [{ served: true, storage: true }] }],
    ['a version name that is not a Kubernetes version', { ...kind, versions: [{ name: 'one', storage: true }] }],
    ['a missing port', { group: 'a.example.com', version: 'v1', kind: 'A', image: 'a:1' }],
  ])('refuses %s, as the operator does', (_what, bad) => {
    expect(editorCheck({ kinds: [bad] })).toBe(false);
    expect(() => kindsFromDocument({ kinds: [bad] }, 'test')).toThrow(ConfigError);
  });
});
