import { describe, expect, test } from '@jest/globals';
import { OwnStatusWrites } from '../../operator/controller/own-status-writes.js';

describe('OwnStatusWrites', () => {
  test('the version our last write produced is ours; another version, or a key never written, is not', () => {
    const own = new OwnStatusWrites();
    expect(own.isOwn('K/ns/a', '5')).toBe(false);
    own.writing('K/ns/a');
    own.wrote('K/ns/a', '7');
    expect(own.isOwn('K/ns/a', '7')).toBe(true);
    expect(own.isOwn('K/ns/a', '8')).toBe(false);
    expect(own.isOwn('K/ns/b', '7')).toBe(false);
  });

  test('while a write is in flight its watch event (which may come before the answer) counts as ours', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a');
    expect(own.isOwn('K/ns/a', '9')).toBe(true);
  });

  test('a failed write, or a forgotten key, leaves nothing counted as ours', () => {
    const own = new OwnStatusWrites();
    own.writing('K/ns/a');
    own.wrote('K/ns/a', undefined);
    expect(own.isOwn('K/ns/a', '9')).toBe(false);
    own.writing('K/ns/b');
    own.wrote('K/ns/b', '3');
    own.forget('K/ns/b');
    expect(own.isOwn('K/ns/b', '3')).toBe(false);
  });
});
