// `npm run bench:report`: redraws the tables of docs/benchmark.md and its charts (docs/benchmark-*.svg)
// from bench/results.json as it is, without running anything.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeResults } from './report.js';
import type { BenchResults } from './results.js';

const root = join(import.meta.dirname, '..');
writeResults(root, JSON.parse(readFileSync(join(root, 'bench', 'results.json'), 'utf8')) as BenchResults);
process.stderr.write('bench: docs/benchmark.md tables and docs/benchmark-*.svg redrawn from bench/results.json\n');
