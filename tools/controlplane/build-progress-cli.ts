// build.sh pipes `go build -v 2>&1` through this: `tsx build-progress-cli.ts <plan file> <label>`.
// Writes to stderr only (build.sh's stdout carries the cache folder). On a terminal: a cli-progress
// bar, with go's other output (errors, downloads) printed above it. Otherwise: a plain line every 15 s.
// Always exits 0 once its input ends; build.sh takes go's exit status from the pipe.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import cliProgress from 'cli-progress';
import { BuildProgress, LineThrottle, formatDuration, parsePlan, progressLine, remainingText } from './build-progress.js';

const LINE_INTERVAL_MS = 15_000;

const [planFile, label = 'binaries'] = process.argv.slice(2);
if (!planFile) {
  process.stderr.write('usage: build-progress-cli.ts <plan file> [label]\n');
  process.exit(2);
}
const progress = new BuildProgress(parsePlan(readFileSync(planFile, 'utf8')), Date.now());
const input = createInterface({ input: process.stdin, crlfDelay: Infinity });

if (process.stderr.isTTY) {
  const bars = new cliProgress.MultiBar(
    {
      stream: process.stderr,
      format: `controlplane ${label} |{bar}| {value}/{total} packages | {elapsedText} elapsed | {remaining}`,
      hideCursor: true,
      barsize: 30,
      fps: 5,
      autopadding: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const first = progress.snapshot(Date.now());
  const bar = bars.create(first.total, 0, { elapsedText: '0s', remaining: remainingText(first) });
  const update = (): void => {
    const s = progress.snapshot(Date.now());
    bar.setTotal(s.total);
    bar.update(s.done, { elapsedText: formatDuration(s.elapsedMs), remaining: remainingText(s) });
  };
  const timer = setInterval(update, 1000);
  input.on('line', (line) => {
    if (progress.observe(line)) update();
    else if (line.trim()) bars.log(`${line}\n`);
  });
  input.on('close', () => {
    clearInterval(timer);
    update();
    bars.stop();
  });
} else {
  const throttle = new LineThrottle(LINE_INTERVAL_MS);
  const print = (force = false): void => {
    const now = Date.now();
    if (throttle.due(now) || force) process.stderr.write(`${progressLine(label, progress.snapshot(now))}\n`);
  };
  print();
  // Also while nothing new arrives (long compiles, linking): the log shows the build is alive.
  const timer = setInterval(() => print(), 1000);
  input.on('line', (line) => {
    if (progress.observe(line)) print();
    else if (line.trim()) process.stderr.write(`${line}\n`);
  });
  input.on('close', () => {
    clearInterval(timer);
    print(true);
  });
}
