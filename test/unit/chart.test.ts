import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadAppKinds } from 'appkind-operator/kinds';
import { CHART_DIR, KIND_OBJECTS_FILE, MONITORING_FILE, chartKindGroups, chartKinds, kindObjectsFile, monitoringFile } from '../../tools/release/chart.js';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(CHART_DIR, path), 'utf8');

describe('the Helm chart charts/appkind-operator', () => {
  test('files/kinds.yaml is what the constructs render for values.yaml\'s kinds and kindGroups (run `npm run chart` when this fails)', () => {
    expect(read(KIND_OBJECTS_FILE)).toBe(kindObjectsFile(chartKinds(), chartKindGroups()));
  });

  test('AppKinds may use no group by default: the operator reads CRDs only, and its CRD policy allows no group', () => {
    expect(chartKindGroups()).toEqual([]);
    const file = parse(read(KIND_OBJECTS_FILE)) as { kindGroups: string[]; crdRules: { verbs: string[] }[]; objects: { kind: string; metadata: { name: string } }[] };
    expect(file.kindGroups).toEqual([]);
    expect(file.crdRules.flatMap((r) => r.verbs)).toEqual(['get', 'list', 'watch']);
    expect(file.objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata.name)).toContain('appkind-operator-crds');
  });

  test('files/monitoring.yaml is what OperatorMonitoring renders: a ServiceMonitor, a PrometheusRule and the dashboard (run `npm run chart` when this fails)', () => {
    expect(read(MONITORING_FILE)).toBe(monitoringFile(chartKinds()));
    const { objects } = parse(read(MONITORING_FILE)) as { objects: { kind: string; metadata: { name: string } }[] };
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['ServiceMonitor/appkind-operator', 'PrometheusRule/appkind-operator', 'ConfigMap/appkind-operator-dashboard']);
  });

  test('its kinds are the sample kind, as install.yaml serves them without configuration', () => {
    expect(chartKinds()).toEqual(loadAppKinds({}));
  });

  test('its version and appVersion are the library\'s, and its default image is that version\'s', () => {
    const { version } = JSON.parse(readFileSync(join(root, 'lib', 'package.json'), 'utf8')) as { version: string };
    const chart = parse(read('Chart.yaml')) as { apiVersion: string; version: string; appVersion: string; kubeVersion: string };
    expect(chart).toMatchObject({ apiVersion: 'v2', version, appVersion: version });
    expect(chart.kubeVersion).toBe('>=1.30.0-0');
    expect((parse(read('values.yaml')) as { image: string }).image).toBe(`appkind-operator:${version}`);
  });

  test('every top-level value of values.yaml is in values.schema.json, which refuses any other key', () => {
    const schema = JSON.parse(read('values.schema.json')) as { additionalProperties: boolean; properties: Record<string, unknown> };
    expect(schema.additionalProperties).toBe(false);
    const keys = Object.keys(parse(read('values.yaml')) as object);
    for (const key of keys) expect(Object.keys(schema.properties)).toContain(key);
  });
});
