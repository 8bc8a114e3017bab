// `npm run operator` stopped the way a supervisor, a CI runner or `timeout` stops it: SIGTERM or SIGINT
// to the npm process alone, not to its process group. npm passes the signal on to the operator (the
// script execs node, so no `sh -c` sits in between to die and orphan it), which stops as on Ctrl+C:
// its "stopped" line, exit 0, and no process of it left. `npm start`: controlplane-cleanup.test.ts.
import { beforeAll, expect, test } from '@jest/globals';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { eventually, sharedServiceAccountKubeconfig } from './cluster.js';
import { processesMentioning } from './controlplane-processes.js';
import { OPERATOR_SA, OperatorProcess, prepareOperatorNamespace } from './operator-process.js';

let ns: string;

beforeAll(async () => {
  ({ ns } = await prepareOperatorNamespace('npmstop', [SAMPLE_KIND]));
});

test.each(['SIGTERM', 'SIGINT'] as const)('%s to the npm process alone: the operator stops cleanly and nothing of it is left', async (signal) => {
  // Found in the environment of npm and of every process it starts.
  const marker = `appkind-npm-stop-${signal}-${process.pid}`;
  const operator = await OperatorProcess.spawn({
    kubeconfig: await sharedServiceAccountKubeconfig(ns, OPERATOR_SA),
    env: { APPKIND_WATCH_NAMESPACE: ns, NPM_STOP_TEST_MARKER: marker },
    command: ['npm', 'run', '-s', 'operator'],
    until: (line) => line.msg === 'workers started',
  });
  const started = processesMentioning(marker);
  expect(started.map((p) => p.cmdline)).toEqual(expect.arrayContaining([expect.stringMatching(/operator\/main\.ts$/)]));
  expect(started.some((p) => p.pid === operator.child.pid)).toBe(true);

  try {
    // Resolves once npm and every process holding its output have exited; an orphaned operator keeps it open.
    const stopped = await Promise.race([operator.stop(signal), new Promise((r) => setTimeout(() => r('still running after 60 s'), 60_000).unref())]);
    expect(stopped).toBe(0);
    expect(operator.logs.find((l) => l.msg === 'stopped')).toMatchObject({ signal });
    await eventually(`no process left of npm run operator (${signal})`, async () => processesMentioning(marker).length === 0, 15_000);
  } finally {
    // What a failure left running, so it does not outlive the test.
    for (const { pid } of processesMentioning(marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
  }
});
