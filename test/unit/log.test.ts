import { describe, expect, it } from '@jest/globals';
import { createLogger } from '../../operator/runtime/log.js';

function capture(level: 'debug' | 'info' | 'warn' | 'error') {
  const lines: string[] = [];
  const log = createLogger(level, { write: (l) => lines.push(l), now: () => new Date('2025-01-02T03:04:05.678Z') });
  return { log, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('writes one JSON object a line with level, ts, the fields and msg', () => {
    const { log, lines } = capture('info');
    log.info('applied', { kind: 'Deployment', count: 2 });
    expect(lines).toEqual(['{"level":"info","ts":"2025-01-02T03:04:05.678Z","kind":"Deployment","count":2,"msg":"applied"}']);
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

  it('writes errors with their type, message, stack and cause chain, also nested and in child fields', () => {
    const { log, parsed } = capture('info');
    const cause = new TypeError('socket hang up');
    log.error('apply failed', { err: new Error('quota exceeded', { cause }), detail: { errors: [new RangeError('bad')] } });
    log.child({ lastError: new Error('earlier') }).warn('retrying');
    const [first, second] = parsed() as { err: Record<string, unknown>; detail: { errors: Record<string, unknown>[] }; lastError: Record<string, unknown> }[];
    expect(first!.err).toMatchObject({ type: 'Error', message: 'quota exceeded', cause: { type: 'TypeError', message: 'socket hang up' } });
    expect(first!.err.stack).toMatch(/^Error: quota exceeded\n\s+at /);
    expect((first!.err.cause as Record<string, unknown>).stack).toMatch(/^TypeError: socket hang up\n\s+at /);
    expect(first!.detail.errors[0]).toMatchObject({ type: 'RangeError', message: 'bad' });
    expect(second!.lastError).toMatchObject({ type: 'Error', message: 'earlier' });
  });

  it('never lets a field hide ts, level or msg, and survives cyclic fields and bigints', () => {
    const { log, lines, parsed } = capture('info');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    log.info('real', { msg: 'fake', level: 'error', ts: 'then', n: 10n });
    log.info('cycle', { cyclic });
    const [first, second] = parsed();
    expect(first).toEqual({ msg: 'real', level: 'info', ts: '2025-01-02T03:04:05.678Z', n: '10' });
    expect(lines[0]!.match(/"level"/g)).toHaveLength(1);
    expect(second).toMatchObject({ msg: 'cycle', level: 'info', cyclic: { self: expect.anything() } });
  });
});
