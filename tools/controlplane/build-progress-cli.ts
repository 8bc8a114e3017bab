// build.sh pipes go's output through this, in two steps:
//   `go list -deps ... 2>&1 >plan | tsx build-progress-cli.ts --downloads`: the planning step, which
//     on a fresh machine downloads the modules (folded into a running count);
//   `go build -v ... 2>&1 | tsx build-progress-cli.ts <plan file> <label>`: packages compiled out of
//     the plan, with a size-weighted estimate of the time left.
// Writes to stderr only (build.sh's stdout carries the cache folder). On a terminal: one cli-progress
// line (a bar while compiling), with go's other output (errors) printed above it. Otherwise: a plain
// line every 15 s. Always exits 0 once its input ends; build.sh takes go's exit status from the pipe.
import { readFileSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import cliProgress from 'cli-progress';
import {
  BuildProgress,
  DownloadProgress,
  LineThrottle,
  downloadStatus,
  downloadSummary,
  formatDuration,
  parsePlan,
  progressLine,
  remainingText,
  withSizes,
} from './build-progress.js';

const LINE_INTERVAL_MS = 15_000;
const tty = process.stderr.isTTY === true;
const input = createInterface({ input: process.stdin, crlfDelay: Infinity });

/** Observes each input line; shows the status on a terminal (redrawn each second) or every 15 s. */
function run(opts: {
  observe: (line: string) => boolean;
  status: () => string;
  ttyFormat: string;
  ttyValues: () => { value: number; total: number; payload: Record<string, string> };
  finish: () => string | undefined;
}): void {
  if (tty) {
    const bars = new cliProgress.MultiBar(
      { stream: process.stderr, format: opts.ttyFormat, hideCursor: true, barsize: 30, fps: 5, autopadding: true },
      cliProgress.Presets.shades_classic,
    );
    const first = opts.ttyValues();
    const bar = bars.create(first.total, first.value, first.payload);
    const update = (): void => {
      const v = opts.ttyValues();
      bar.setTotal(v.total);
      bar.update(v.value, v.payload);
    };
    const timer = setInterval(update, 1000);
    input.on('line', (line) => {
      if (opts.observe(line)) update();
      else if (line.trim()) bars.log(`${line}\n`);
    });
    input.on('close', () => {
      clearInterval(timer);
      update();
      bars.stop();
      const summary = opts.finish();
      if (summary) process.stderr.write(`${summary}\n`);
    });
    return;
  }
  const throttle = new LineThrottle(LINE_INTERVAL_MS);
  const print = (): void => {
    if (throttle.due(Date.now())) process.stderr.write(`${opts.status()}\n`);
  };
  // Also while nothing new arrives (long compiles, linking): the log shows the build is alive.
  const timer = setInterval(print, 1000);
  input.on('line', (line) => {
    if (opts.observe(line)) print();
    else if (line.trim()) process.stderr.write(`${line}\n`);
  });
  input.on('close', () => {
    clearInterval(timer);
    const summary = opts.finish();
    if (summary) process.stderr.write(`${summary}\n`);
  });
}

const args = process.argv.slice(2);
if (args[0] === '--downloads') {
  const downloads = new DownloadProgress(Date.now());
  run({
    observe: (line) => downloads.observe(line),
    status: () => `controlplane: ${downloadStatus(downloads.snapshot(Date.now()))}`,
    ttyFormat: 'controlplane: {status}',
    ttyValues: () => ({ value: 0, total: 1, payload: { status: downloadStatus(downloads.snapshot(Date.now())) } }),
    finish: () => downloadSummary(downloads.snapshot(Date.now())),
  });
} else {
  const [planFile, label = 'binaries'] = args;
  if (!planFile) {
    process.stderr.write('usage: build-progress-cli.ts --downloads | <plan file> [label]\n');
    process.exit(2);
  }
  const sizeOf = (file: string): number => {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  const progress = new BuildProgress(withSizes(parsePlan(readFileSync(planFile, 'utf8')), sizeOf), Date.now());
  let last = '';
  run({
    observe: (line) => progress.observe(line),
    status: () => (last = progressLine(label, progress.snapshot(Date.now()))),
    ttyFormat: `controlplane ${label} |{bar}| {value}/{total} packages | {elapsedText} elapsed | {remaining}`,
    ttyValues: () => {
      const s = progress.snapshot(Date.now());
      return { value: s.done, total: s.total, payload: { elapsedText: formatDuration(s.elapsedMs), remaining: remainingText(s) } };
    },
    // The last line shows where it ended (the throttle may have held it back).
    finish: () => {
      const line = progressLine(label, progress.snapshot(Date.now()));
      return tty || line === last ? undefined : line;
    },
  });
}
