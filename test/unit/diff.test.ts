import { describe, expect, test } from '@jest/globals';
import { appliedFieldsOf, drift, FieldSet, firstReleased, isSubset, withOmittedZeros } from '../../operator/controller/diff.js';
import { SharedFieldSets, withOwnManagedFields } from '../../operator/runtime/cache.js';

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

describe('firstReleased (fields we own that render() stopped giving)', () => {
  // What the API server records for an apply of `desired` with a fixed nodePort (protocol defaulted into the key).
  const owned = {
    'f:metadata': { 'f:labels': { 'f:a': {} } },
    'f:spec': {
      'f:type': {},
      'f:ports': { 'k:{"port":5000,"protocol":"TCP"}': { '.': {}, 'f:name': {}, 'f:port': {}, 'f:targetPort': {}, 'f:nodePort': {} } },
      'f:selector': {},
    },
  };

  test('every owned field still rendered: nothing to release', () => {
    const withPort = JSON.parse(JSON.stringify(desired));
    withPort.spec.ports[0].nodePort = 31000;
    expect(firstReleased(owned, withPort)).toBeUndefined();
  });

  test('a nodePort no longer rendered is named by its path in the keyed list', () => {
    expect(firstReleased(owned, desired)).toBe('spec.ports[k:{"port":5000,"protocol":"TCP"}].nodePort');
  });

  test('a label no longer rendered, and a list element whose key changed', () => {
    const noLabel = { ...desired, metadata: { name: 's' } };
    expect(firstReleased(owned, noLabel)).toBe('metadata.labels');
    const otherPort = JSON.parse(JSON.stringify(desired));
    otherPort.spec.ports[0].port = 8080;
    expect(firstReleased(owned, otherPort)).toBe('spec.ports[k:{"port":5000,"protocol":"TCP"}]');
  });

  test('set entries (v:) and the entry of our manager only', () => {
    expect(firstReleased({ 'f:args': { 'v:"--a"': {} } }, { args: ['--a', '--b'] })).toBeUndefined();
    expect(firstReleased({ 'f:args': { 'v:"--c"': {} } }, { args: ['--a'] })).toBe('args[v:"--c"]');
    const live = { metadata: { managedFields: [
      { manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } },
      { manager: 'appkind-operator', operation: 'Apply', fieldsV1: owned },
    ] } };
    expect(appliedFieldsOf(live, 'appkind-operator')).toBe(owned);
    expect(appliedFieldsOf(live, 'someone')).toBeUndefined();
  });

  test('the cache keeps only our apply entry of managedFields', () => {
    const obj = { metadata: { name: 'x', managedFields: [
      { manager: 'kube-controller-manager', operation: 'Update', fieldsV1: { 'f:status': {} }, time: new Date() },
      { manager: 'appkind-operator', operation: 'Apply', fieldsV1: owned, time: new Date() },
    ] } };
    expect(withOwnManagedFields('appkind-operator')(obj).metadata.managedFields).toEqual([{ manager: 'appkind-operator', operation: 'Apply', fieldsV1: owned }]);
    expect(withOwnManagedFields('other')(obj).metadata.managedFields).toBeUndefined();
  });

  test("the cache shares our field set's parts of the same content across objects, frozen; a part of one object's only passes through", () => {
    const trim = withOwnManagedFields('appkind-operator');
    const fieldsOf = (uid: string) => ({
      'f:metadata': { 'f:ownerReferences': { [`k:{"uid":"${uid}"}`]: {} } },
      'f:spec': { 'f:replicas': {}, 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { 'f:image': {} } } } } },
    });
    const cached = (uid: string) => {
      const obj = { metadata: { name: uid, managedFields: [{ manager: 'appkind-operator', operation: 'Apply', fieldsV1: fieldsOf(uid) }] } };
      return appliedFieldsOf(trim(obj), 'appkind-operator')!;
    };
    const [a, b] = [cached('u1'), cached('u2')];
    expect(a).toEqual(fieldsOf('u1'));
    expect(b).toEqual(fieldsOf('u2'));
    expect(b['f:spec']).toBe(a['f:spec']);
    expect(b['f:metadata']).not.toBe(a['f:metadata']);
    expect(Object.isFrozen(a) && Object.isFrozen(a['f:spec']!['f:template'])).toBe(true);
    // What the reconciler reads of it is unchanged: a field no longer rendered is still found.
    expect(firstReleased(a, { metadata: { ownerReferences: [{ uid: 'u1' }] }, spec: { replicas: 1 } })).toBe('spec.template');

    const parts = new SharedFieldSets(2);
    const first = parts.of({ 'f:spec': { 'f:a': {} } }) as FieldSet;
    parts.of({ 'f:spec': { 'f:b': {} }, 'f:metadata': { 'f:c': {} } });
    expect(parts.size).toBe(2);
    // The oldest part was let go: the same content met again is a new copy, kept from then on.
    const again = parts.of({ 'f:spec': { 'f:a': {} } }) as FieldSet;
    expect(again['f:spec']).toEqual(first['f:spec']);
    expect(again['f:spec']).not.toBe(first['f:spec']);
    expect((parts.of({ 'f:spec': { 'f:a': {} } }) as FieldSet)['f:spec']).toBe(again['f:spec']);
  });
});

describe('withOmittedZeros', () => {
  test("the live value, with the zero values the desired sets that the server omitted; the desired's other values never", () => {
    const desired = { spec: { hostNetwork: false, containers: [{ name: 'a', image: 'new:2' }], readinessProbe: { tcpSocket: { port: 80 } } } };
    const live = { spec: { containers: [{ name: 'a', image: 'old:1', terminationMessagePath: '/dev/termination-log' }], dnsPolicy: 'ClusterFirst' } };
    expect(withOmittedZeros(desired, live)).toEqual({
      spec: { hostNetwork: false, containers: [{ name: 'a', image: 'old:1', terminationMessagePath: '/dev/termination-log' }], dnsPolicy: 'ClusterFirst' },
    });
  });
});
