import { describe, expect, it } from '@jest/globals';
import { heldByOther } from '../../operator/runtime/leader.js';

describe('heldByOther', () => {
  const now = Date.parse('2025-01-01T00:00:10Z');
  const renewed = (secondsAgo: number) => now - secondsAgo * 1000;

  it('treats a lease renewed by someone else within its duration as held', () => {
    expect(heldByOther({ holderIdentity: 'b', renewTimeMs: renewed(5), leaseDurationSeconds: 15 }, 'a', now, 15)).toBe(true);
  });

  it('treats an expired lease (renewTime + duration in the past) as free', () => {
    expect(heldByOther({ holderIdentity: 'b', renewTimeMs: renewed(16), leaseDurationSeconds: 15 }, 'a', now, 15)).toBe(false);
  });

  it('uses the lease duration written in the Lease, falling back to ours', () => {
    expect(heldByOther({ holderIdentity: 'b', renewTimeMs: renewed(5), leaseDurationSeconds: 1 }, 'a', now, 15)).toBe(false);
    expect(heldByOther({ holderIdentity: 'b', renewTimeMs: renewed(5) }, 'a', now, 15)).toBe(true);
  });

  it('treats a released lease (no holder), a lease without renew time, and our own lease as not held by another', () => {
    expect(heldByOther({ holderIdentity: '', renewTimeMs: renewed(0), leaseDurationSeconds: 15 }, 'a', now, 15)).toBe(false);
    expect(heldByOther({ renewTimeMs: renewed(0) }, 'a', now, 15)).toBe(false);
    expect(heldByOther({ holderIdentity: 'b', leaseDurationSeconds: 15 }, 'a', now, 15)).toBe(false);
    expect(heldByOther({ holderIdentity: 'a', renewTimeMs: renewed(0), leaseDurationSeconds: 15 }, 'a', now, 15)).toBe(false);
  });
});
