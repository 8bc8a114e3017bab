// The benchmark's growth figures as SVG line charts against N, drawn from bench/results.json beside the
// tables of docs/benchmark.md (writeResults writes both; `npm run bench:report` redraws both from the file).
import type { BenchResults, BenchRun } from './results.js';

export interface Series {
  readonly label: string;
  readonly color: string;
  readonly dashed?: boolean;
  /** [N, value]; an N without a value is left out. */
  readonly points: [number, number][];
}

export interface Chart {
  readonly title: string;
  readonly yLabel: string;
  readonly series: Series[];
  /** A horizontal reference line (the floor's ratio, 1). */
  readonly reference?: { readonly y: number; readonly label: string };
}

const W = 640;
const H = 340;
const M = { left: 56, right: 190, top: 34, bottom: 44 };
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v: number) => String(Math.round(v * 100) / 100);
const px = (v: number) => Math.round(v * 100) / 100;

/** A few round ticks from at most the least value to at least the greatest. */
function ticks(min: number, max: number): number[] {
  const span = max - min || 1;
  const step = [0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500].find((s) => span / s <= 6) ?? 1000;
  const out: number[] = [];
  for (let v = Math.floor(min / step) * step; ; v += step) {
    out.push(Math.round(v * 1000) / 1000);
    if (v >= max) return out;
  }
}

/** One line chart: x is N on a log scale (the N run, from 100 up), y linear from the least tick. */
export function svg(chart: Chart): string {
  const pts = chart.series.flatMap((s) => s.points);
  const ns = [...new Set(pts.map(([n]) => n))].sort((a, b) => a - b);
  const values = [...pts.map(([, v]) => v), ...(chart.reference ? [chart.reference.y] : [])];
  const yTicks = ticks(Math.min(0, ...values), Math.max(...values));
  const [y0, y1] = [yTicks[0]!, yTicks[yTicks.length - 1]!];
  const [lx0, lx1] = [Math.log(ns[0] ?? 1), Math.log(ns[ns.length - 1] ?? 10)];
  // Coordinates to 0.01 px: the files stay short and a redraw from the same results.json is byte-identical.
  const x = (n: number) => px(M.left + (lx1 === lx0 ? 0.5 : (Math.log(n) - lx0) / (lx1 - lx0)) * (W - M.left - M.right));
  const y = (v: number) => px(H - M.bottom - ((v - y0) / (y1 - y0 || 1)) * (H - M.top - M.bottom));
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${M.left}" y="20" font-size="14" font-weight="bold">${esc(chart.title)}</text>`,
    ...yTicks.map((t) => `<line x1="${M.left}" x2="${W - M.right}" y1="${y(t)}" y2="${y(t)}" stroke="#ddd"/><text x="${M.left - 6}" y="${y(t) + 4}" text-anchor="end">${fmt(t)}</text>`),
    ...ns.map((n) => `<text x="${x(n)}" y="${H - M.bottom + 16}" text-anchor="middle">${n}</text>`),
    `<text x="${(M.left + W - M.right) / 2}" y="${H - 8}" text-anchor="middle">N (CRs; log scale)</text>`,
    `<text transform="translate(14 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(chart.yLabel)}</text>`,
    `<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#444"/>`,
  ];
  if (chart.reference) {
    const r = chart.reference;
    out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${y(r.y)}" y2="${y(r.y)}" stroke="#444" stroke-dasharray="2 3"/><text x="${W - M.right - 4}" y="${y(r.y) - 4}" text-anchor="end">${esc(r.label)}</text>`);
  }
  chart.series.forEach((s, i) => {
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    if (s.points.length > 1) out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${dash} points="${s.points.map(([n, v]) => `${x(n)},${y(v)}`).join(' ')}"/>`);
    out.push(...s.points.map(([n, v]) => `<circle cx="${x(n)}" cy="${y(v)}" r="3" fill="${s.color}"><title>${esc(s.label)}, N=${n}: ${fmt(v)}</title></circle>`));
    const ly = M.top + 8 + i * 18;
    out.push(`<line x1="${W - M.right + 12}" x2="${W - M.right + 36}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/><text x="${W - M.right + 42}" y="${ly + 4}">${esc(s.label)}</text>`);
  });
  out.push('</svg>', '');
  return out.join('\n');
}

/** [N, value] of every run that has the value. */
const over = (runs: BenchRun[], pick: (r: BenchRun) => number | undefined): [number, number][] =>
  runs.flatMap((r) => {
    const v = pick(r);
    return v === undefined ? [] : [[r.n, v] as [number, number]];
  });

type Ratio = 'create' | 'scale' | 'apiserverCpu';
/** A ratio as the tables give it: the median over the repetitions, else the run's own. */
const ratio = (r: BenchRun, name: Ratio, go = false) =>
  go ? (r.medians?.go?.[name]?.median ?? r.ratios.go?.[name]) : (r.medians?.[name]?.median ?? r.ratios[name]);

const BLUE = '#1f77b4';
const ORANGE = '#ff7f0e';
const GREEN = '#2ca02c';
const GREY = '#7f7f7f';

/** docs/benchmark-*.svg: file name -> SVG. */
export function charts(results: BenchResults): Record<string, string> {
  const runs = [...results.runs].sort((a, b) => a.n - b.n);
  const ratios: Series[] = (
    [
      ['create', BLUE],
      ['scale', ORANGE],
      ['apiserverCpu', GREEN],
    ] as const
  ).flatMap(([name, color]) => {
    const label = name === 'apiserverCpu' ? 'apiserver CPU' : name === 'scale' ? 'scale +1' : 'create';
    return [
      { label: `${label}: ours`, color, points: over(runs, (r) => ratio(r, name)) },
      { label: `${label}: Go`, color, dashed: true, points: over(runs, (r) => ratio(r, name, true)) },
    ];
  });
  const writes = (who: 'floor' | 'operator' | 'goOperator', phase: 'create' | 'scale') => over(runs, (r) => r[who]?.writesPerApp?.[phase]);
  type Who = 'floor' | 'crFloor' | 'operator' | 'goOperator';
  /** Per app, over create and scale: ms of kube-apiserver CPU, of the operator's CPU, and of wall time. */
  const perApp = (who: Who, pick: (run: { createSeconds: number; scaleSeconds: number; apiserverCpuSeconds: number; cpuSeconds?: number }) => number | undefined) =>
    over(runs, (r) => {
      const run = r[who];
      const v = run ? pick(run) : undefined;
      return v === undefined ? undefined : px((v * 1000) / r.n);
    });
  const wall = (run: { createSeconds: number; scaleSeconds: number }) => run.createSeconds + run.scaleSeconds;
  return {
    'benchmark-ratios.svg': svg({
      title: 'Time and API server CPU against the floor',
      yLabel: 'ratio to the floor (median of repetitions)',
      reference: { y: 1, label: 'the floor' },
      series: ratios.filter((s) => s.points.length > 0),
    }),
    'benchmark-writes.svg': svg({
      title: 'Writes to the API server per app, every client',
      yLabel: 'writes per app',
      series: [
        { label: 'create: floor', color: GREY, points: writes('floor', 'create') },
        { label: 'create: ours', color: BLUE, points: writes('operator', 'create') },
        { label: 'create: Go', color: GREEN, points: writes('goOperator', 'create') },
        { label: 'scale +1: floor', color: GREY, dashed: true, points: writes('floor', 'scale') },
        { label: 'scale +1: ours', color: BLUE, dashed: true, points: writes('operator', 'scale') },
        { label: 'scale +1: Go', color: GREEN, dashed: true, points: writes('goOperator', 'scale') },
      ].filter((s) => s.points.length > 0),
    }),
    'benchmark-per-app-cpu.svg': svg({
      title: 'CPU per app, create and scale',
      yLabel: 'ms of CPU per app',
      series: [
        { label: 'kube-apiserver: floor', color: GREY, points: perApp('floor', (x) => x.apiserverCpuSeconds) },
        { label: 'kube-apiserver: CR floor', color: ORANGE, points: perApp('crFloor', (x) => x.apiserverCpuSeconds) },
        { label: 'kube-apiserver: ours', color: BLUE, points: perApp('operator', (x) => x.apiserverCpuSeconds) },
        { label: 'kube-apiserver: Go', color: GREEN, points: perApp('goOperator', (x) => x.apiserverCpuSeconds) },
        { label: 'operator: ours', color: BLUE, dashed: true, points: perApp('operator', (x) => x.cpuSeconds) },
        { label: 'operator: Go', color: GREEN, dashed: true, points: perApp('goOperator', (x) => x.cpuSeconds) },
      ].filter((s) => s.points.length > 0),
    }),
    'benchmark-per-app-time.svg': svg({
      title: 'Wall time per app, create and scale',
      yLabel: 'ms per app (2 cores)',
      series: [
        { label: 'floor', color: GREY, points: perApp('floor', wall) },
        { label: 'CR floor', color: ORANGE, points: perApp('crFloor', wall) },
        { label: 'ours', color: BLUE, points: perApp('operator', wall) },
        { label: 'Go', color: GREEN, points: perApp('goOperator', wall) },
      ].filter((s) => s.points.length > 0),
    }),
    'benchmark-rss.svg': svg({
      title: 'Operator memory (RSS) against N',
      yLabel: 'MiB',
      series: [
        { label: 'ours: peak', color: BLUE, points: over(runs, (r) => r.operator.rssMiB.peak) },
        { label: 'ours: idle', color: BLUE, dashed: true, points: over(runs, (r) => r.operator.rssMiB.idle) },
        { label: 'Go: peak', color: GREEN, points: over(runs, (r) => r.goOperator?.rssMiB.peak) },
        { label: 'Go: idle', color: GREEN, dashed: true, points: over(runs, (r) => r.goOperator?.rssMiB.idle) },
      ].filter((s) => s.points.length > 0),
    }),
  };
}
