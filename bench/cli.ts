// `npm run bench`'s command line: its options, their defaults and checks, and the usage text.
const USAGE = `Usage: npm run bench [-- options]
  --n 1000[,300,...]  numbers of CRs, one run each (default 1000)
  --growth            N = 100, 300 and 1000
  --2500              add N = 2500
  --size 2            replicas per CR at create (scaled +1 afterwards)
  --concurrency 4     requests in flight
  --edits 200         spec.size edits, one at a time, for the edit latency
  --steady 60         seconds of steady state checked for writes
  --no-rollout        skip the restart with a new default image (the longest phase)
  --waves 10%         the rollout phase in waves of the kind's rollout.maxConcurrent (a number or a
                      percentage; default: 100%, every app at once), its most apps in flight sampled
  --go                then a controller-runtime (Go) operator, 4 workers, on its own control plane
                      (create and scale; bench/go-operator/, built once into ~/.cache/appkind/go-operator/)
  --repeat 1          run each N this many times (floor, operator and --go in turn, each time on fresh
                      control planes) and report the median and range of each ratio: runs of the
                      same code on these shared machines differ by up to a third
  --profile <dir>     operator --cpu-prof, kube-apiserver pprof and /metrics per phase into <dir>
  --no-cr-floor       skip the CR floor (a plain client doing the least any CR-based operator must, on
                      its own fresh control plane, after the raw floor)
  --unrelated K       then the operator's run again on a fresh control plane holding K Deployments
                      (0 replicas) and K Services of no CR in other namespaces, created before the
                      operator starts: its RSS, CPU, start time and edit latency with and without them
Writes bench/results.json and the tables of docs/benchmark.md.`;

const FLAGS_WITH_VALUE = ['--n', '--size', '--concurrency', '--edits', '--steady', '--repeat', '--profile', '--unrelated', '--waves'];
const FLAGS = ['--growth', '--2500', '--no-rollout', '--no-cr-floor', '--go', '--help', '-h'];

export function args(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  for (let i = 0; i < argv.length; i++) {
    if (FLAGS_WITH_VALUE.includes(argv[i]!)) i++;
    else if (!FLAGS.includes(argv[i]!)) throw new Error(`bench: unknown argument ${argv[i]}\n${USAGE}`);
  }
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  let ns = (value('--n') ?? '1000').split(',').map(Number);
  if (argv.includes('--growth')) ns = [100, 300, 1000];
  if (argv.includes('--2500')) ns = [...new Set([...ns, 2500])];
  const settings = {
    size: Number(value('--size') ?? 2),
    concurrency: Number(value('--concurrency') ?? 4),
    edits: Number(value('--edits') ?? 200),
    steadySeconds: Number(value('--steady') ?? 60),
    repeat: Number(value('--repeat') ?? 1),
    unrelated: Number(value('--unrelated') ?? 0),
  };
  for (const n of [...ns, ...Object.values(settings)]) {
    if (!Number.isInteger(n) || n < 0) throw new Error(`bench: bad argument in ${argv.join(' ')}`);
  }
  if (settings.repeat < 1) throw new Error('bench: --repeat needs a count of 1 or more');
  if (settings.repeat > 1 && argv.includes('--profile')) throw new Error('bench: --profile records one run; use it without --repeat');
  const profile = value('--profile');
  if (argv.includes('--profile') && !profile) throw new Error('bench: --profile needs a directory');
  const waves = value('--waves');
  if (argv.includes('--waves') && !/^([1-9][0-9]*|[1-9][0-9]?%|100%)$/.test(waves ?? ''))
    throw new Error('bench: --waves needs a maxConcurrent: a number of apps like 50, or a percentage like 10%');
  if (waves && argv.includes('--no-rollout')) throw new Error('bench: --waves is a way to run the rollout phase; leave out --no-rollout');
  // The rollout phase replaces every pod once more; --no-rollout skips it (the longest runs).
  return { ns, ...settings, profile, waves, rollout: !argv.includes('--no-rollout'), go: argv.includes('--go'), crFloor: !argv.includes('--no-cr-floor') };
}

export type Settings = ReturnType<typeof args>;
