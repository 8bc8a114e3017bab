import { describe, expect, it } from '@jest/globals';
import { LeaseObservation, LeaseRecord } from '../../operator/runtime/leader.js';

/** A monotonic clock stand-in the test moves by hand. */
function manualClock(startMs = 1_000) {
  let now = startMs;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

/** Another holder's record as its renewals write it, with renewTime from its own (maybe skewed) clock. */
function renewedBy(holder: string, renewTime: string, leaseDurationSeconds = 15): LeaseRecord {
  return { holderIdentity: holder, leaseDurationSeconds, acquireTime: '2025-01-01T00:00:00.000000Z', renewTime, leaseTransitions: 3 };
}

// The same instant as this host sees it, and as a holder whose clock runs an hour behind or ahead writes it.
const SKEWS: Record<string, string> = {
  'in sync': '2025-01-01T12:00:00.000000Z',
  'an hour behind': '2025-01-01T11:00:00.000000Z',
  'an hour ahead': '2025-01-01T13:00:00.000000Z',
  'a year ahead': '2026-01-01T12:00:00.000000Z',
};

describe('LeaseObservation (client-go: expiry from when this process saw the record change)', () => {
  for (const [skew, renewTime] of Object.entries(SKEWS)) {
    it(`another holder whose clock is ${skew}: held for its lease duration after the record was seen, free after`, () => {
      const clock = manualClock();
      const seen = new LeaseObservation(clock.now);
      seen.observe(renewedBy('b', renewTime));
      expect(seen.heldByOther('a', 15)).toBe(true);
      clock.advance(14_999);
      seen.observe(renewedBy('b', renewTime)); // read again, unchanged: the holder did not renew
      expect(seen.heldByOther('a', 15)).toBe(true);
      clock.advance(1);
      expect(seen.heldByOther('a', 15)).toBe(false);
    });

    it(`another holder whose clock is ${skew} keeps the lease as long as its record keeps changing`, () => {
      const clock = manualClock();
      const seen = new LeaseObservation(clock.now);
      const base = Date.parse(renewTime);
      for (let i = 0; i < 10; i++) {
        // Each renewal 10 s after the last (within the 15 s duration), stamped by the holder's clock.
        seen.observe(renewedBy('b', new Date(base + i * 10_000).toISOString()));
        clock.advance(10_000);
        expect(seen.heldByOther('a', 15)).toBe(true);
      }
    });
  }

  it('a change of the holder, the duration or the transitions restarts the time; only an unchanged record expires', () => {
    const clock = manualClock();
    const seen = new LeaseObservation(clock.now);
    seen.observe(renewedBy('b', SKEWS['in sync']!, 10));
    clock.advance(9_000);
    seen.observe({ ...renewedBy('c', SKEWS['in sync']!, 10) }); // a new holder, same stamps
    clock.advance(9_000);
    expect(seen.holder).toBe('c');
    expect(seen.heldByOther('a', 15)).toBe(true);
    seen.observe({ ...renewedBy('c', SKEWS['in sync']!, 10), leaseTransitions: 4 });
    clock.advance(9_999);
    expect(seen.heldByOther('a', 15)).toBe(true);
    clock.advance(1);
    expect(seen.heldByOther('a', 15)).toBe(false);
  });

  it("uses the record's lease duration, the candidate's own only when the record has none", () => {
    const clock = manualClock();
    const seen = new LeaseObservation(clock.now);
    seen.observe(renewedBy('b', SKEWS['in sync']!, 1));
    clock.advance(1_000);
    expect(seen.heldByOther('a', 15)).toBe(false);
    seen.observe({ holderIdentity: 'b', renewTime: SKEWS['in sync'] });
    clock.advance(14_999);
    expect(seen.heldByOther('a', 15)).toBe(true);
    clock.advance(1);
    expect(seen.heldByOther('a', 15)).toBe(false);
  });

  it('a released Lease (no holder), our own, or one never read is not held by another', () => {
    const clock = manualClock();
    const seen = new LeaseObservation(clock.now);
    expect(seen.heldByOther('a', 15)).toBe(false);
    seen.observe({ leaseDurationSeconds: 1, renewTime: SKEWS['in sync'] });
    expect(seen.heldByOther('a', 15)).toBe(false);
    seen.observe(renewedBy('a', SKEWS['an hour ahead']!));
    expect(seen.heldByOther('a', 15)).toBe(false);
  });

  it('a renewTime given as a Date (client-node parses it) and as the same string are one record', () => {
    const clock = manualClock();
    const seen = new LeaseObservation(clock.now);
    seen.observe(renewedBy('b', '2025-01-01T12:00:00.000Z'));
    clock.advance(14_000);
    seen.observe({ ...renewedBy('b', ''), renewTime: new Date('2025-01-01T12:00:00.000Z') });
    clock.advance(1_000);
    expect(seen.heldByOther('a', 15)).toBe(false);
  });
});
