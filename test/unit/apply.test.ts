import { describe, expect, test } from '@jest/globals';
import { drift, isSubset } from '../../operator/apply.js';

const desired = {
  apiVersion: 'v1', kind: 'Service', metadata: { name: 's', labels: { a: '1' } },
  spec: { type: 'NodePort', ports: [{ name: 'http', port: 5000, targetPort: 5000 }], selector: { a: '1' } },
};

describe('drift (steady state sends nothing)', () => {
  test('a live object holding every applied field plus server defaults needs no request', () => {
    const live = JSON.parse(JSON.stringify(desired));
    live.metadata = { ...live.metadata, uid: 'u', resourceVersion: '7', labels: { a: '1', extra: 'x' }, annotations: { note: 'by someone else' } };
    live.spec.ports[0] = { ...live.spec.ports[0], protocol: 'TCP', nodePort: 31000 };
    live.spec.clusterIP = '10.0.0.3';
    expect(drift(desired, live)).toBeUndefined();
  });

  test('an int-or-string targetPort returned as a string still matches', () => {
    const live = JSON.parse(JSON.stringify(desired));
    live.spec.ports[0].targetPort = '5000';
    expect(isSubset(desired, live)).toBe(true);
  });

  test('drift or absence needs an apply', () => {
    expect(drift(desired, undefined)).toBe('absent');
    const changed = JSON.parse(JSON.stringify(desired));
    changed.spec.ports[0].port = 5001;
    expect(drift(desired, changed)).toBe('spec.ports[0].port');
    const extraPort = JSON.parse(JSON.stringify(desired));
    extraPort.spec.ports.push({ port: 1 });
    expect(drift(desired, extraPort)).toBe('spec.ports');
    const lostLabel = JSON.parse(JSON.stringify(desired));
    delete lostLabel.metadata.labels.a;
    expect(drift(desired, lostLabel)).toBe('metadata.labels.a');
  });

  test('an absent live field matches a zero value, as the server omits omitempty zeros', () => {
    expect(isSubset({ spec: { minReadySeconds: 0, paused: false, note: '', list: [], map: {} } }, { spec: {} })).toBe(true);
    expect(isSubset({ spec: { minReadySeconds: 5 } }, { spec: {} })).toBe(false);
    expect(isSubset({ spec: { replicas: 0 } }, { spec: { replicas: 3 } })).toBe(false);
  });

  test('types are compared strictly apart from numbers against strings', () => {
    expect(isSubset({ a: false }, { a: 'false' })).toBe(false);
    expect(isSubset({ a: [1] }, { a: { 0: 1 } })).toBe(false);
    expect(isSubset({ a: { b: 1 } }, { a: null })).toBe(false);
  });
});
