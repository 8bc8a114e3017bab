import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAuditLog, readAuditLogFile } from '../../tools/controlplane/audit.js';

const event = (i: number) =>
  JSON.stringify({ auditID: `id-${i}`, stage: 'ResponseComplete', verb: 'patch', requestURI: `/apis/apps/v1/deployments/a-${i}`, user: { username: 'u' }, stageTimestamp: '2026-12-07T16:00:00.000000Z' });

describe('the audit log', () => {
  const dir = mkdtempSync(join(tmpdir(), 'audit-log-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is read line by line, skipping blank lines, lines that are not events and a partly written last line', async () => {
    const path = join(dir, 'audit.log');
    const text = `${event(1)}\n\n${event(2)}\n{"not":"an event"}\n${event(3)}\n${event(4).slice(0, 40)}`;
    writeFileSync(path, text);
    const events = await readAuditLogFile(path);
    expect(events.map((e) => e.auditID)).toEqual(['id-1', 'id-2', 'id-3']);
    expect(parseAuditLog(text)).toEqual(events);
    // A file longer than what is read at once is read line by line, to the same events.
    expect(await readAuditLogFile(path, 10)).toEqual(events);
  });

  it('has no events when the file is not there yet', async () => {
    expect(await readAuditLogFile(join(dir, 'missing.log'))).toEqual([]);
  });
});
