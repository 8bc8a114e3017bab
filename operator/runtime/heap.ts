// How far V8 lets the operator's heap grow past what its last full collection kept.
// V8 picks a growing factor between 1.1 and 4 from how fast it collects against how fast the program
// allocates; an operator allocates in bursts (a watch event parsed, a render, a request built) that
// are garbage a moment later, so in a busy phase V8 lets that garbage pile up, and the peak RSS
// follows the heap V8 committed as well as what the caches hold (docs/benchmark.md, "The heap's
// growing factor"). At 1000 apps a fixed 25% took the peak RSS from 143-146 to 130-132 MiB, at no
// operator CPU one run each could show; 10% and 50% did no better, 100% no better than V8's own.
// Node refuses this V8 flag in NODE_OPTIONS, and V8 reads it whenever it sets the next limit, so the
// process sets it on itself at start; a `--heap-growing-percent` on node's command line wins.
import { setFlagsFromString } from 'node:v8';

/** The heap may grow to (1 + this / 100) x what a full collection kept before the next one. */
export const HEAP_GROWING_PERCENT = 25;

/** The V8 flag to set, or undefined when node's command line already sets one. */
export function heapGrowthFlag(execArgv: readonly string[], percent = HEAP_GROWING_PERCENT): string | undefined {
  const given = execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a));
  return given ? undefined : `--heap-growing-percent=${percent}`;
}

/** Sets the heap's growing factor on this process (before the heap grows: first thing at start). */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
  const flag = heapGrowthFlag(execArgv);
  if (flag) setFlagsFromString(flag);
}
