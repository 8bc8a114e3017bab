import { describe, expect, test } from '@jest/globals';
import { OwnStatusWrites } from '../../operator/controller/own-status-writes.js';

const answer = (resourceVersion: string) => ({ metadata: { resourceVersion }, status: { observedGeneration: 1, nodes: ['node-a'] } });

describe('OwnStatusWrites', () => {
  test('the versions our writes produced are ours; another version, or a key never written, is not', () => {
    const own = new OwnStatusWrites();
    expect(own.isOwn('K/ns/a', '5')).toBe(false);
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('7'));
    expect(own.isOwn('K/ns/a', '7')).toBe(true);
    expect(own.isOwn('K/ns/a', '8')).toBe(false);
    expect(own.isOwn('K/ns/b', '7')).toBe(false);
  });

  test("an earlier write's version stays ours after a later write's answer (its watch event may come after it)", () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('7'));
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('9'));
    expect(own.isOwn('K/ns/a', '7')).toBe(true);
    expect(own.isOwn('K/ns/a', '9')).toBe(true);
    expect(own.isOwn('K/ns/a', '8')).toBe(false);
  });

  test('while a write is in flight its watch event (which may come before the answer) counts as ours', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a', '5');
    expect(own.isOwn('K/ns/a', '9')).toBe(true);
  });

  test('a failed write, or a forgotten key, leaves nothing new counted as ours', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', undefined);
    expect(own.isOwn('K/ns/a', '9')).toBe(false);
    expect(own.statusAhead('K/ns/a', '5')).toBeUndefined();
    own.writing('K/ns/b', '1');
    own.wrote('K/ns/b', answer('3'));
    own.forget('K/ns/b');
    expect(own.isOwn('K/ns/b', '3')).toBe(false);
    expect(own.statusAhead('K/ns/b', '1')).toBeUndefined();
  });

  test('the status written stands in for the cache while the cache still holds the version it was based on, not after', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('7'));
    expect(own.statusAhead('K/ns/a', '5')).toEqual(answer('7').status);
    // The cache showed the write (or anything after it): the cache is the truth again, for good.
    expect(own.statusAhead('K/ns/a', '7')).toBeUndefined();
    expect(own.statusAhead('K/ns/a', '5')).toBeUndefined();
  });

  test('two writes back to back: the second stands in while the cache shows only the first', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('7'));
    // The next write is based on the cache's version, still 5 (the first write standing in for it).
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('9'));
    expect(own.statusAhead('K/ns/a', '5')).toEqual(answer('9').status);
    // The cache shows the first write: the second still stands in (else it would be written again).
    expect(own.statusAhead('K/ns/a', '7')).toEqual(answer('9').status);
    expect(own.statusAhead('K/ns/a', '9')).toBeUndefined();
    expect(own.statusAhead('K/ns/a', '7')).toBeUndefined();
  });

  test('someone else\'s write after ours: the cache is the truth', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('7'));
    expect(own.statusAhead('K/ns/a', '8')).toBeUndefined();
    expect(own.statusAhead('K/ns/a', '5')).toBeUndefined();
  });

  test('a write that changed nothing (the same resourceVersion back) stands in for nothing', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a', '5');
    own.wrote('K/ns/a', answer('5'));
    expect(own.statusAhead('K/ns/a', '5')).toBeUndefined();
  });
});
