import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '../../tools/controlplane/audit.js';
import { median, mediansOf, REPORT_END, REPORT_START, repetitionOf, table, writeResults, writesPerApp } from '../../bench/report.js';
import type { BenchResults, BenchRun } from '../../bench/results.js';

/** A bench run of N=1000 whose operator took `scale` times the floor's 20 s to scale. */
function run(date: string, scale: number, apiserverCpu: number): BenchRun {
  const floor = { createSeconds: 40, scaleSeconds: 20, apiserverCpuSeconds: 60, requests: { create: { 'patch deployments': 1000 }, scale: { 'patch deployments': 1000 } } };
  return {
    n: 1000, date, command: 'npm run bench -- --repeat 3', commit: 'abc1234',
    settings: { size: 2, concurrency: 4, edits: 200, steadySeconds: 60, repeat: 3, operator: { workers: 8, statusIntervalMs: 60000 } },
    loadAverage: { start: [0.5, 0.6, 0.7], after: [2, 2, 2] },
    floor,
    operator: {
      ...floor, scaleSeconds: 20 * scale, apiserverCpuSeconds: 60 * apiserverCpu, cpuSeconds: 8, cpuTotalSeconds: 10,
      rssMiB: { idle: 150, afterRun: 170, peak: 300 }, editLatencyMs: { count: 200, p50: 20, p90: 40, p99: 70, max: 80 },
      statusPatchesPerCr: { create: 1, scale: 1 }, steadyState: { seconds: 60, writes: 0, reconciles: 0 },
    },
    ratios: { create: 1, scale, apiserverCpu },
  };
}

describe('bench report', () => {
  it('docs/benchmark.md holds the tables bench/results.json gives, between the markers the bench rewrites', () => {
    const root = join(import.meta.dirname, '..', '..');
    const doc = readFileSync(join(root, 'docs', 'benchmark.md'), 'utf8');
    const results = JSON.parse(readFileSync(join(root, 'bench', 'results.json'), 'utf8')) as BenchResults;
    const start = doc.indexOf(REPORT_START);
    const end = doc.indexOf(REPORT_END);
    expect(start).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(start);
    expect(doc.slice(start + REPORT_START.length, end)).toBe(`\n${table(results)}\n`);
  });

  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([1.5, 1.1, 1.3])).toBe(1.3);
    expect(median([1.4, 1.1, 1.2, 1.3])).toBe(1.25);
    expect(median([2])).toBe(2);
  });

  it('gives each ratio\'s median and range over the repetitions', () => {
    const reps = [run('2026-12-03T20:00:00Z', 1.5, 1.3), run('2026-12-03T20:10:00Z', 1.1, 1.2), run('2026-12-03T20:20:00Z', 1.2, 1.05)].map(repetitionOf);
    const m = mediansOf(reps);
    expect(m.runs).toBe(3);
    expect(m.scale).toEqual({ median: 1.2, min: 1.1, max: 1.5 });
    expect(m.apiserverCpu).toEqual({ median: 1.2, min: 1.05, max: 1.3 });
    expect(m.rollout).toBeUndefined(); // no repetition had a rollout
    expect(m.go).toBeUndefined();
  });

  it('shows the medians in the row and every repetition below it', () => {
    const all = [run('2026-12-03T20:00:00Z', 1.5, 1.3), run('2026-12-03T20:10:00Z', 1.1, 1.2), run('2026-12-03T20:20:00Z', 1.2, 1.05)];
    const reps = all.map(repetitionOf);
    const last = all.at(-1)!;
    const text = table({
      date: '2026-12-03T20:30:00Z', machine: { cpus: 2, cpuModel: 'test', memoryGiB: 24, node: 'v24', kubernetes: 'v1.37.2' },
      runs: [{ ...last, repetitions: reps, medians: mediansOf(reps) }],
    });
    const row = text.split('\n').find((l) => l.startsWith('| 1000 | 40 s / 40 s'))!;
    // scale seconds: the median of 30, 22 and 24 s; the ratio: median 1.2 of 1.1-1.5
    expect(row).toContain('| 20 s / 24 s | **1.2** (1.1-1.5) |');
    const repRows = text.split('\n').filter((l) => /^\| 1000 \| 2026-12-03 20:[0-2]0 \| 0.5 \|/.test(l));
    expect(repRows).toHaveLength(3);
    expect(repRows[0]).toContain('20 / 30 s (1.5)');
    expect(text).toContain('3 repetitions');
  });

  it('gives the operator / CR floor medians of the repetitions, in the CR-floor table and per repetition with memory and restart', () => {
    /** A repetition whose operator took `crCreate` times its CR floor's 40 s to create. */
    const withCr = (date: string, crCreate: number, idle: number): BenchRun => {
      const r = run(date, 1.2, 1.1);
      const cr = { ...r.floor, createSeconds: 40, writesPerApp: { create: 24.4, scale: 14.3 } };
      return {
        ...r, crFloor: cr,
        operator: { ...r.operator, createSeconds: 40 * crCreate, rssMiB: { idle, afterRun: 120, peak: 150 }, restart: { seconds: 4, writes: 0 } },
        ratios: { ...r.ratios, crFloor: { create: crCreate, scale: 1.01, apiserverCpu: 1.02, allCpu: 1.03 } },
      };
    };
    const all = [withCr('2026-12-06T05:00:00Z', 1.08, 91), withCr('2026-12-06T05:20:00Z', 1.01, 90), withCr('2026-12-06T05:40:00Z', 1.04, 92)];
    const reps = all.map(repetitionOf);
    expect(reps[1]!.crFloor).toEqual({ createSeconds: 40, scaleSeconds: 20, apiserverCpuSeconds: 60 });
    expect(reps[1]!.operator.rssMiB).toEqual({ idle: 90, peak: 150 });
    const m = mediansOf(reps);
    expect(m.crFloor?.create).toEqual({ median: 1.04, min: 1.01, max: 1.08 });
    expect(m.crFloor?.allCpu).toEqual({ median: 1.03, min: 1.03, max: 1.03 });
    expect(m.unrelated).toBeUndefined(); // no repetition ran --unrelated
    const text = table({
      date: '2026-12-06T06:00:00Z', machine: { cpus: 2, cpuModel: 'test', memoryGiB: 24, node: 'v24', kubernetes: 'v1.37.2' },
      runs: [{ ...all.at(-1)!, repetitions: reps, medians: m }],
    });
    // CR floor 40 s, the operator's median create 41.6 s (of 43.2, 40.4, 41.6); median ratio and range, the raw floor's median beside it
    expect(text).toContain('| 1000 | 40 s / 41.6 s | **1.04** (1.01-1.08) (1) |');
    const repRows = text.split('\n').filter((l) => /^\| 1000 \| 2026-12-06 05:[024]0 \| 1\.0[148] \//.test(l));
    expect(repRows).toHaveLength(3);
    expect(repRows[1]).toBe('| 1000 | 2026-12-06 05:20 | 1.01 / 1.01 / 1.02 / 1.03 | 90 / 150 MiB; - | 4 s (0) / - | - |');
  });

  it('shows the restart on N converged CRs against the Go reference\'s, with the writes of each', () => {
    const r = run('2026-12-03T20:00:00Z', 1.2, 1.1);
    const go = {
      createSeconds: 50, scaleSeconds: 25, apiserverCpuSeconds: 70, cpuSeconds: 5, rssMiB: { idle: 30, peak: 100 },
      requests: { create: {}, scale: {} }, statusPatchesPerCr: { create: 1, scale: 1 }, sameChildrenAs: 'app-0', workers: 4,
      restart: { seconds: 4, writes: 2000 },
    };
    const results = (runs: BenchRun[]) => table({ date: '2026-12-03T20:30:00Z', machine: { cpus: 2, cpuModel: 'test', memoryGiB: 24, node: 'v24', kubernetes: 'v1.37.2' }, runs });
    const text = results([{ ...r, operator: { ...r.operator, startSeconds: 0.7, restart: { seconds: 5, writes: 0 } }, goOperator: go }]);
    expect(text).toContain('| 1000 | 0.7 s | 5 s / 4 s | **1.25** | 0 / 2000 |');
    // Without a restart measured (older rows), no table.
    expect(results([r])).not.toContain('restart on N converged CRs');
  });

  it('shows where the CPU went: every process, how busy the cores were, and the total against the floor\'s', () => {
    const r = run('2026-12-03T20:00:00Z', 1.2, 1.1);
    const floorCpu = { etcd: 10, 'kube-apiserver': 60, 'kube-controller-manager': 10, 'kube-scheduler': 5, kwok: 5, bench: 6, total: 96 };
    const operatorCpu = { etcd: 12, 'kube-apiserver': 66, 'kube-controller-manager': 10, 'kube-scheduler': 5, kwok: 5, operator: 8, bench: 2, total: 108 };
    const text = table({
      date: '2026-12-03T20:30:00Z', machine: { cpus: 2, cpuModel: 'test', memoryGiB: 24, node: 'v24', kubernetes: 'v1.37.2' },
      runs: [{ ...r, floor: { ...r.floor, cpuSecondsByProcess: floorCpu, sentSeconds: { create: 12, scale: 5 } }, operator: { ...r.operator, cpuSecondsByProcess: operatorCpu }, ratios: { ...r.ratios, allCpu: 1.13 } }],
    });
    // floor: 96 s of CPU over 40 + 20 s on 2 cores = 80% busy; no operator process
    expect(text).toContain('| 1000 | floor | 60 s | 80% | 10 s | 60 s | 10 s | 5 s | 5 s | - | 6 s | 96 s | 1 | 12 s / 5 s |');
    // operator: 108 s over 40 + 24 s = 84%
    expect(text).toContain('| 1000 | operator | 64 s | 84% | 12 s | 66 s | 10 s | 5 s | 5 s | 8 s | 2 s | 108 s | **1.13** | - |');
  });

  it('shows a single run\'s own ratio when not repeated', () => {
    const text = table({
      date: '2026-12-03T20:30:00Z', machine: { cpus: 2, cpuModel: 'test', memoryGiB: 24, node: 'v24', kubernetes: 'v1.37.2' },
      runs: [run('2026-12-03T20:00:00Z', 1.5, 1.3)],
    });
    expect(text).toContain('| 20 s / 30 s | **1.5** |');
    expect(text).not.toContain('Repetitions');
  });

  it('counts every client\'s writes per app within the phase, without Lease renewals or reads', () => {
    const e = (verb: string, resource: string, at: string, username = 'system:kube-controller-manager'): AuditEvent =>
      ({ auditID: at + verb + resource, stage: 'ResponseComplete', verb, requestURI: '/', user: { username }, objectRef: { resource }, stageTimestamp: at });
    const audit = [
      e('patch', 'deployments', '2026-12-03T20:00:00.500Z', 'system:serviceaccount:bench:floor'),
      e('create', 'pods', '2026-12-03T20:00:01Z'),
      e('create', 'pods/binding', '2026-12-03T20:00:01.5Z', 'system:kube-scheduler'),
      e('update', 'leases', '2026-12-03T20:00:02Z'), // a heartbeat
      e('get', 'deployments', '2026-12-03T20:00:02Z'), // a read
      e('patch', 'pods', '2026-12-03T20:00:10Z'), // the next phase
    ];
    expect(writesPerApp(audit, 2, '2026-12-03T20:00:00Z', '2026-12-03T20:00:10Z')).toBe(1.5);
    expect(writesPerApp(audit, 1, '2026-12-03T20:00:10Z', '2026-12-03T20:00:20Z')).toBe(1);
  });

  it('shows the writes per app of each run against the floor\'s', () => {
    const r = run('2026-12-03T20:00:00Z', 1.2, 1.1);
    const text = table({
      date: '2026-12-03T20:30:00Z', machine: { cpus: 2, cpuModel: 'test', memoryGiB: 24, node: 'v24', kubernetes: 'v1.37.2' },
      runs: [{ ...r, floor: { ...r.floor, writesPerApp: { create: 24, scale: 13 } }, operator: { ...r.operator, writesPerApp: { create: 26, scale: 15 } } }],
    });
    expect(text).toContain('| 1000 | floor | 24 | 1 | 13 | 1 |');
    expect(text).toContain('| 1000 | operator | 26 | 1.08 | 15 | 1.15 |');
    expect(text).not.toContain('| 1000 | Go operator | ');
  });

  it('keeps a --waves run beside the main run of its N, and shows the most Deployments rolling against maxConcurrent', () => {
    const root = mkdtempSync(join(tmpdir(), 'bench-report-'));
    mkdirSync(join(root, 'bench'));
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'docs', 'benchmark.md'), `# Benchmark\n${REPORT_START}\n${REPORT_END}\n`);
    const machine = { cpus: 2, cpuModel: 'test', memoryGiB: 24, node: 'v24', kubernetes: 'v1.37.2' };
    const main = run('2026-12-03T20:00:00Z', 1.2, 1.1);
    writeResults(root, { date: main.date, machine, runs: [main] });
    const w = run('2026-12-07T13:00:00Z', 1.01, 1);
    const waves: BenchRun = {
      ...w,
      command: 'npm run bench -- --waves 10%',
      floor: { ...w.floor, rolloutSeconds: 100, writesPerApp: { create: 22, scale: 12, rollout: 60 } },
      operator: {
        ...w.operator,
        rollout: { seconds: 300, image: 'next', operatorCpuSeconds: 20, apiserverCpuSeconds: 90, mostRolling: 100, maxConcurrent: '10%', mostInFlight: 100 },
        writesPerApp: { create: 24, scale: 14, rollout: 62.5 },
        statusPatchesPerCr: { create: 1, scale: 1, rollout: 2 },
      },
    };
    const results = writeResults(root, { date: waves.date, machine, runs: [waves] }, { waves: true });
    expect(results.runs.map((r) => r.command)).toEqual([main.command]);
    expect(results.wavesRuns?.map((r) => r.command)).toEqual([waves.command]);
    // A main run afterwards replaces the main one of its N and keeps the --waves run.
    const again = writeResults(root, { date: main.date, machine, runs: [{ ...main, commit: 'def5678' }] });
    expect(again.runs.map((r) => r.commit)).toEqual(['def5678']);
    expect(again.wavesRuns?.map((r) => r.command)).toEqual([waves.command]);
    const doc = readFileSync(join(root, 'docs', 'benchmark.md'), 'utf8');
    expect(doc).toContain('| 1000 | 10% | 100 s / 300 s | 100 / 100 | 60 / 62.5 | 2 | 1 / 1.01 | 0 / 0 in 60 s | 2026-12-07 13:00, abc1234, 0.5 0.6 0.7 / 2 2 2 |');
    expect(JSON.parse(readFileSync(join(root, 'bench', 'results.json'), 'utf8'))).toMatchObject({ runs: [{ commit: 'def5678' }], wavesRuns: [{ command: waves.command }] });
  });
});
