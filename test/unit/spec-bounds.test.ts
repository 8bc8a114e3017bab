// The operator's own check of every bound the generated CRD states, for CRs stored under
// a CRD that lacks them: what it refuses, and that it admits the boundary values.
import { describe, expect, it } from '@jest/globals';
import { AppKind, ServiceType } from 'cdk8s-appkind';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { AppResource } from '../../operator/kinds/render.js';
import { specBoundsFailure } from '../../operator/controller/policy.js';

const cr = (spec: unknown, name = 'app'): AppResource =>
  ({ apiVersion: 'swallowlab.com/v1alpha1', kind: 'EchoFlask', metadata: { name, namespace: 'ns' }, spec }) as AppResource;
const failure = (spec: unknown, kind: AppKind = SAMPLE_KIND, name?: string) => specBoundsFailure(kind, cr(spec, name));

describe('specBoundsFailure', () => {
  it('admits the bounds themselves and a spec left out', () => {
    expect(failure({ size: 100, port: 65535, nodePort: 32767, image: 'takeyan/flask:0.0.3' })).toBeUndefined();
    expect(failure({ size: 0, port: 1, nodePort: 30000 })).toBeUndefined();
    expect(failure(undefined)).toBeUndefined();
    expect(failure({ size: 7 }, { ...SAMPLE_KIND, maxSize: 7 })).toBeUndefined();
  });

  it("refuses spec.size above the kind's maximum, negative or fractional, with InvalidSpec", () => {
    expect(failure({ size: 101 })).toMatchObject({ reason: 'InvalidSpec', message: expect.stringContaining('spec.size 101 is not an integer from 0 to 100') });
    expect(failure({ size: 8 }, { ...SAMPLE_KIND, maxSize: 7 })?.message).toContain('from 0 to 7');
    expect(failure({ size: -1 })?.reason).toBe('InvalidSpec');
    expect(failure({ size: 1.5 })?.reason).toBe('InvalidSpec');
    expect(failure({ size: '3' })?.reason).toBe('InvalidSpec');
  });

  it('refuses ports and NodePorts out of range, a NodePort only where the kind has one', () => {
    expect(failure({ port: 0 })?.message).toContain('spec.port 0');
    expect(failure({ port: 65536 })?.message).toContain('spec.port 65536');
    expect(failure({ nodePort: 29999 })?.message).toContain('spec.nodePort 29999');
    expect(failure({ nodePort: 32768 })?.message).toContain('spec.nodePort 32768');
    expect(failure({ nodePort: 8080 }, { ...SAMPLE_KIND, serviceType: ServiceType.CLUSTER_IP })).toBeUndefined();
  });

  it('refuses an image with white space, empty or too long; a spec that is not an object; a name the children cannot take', () => {
    expect(failure({ image: 'a b' })?.message).toContain('spec.image');
    expect(failure({ image: '' })?.message).toContain('spec.image');
    expect(failure({ image: 'x'.repeat(513) })?.message).toContain('spec.image');
    expect(failure('three')?.message).toContain('spec is a string, not an object');
    expect(failure([1])?.message).toContain('spec is a list');
    expect(failure({}, SAMPLE_KIND, 'a.b')?.message).toContain('metadata.name "a.b"');
    expect(failure({}, SAMPLE_KIND, 'a'.repeat(60))?.message).toContain('metadata.name');
  });

  it('names every problem at once', () => {
    expect(failure({ size: 1000, port: 0 })?.message).toMatch(/spec\.size 1000 .*; spec\.port 0/);
  });
});
