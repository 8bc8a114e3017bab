// docs/argocd/health.lua, the Argo CD health check for app kinds, run by Debian's lua5.4 the way Argo
// CD runs it (`obj` a Lua table), against CRs recorded from test/integration/gitops.test.ts
// (APPKIND_RECORD_GITOPS_FIXTURES=test/unit/fixtures/gitops re-records them).
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { argoHealth, luaValue } from '../gitops-clients.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'gitops');
type Recorded = { metadata: { generation: number }; status: { observedGeneration: number; conditions?: { type: string; status: string; reason: string; message: string }[] } };
const recorded = (name: string): Recorded => JSON.parse(readFileSync(join(fixtures, `${name}.json`), 'utf8')) as Recorded;


describe('the Argo CD health check on recorded CRs', () => {
  test.each([
    ['new', 'Progressing', "Waiting for the operator to observe generation 1"],
    ['edited', 'Progressing', 'Waiting for the operator to observe generation 2'],
    ['ready', 'Healthy', 'AllReplicasReady: 1/1 pods ready'],
  ])('%s: %s', (name, status, message) => {
    expect(argoHealth(recorded(name))).toEqual([{ status, message }]);
  });

  test.each([
    ['name-conflict', 'NameConflict'],
    ['image-not-allowed', 'ImageNotAllowed'],
    ['progress-deadline', 'ProgressDeadlineExceeded'],
  ])('%s: Degraded with the Stalled reason and message', (name, reason) => {
    const cr = recorded(name);
    const stalled = cr.status.conditions!.find((c) => c.type === 'Stalled')!;
    expect(stalled.reason).toBe(reason);
    expect(argoHealth(cr)).toEqual([{ status: 'Degraded', message: `${reason}: ${stalled.message}` }]);
  });

  test('refused: pods a ResourceQuota refuses are Progressing (Reconciling), with the refusal', () => {
    const cr = recorded('refused');
    const reconciling = cr.status.conditions!.find((c) => c.type === 'Reconciling')!;
    expect(reconciling.reason).toBe('FailedCreate');
    expect(argoHealth(cr)).toEqual([{ status: 'Progressing', message: `FailedCreate: ${reconciling.message}` }]);
  });

  test('no status at all (a CRD without the default status) is Progressing, not Healthy', () => {
    const bare = { ...recorded('new'), status: undefined };
    expect(argoHealth(bare)).toEqual([{ status: 'Progressing', message: "Waiting for the operator's first status" }]);
  });
});

describe('luaValue', () => {
  test('quotes every string byte Lua could misread, and drops nulls', () => {
    expect(luaValue({ a: ['x"y\\z', null, 1, true], 'b-c': 'é\n' })).toBe('{["a"] = {"x\\34y\\92z", nil, 1, true}, ["b-c"] = "\\195\\169\\10"}');
  });
});
