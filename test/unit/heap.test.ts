import { describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { heapGrowthFlag } from '../../operator/runtime/heap.js';

describe('heapGrowthFlag', () => {
  test('sets the growing factor unless node\'s command line gives one', () => {
    expect(heapGrowthFlag([])).toBe('--heap-growing-percent=25');
    expect(heapGrowthFlag(['--max-semi-space-size=4', '--import', 'tsx'], 20)).toBe('--heap-growing-percent=20');
    expect(heapGrowthFlag(['--heap-growing-percent=80'])).toBeUndefined();
    expect(heapGrowthFlag(['--heap_growing_percent=80'])).toBeUndefined();
    expect(heapGrowthFlag(['--heap-growing-percent', '80'])).toBeUndefined();
  });

  test('V8 takes the flag at run time: garbage that outlives a young collection piles up less', () => {
    // The same allocation with and without the flag set from inside the process: a live set, then
    // rounds of objects that survive into the old generation and die a round later (as parsed watch
    // events and renders do). The most V8 committed over the run is what the peak RSS follows.
    const program = `
      const v8 = require('node:v8');
      if (process.argv[1]) v8.setFlagsFromString(process.argv[1]);
      const live = [];
      for (let i = 0; i < 200000; i++) live.push({ a: 'x' + i, b: [i] });
      let kept = [], most = 0;
      for (let round = 0; round < 60; round++) {
        const garbage = [];
        for (let i = 0; i < 20000; i++) garbage.push({ s: JSON.stringify({ i, round, t: 'y'.repeat(50) }) });
        kept = garbage;
        most = Math.max(most, v8.getHeapStatistics().total_heap_size);
      }
      process.stdout.write(String(most));`;
    const mostCommitted = (flag: string) => Number(execFileSync(process.execPath, ['--max-semi-space-size=4', '-e', program, flag], { encoding: 'utf8' }));
    // About 60 against 150-175 MiB on this machine: a factor, not a margin of noise.
    expect(mostCommitted('--heap-growing-percent=5')).toBeLessThan(0.75 * mostCommitted(''));
  });
});
