// The expectations of this process's own writes: what a reconcile compares with while the cache lags.
import { describe, expect, test } from '@jest/globals';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Expectations } from '../../operator/runtime/expectations.js';

const at = (resourceVersion: string, image = 'a'): KubernetesObject & { spec: { image: string } } => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { namespace: 'ns', name: 'web', resourceVersion },
  spec: { image },
});

describe('Expectations', () => {
  test('a created object stands in for the cache until the cache holds it', () => {
    const e = new Expectations();
    const created = at('10');
    e.expect('Deployment', created);
    expect(e.resolve('Deployment', 'ns', 'web', undefined)).toBe(created);
    const cached = at('10');
    expect(e.resolve('Deployment', 'ns', 'web', cached)).toBe(cached);
    expect(e.size).toBe(0);
  });

  test('an update stands in for an older cached version, so a reconcile meanwhile does not write it again', () => {
    const e = new Expectations();
    const applied = at('20', 'b');
    e.expect('Deployment', applied);
    expect(e.resolve('Deployment', 'ns', 'web', at('12', 'a'))).toBe(applied);
    // An event of a version older than the write (the Deployment controller's status update) leaves it.
    e.observed('Deployment', at('15', 'a'));
    expect(e.resolve('Deployment', 'ns', 'web', at('15', 'a'))).toBe(applied);
    // Its own version watched back: the cache knows it, and anything newer, from now on.
    e.observed('Deployment', at('20', 'b'));
    expect(e.size).toBe(0);
    const later = at('21', 'c');
    expect(e.resolve('Deployment', 'ns', 'web', later)).toBe(later);
  });

  test('resourceVersions compare as numbers, not as text', () => {
    const e = new Expectations();
    e.expect('Deployment', at('9'));
    const cached = at('10');
    expect(e.resolve('Deployment', 'ns', 'web', cached)).toBe(cached);
    expect(e.size).toBe(0);
  });

  test('a deletion ends the expectation, also one a relist found with the older version the cache held', () => {
    const e = new Expectations();
    e.expect('Deployment', at('20'));
    e.observed('Deployment', at('12'), true);
    expect(e.size).toBe(0);
    expect(e.resolve('Deployment', 'ns', 'web', undefined)).toBeUndefined();
  });

  test('other objects and kinds are not affected', () => {
    const e = new Expectations();
    e.expect('Deployment', at('20'));
    const service = { ...at('5'), kind: 'Service' };
    expect(e.resolve('Service', 'ns', 'web', service)).toBe(service);
    expect(e.resolve('Deployment', 'ns', 'other', undefined)).toBeUndefined();
    expect(e.size).toBe(1);
  });
});
