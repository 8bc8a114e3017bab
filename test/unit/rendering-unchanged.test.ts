// Upgrading the operator must not roll out existing apps: the sample kind and the kinds of
// examples/*.yaml, none of which sets the newer settings, render byte for byte what
// __fixtures__/examples-rendered.yaml holds (written by the code before those settings existed).
import { expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { examplesRendering } from './examples-rendering.js';

test('the sample kind and the examples\' kinds render exactly what they rendered before the placement, budget and port settings', () => {
  const before = readFileSync(join(import.meta.dirname, '__fixtures__', 'examples-rendered.yaml'), 'utf8');
  const now = examplesRendering();
  // 14 CRs, a Deployment and a Service each: the comparison covers every kind of the examples.
  expect(now.match(/^# /gm)).toHaveLength(28);
  expect(now).toBe(before);
});
