import { describe, expect, it } from '@jest/globals';
import { createLogger } from '../../operator/runtime/log.js';

function capture(level: 'debug' | 'info' | 'warn' | 'error') {
  const lines: string[] = [];
  const log = createLogger(level, { write: (l) => lines.push(l), now: () => new Date('2025-01-02T03:04:05.678Z') });
  return { log, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('writes one JSON object a line with ts, level, msg and fields, in that order', () => {
    const { log, lines } = capture('info');
    log.info('applied', { kind: 'Deployment', count: 2 });
    expect(lines).toEqual(['{"ts":"2025-01-02T03:04:05.678Z","level":"info","msg":"applied","kind":"Deployment","count":2}']);
  });

  it('drops lines below its level', () => {
    const { log, parsed } = capture('warn');
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    expect(parsed().map((l) => l.level)).toEqual(['warn', 'error']);
  });

  it('carries child fields on every line, nested children adding more', () => {
    const { log, parsed } = capture('debug');
    const rec = log.child({ key: 'EchoFlask/default/example' });
    rec.info('start');
    rec.child({ step: 'apply' }).debug('sent', { name: 'example-echoflask-svc' });
    log.info('unrelated');
    expect(parsed()).toEqual([
      { ts: '2025-01-02T03:04:05.678Z', level: 'info', msg: 'start', key: 'EchoFlask/default/example' },
      { ts: '2025-01-02T03:04:05.678Z', level: 'debug', msg: 'sent', key: 'EchoFlask/default/example', step: 'apply', name: 'example-echoflask-svc' },
      { ts: '2025-01-02T03:04:05.678Z', level: 'info', msg: 'unrelated' },
    ]);
  });

  it('writes errors as their message, also nested', () => {
    const { log, parsed } = capture('info');
    log.error('apply failed', { err: new Error('quota exceeded'), detail: { cause: new TypeError('bad') } });
    expect(parsed()[0]).toMatchObject({ err: 'quota exceeded', detail: { cause: 'bad' } });
  });

  it('never lets a field hide ts, level or msg, and survives unserializable fields', () => {
    const { log, parsed } = capture('info');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    log.info('real', { msg: 'fake', level: 'error', n: 10n });
    log.info('cycle', { cyclic });
    const [first, second] = parsed();
    expect(first).toMatchObject({ msg: 'real', level: 'info', n: '10' });
    expect(second).toMatchObject({ msg: 'cycle', level: 'info' });
    expect(second!.logError).toMatch(/not serializable/);
  });
});
