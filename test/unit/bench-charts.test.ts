import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { charts, svg } from '../../bench/charts.js';
import type { BenchResults } from '../../bench/results.js';

const results = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'bench', 'results.json'), 'utf8')) as BenchResults;
/** The values a chart plots, from the tooltips of its points: `label, N=n: value`. */
const points = (text: string) => [...text.matchAll(/<title>([^<]+), N=(\d+): ([\d.]+)<\/title>/g)].map((m) => [m[1], Number(m[2]), Number(m[3])]);

describe('bench charts', () => {
  it('plots each ratio to the floor at every N that has it: the median of the repetitions, ours and Go', () => {
    const plotted = points(charts(results)['benchmark-ratios.svg']!);
    for (const run of results.runs) {
      expect(plotted).toContainEqual(['create: ours', run.n, run.medians?.create.median ?? run.ratios.create]);
      const go = run.medians?.go?.scale.median ?? run.ratios.go?.scale;
      if (go !== undefined) expect(plotted).toContainEqual(['scale +1: Go', run.n, go]);
      else expect(plotted.some(([label, n]) => label === 'scale +1: Go' && n === run.n)).toBe(false);
    }
  });

  it('plots writes per app and RSS from the runs that recorded them', () => {
    const c = charts(results);
    const withWrites = results.runs.filter((r) => r.operator.writesPerApp);
    expect(points(c['benchmark-writes.svg']!).filter(([label]) => label === 'create: ours')).toEqual(withWrites.map((r) => ['create: ours', r.n, r.operator.writesPerApp!.create]));
    expect(points(c['benchmark-rss.svg']!).filter(([label]) => label === 'ours: peak')).toEqual(results.runs.map((r) => ['ours: peak', r.n, r.operator.rssMiB.peak]));
  });

  it('plots the cost per app over create and scale for each client a run has: kube-apiserver CPU, operator CPU, wall time', () => {
    const c = charts(results);
    const cpu = points(c['benchmark-per-app-cpu.svg']!);
    const time = points(c['benchmark-per-app-time.svg']!);
    const ms = (seconds: number, n: number) => Math.round(((seconds * 1000) / n) * 100) / 100;
    for (const r of results.runs) {
      expect(cpu).toContainEqual(['kube-apiserver: floor', r.n, ms(r.floor.apiserverCpuSeconds, r.n)]);
      expect(cpu).toContainEqual(['operator: ours', r.n, ms(r.operator.cpuSeconds, r.n)]);
      expect(time).toContainEqual(['ours', r.n, ms(r.operator.createSeconds + r.operator.scaleSeconds, r.n)]);
      expect(cpu.some(([label, n]) => label === 'kube-apiserver: CR floor' && n === r.n)).toBe(r.crFloor !== undefined);
      expect(time.some(([label, n]) => label === 'Go' && n === r.n)).toBe(r.goOperator !== undefined);
    }
  });

  it('draws larger values higher, N left to right, and keeps every point inside the plot', () => {
    const text = svg({ title: 't', yLabel: 'y', series: [{ label: 's', color: 'red', points: [[100, 1], [1000, 3], [2500, 345]] }] });
    const circles = [...text.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(circles).toHaveLength(3);
    expect(circles[0]![0]).toBeLessThan(circles[1]![0]!);
    expect(circles[1]![1]).toBeLessThan(circles[0]![1]!);
    for (const [, cy] of circles) expect(cy).toBeGreaterThanOrEqual(34);
  });
});
