// The rendering is a contract: render() gives, object by object, what test/golden/render.yaml holds for
// every kind and CR of examples/ and the walkthrough's sample. A difference fails naming the app, the
// object and the fields, and whether it rolls the app's pods; `npm run golden` rewrites the file (this
// test never does).
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { drift } from '../../operator/controller/diff.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import type { AppSpec, KubeObject } from '../../operator/kinds/render.js';
import { CONFIG_SCHEMA, KIND_PROPERTIES } from '../../operator/kinds/schema.js';
import {
  GOLDEN_FILE,
  goldenCases,
  goldenDifferences,
  inputCrs,
  inputFiles,
  type GoldenObject,
  objectKey,
  parseGolden,
  renderCases,
  templateHash,
  templateHashes,
  UPDATE_HINT,
} from '../golden/rendering.js';

type Deployment = KubeObject & { spec: { replicas: number; template: { spec: { containers: { image: string; env?: unknown[] }[] } } } };

const golden = parseGolden(readFileSync(GOLDEN_FILE, 'utf8'));
const now = renderCases();
const find = (objects: readonly GoldenObject[], app: string, kind: string) => objects.find((o) => o.app === app && o.object.kind === kind)?.object;

describe('test/golden/render.yaml', () => {
  test('is what render() gives now, object by object', () => {
    const differences = goldenDifferences(golden.objects, now);
    const report = differences.length === 0 ? '' : `render() differs from test/golden/render.yaml:\n${differences.join('\n')}\nIf the change is meant, ${UPDATE_HINT}.`;
    expect(report).toBe('');
  });

  test('holds every CR of examples/ and test/golden/crs.yaml under each kind of its group, version and kind, with its image and replicas', () => {
    const { kindFiles, crFiles } = inputFiles();
    expect(kindFiles).toEqual(expect.arrayContaining(['examples/appkinds.yaml', 'examples/real-apps.yaml', 'examples/production.yaml', 'examples/autoscaling.yaml', 'test/golden/kinds.yaml']));
    expect(crFiles).toEqual(expect.arrayContaining(['examples/example-echoflask.yaml', 'examples/example-takara.yaml', 'examples/real-apps-crs.yaml', 'test/golden/crs.yaml']));
    const cases = goldenCases();
    for (const { file, cr } of inputCrs()) {
      const mine = cases.filter((c) => c.cr.kind === cr.kind && c.cr.apiVersion === cr.apiVersion && c.cr.metadata.name === cr.metadata.name);
      // A CR of a kind no kinds file (nor the sample) serves would be missing from the golden unseen.
      expect([file, cr.metadata.name, mine.length > 0]).toEqual([file, cr.metadata.name, true]);
      for (const c of mine) {
        const app = `${c.source}: ${cr.kind} default/${cr.metadata.name}`;
        const deployment = find(golden.objects, app, 'Deployment') as Deployment | undefined;
        expect([app, deployment?.metadata.name, deployment?.spec.replicas, deployment?.spec.template.spec.containers[0]?.image]).toEqual([
          app,
          `${cr.metadata.name}-deployment`,
          cr.spec?.size ?? 1,
          cr.spec?.image ?? c.kind.image,
        ]);
        expect([app, find(golden.objects, app, 'Service')?.metadata.name]).toEqual([app, `${cr.metadata.name}-svc`]);
      }
    }
  });

  test("holds the walkthrough's sample as npx cdk8s synth renders it: example-echoflask, 3 pods, a NodePort Service", () => {
    const app = 'the sample kind: EchoFlask example-echoflask';
    const deployment = find(golden.objects, app, 'Deployment') as Deployment | undefined;
    expect(deployment?.metadata).toEqual(expect.objectContaining({ name: 'example-echoflask-deployment' }));
    expect(deployment?.metadata.namespace).toBeUndefined();
    expect(deployment?.spec.replicas).toBe(3);
    expect(deployment?.spec.template.spec.containers[0]?.image).toBe(SAMPLE_KIND.image);
    expect(find(golden.objects, app, 'Service')).toEqual(expect.objectContaining({ metadata: expect.objectContaining({ name: 'example-echoflask-svc' }), spec: expect.objectContaining({ type: 'NodePort' }) }));
  });

  test('uses every setting of the kinds schema, every override and every field of a CR spec', () => {
    // A setting no golden kind uses could change what it renders unseen: add it to test/golden/kinds.yaml.
    const kinds = [...new Set(goldenCases().map((c) => c.kind))];
    const overrides = (CONFIG_SCHEMA.definitions as Record<string, { properties: Record<string, unknown> }>).overrides!.properties;
    expect(Object.keys(KIND_PROPERTIES).filter((k) => !kinds.some((kind) => k in kind))).toEqual([]);
    expect(Object.keys(overrides).filter((k) => !kinds.some((kind) => kind.overrides && k in kind.overrides))).toEqual([]);
    // A record of every AppSpec key, so a new field fails to compile until it is listed here.
    const spec: Record<keyof AppSpec, true> = { size: true, image: true, port: true, nodePort: true, args: true, env: true, envFrom: true, resources: true, serviceAccountName: true, podDisruptionBudget: true };
    expect((Object.keys(spec) as (keyof AppSpec)[]).filter((f) => !inputCrs().some(({ cr }) => cr.spec && f in cr.spec))).toEqual([]);
  });

  test("lists each app's pod template fingerprint, as its Deployment's spec.template gives it", () => {
    expect(golden.hashes).toEqual(templateHashes(golden.objects));
    expect(golden.hashes.size).toBe(golden.objects.filter((o) => o.object.kind === 'Deployment').length);
  });

  test("the operator's change detection sees no difference between the golden and what it renders now", () => {
    // drift() is what a reconcile asks of a live object before it writes: golden objects in the cluster get no write.
    const rendered = new Map(now.map((o) => [objectKey(o), o.object]));
    const drifted = golden.objects.map((o) => [objectKey(o), drift(rendered.get(objectKey(o))!, o.object) ?? null]).filter(([, d]) => d !== null);
    expect(drifted).toEqual([]);
    expect(golden.objects.length).toBe(now.length);
  });
});

describe('a difference from the golden', () => {
  const app = 'examples/real-apps.yaml: FlaskApp default/shop';
  const base = now.find((o) => o.app === app && o.object.kind === 'Deployment')!;
  const changed = (edit: (d: Deployment) => void): GoldenObject[] => {
    const copy = structuredClone(base.object) as Deployment;
    edit(copy);
    return now.map((o) => (o === base ? { app, object: copy } : o));
  };

  test('in the pod template names the app, the object and the field, says it rolls the pods, and changes the fingerprint', () => {
    const edited = changed((d) => d.spec.template.spec.containers[0]!.env!.push({ name: 'ADDED', value: '1' }));
    expect(goldenDifferences(now, edited)).toEqual([
      `${app} -> Deployment shop-deployment (rolls its pods):\n    spec.template.spec.containers[0].env[3]: absent -> {"name":"ADDED","value":"1"}`,
    ]);
    expect(templateHashes(edited).get(app)).not.toBe(templateHash(base.object));
    expect(drift(edited.find((o) => o.app === app && o.object.kind === 'Deployment')!.object, base.object)).toBe('spec.template.spec.containers[0].env');
  });

  test('outside the pod template names the field and does not say it rolls', () => {
    expect(goldenDifferences(now, changed((d) => (d.spec.replicas = 4)))).toEqual([`${app} -> Deployment shop-deployment:\n    spec.replicas: 1 -> 4`]);
  });

  test('of objects says which the operator would prune and which it would create', () => {
    const service = now.find((o) => o.app === app && o.object.kind === 'Service')!;
    const renamed = now.map((o) => (o === service ? { app, object: { ...service.object, metadata: { ...service.object.metadata, name: 'shop-other' } } } : o));
    expect(goldenDifferences(now, renamed)).toEqual([
      `${app} -> Service shop-svc: no longer rendered (the operator would prune it)`,
      `${app} -> Service shop-other: new (the operator would create it)`,
    ]);
  });
});
