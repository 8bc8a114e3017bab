// Structured logs through pino: one JSON object a line on stdout, so log collectors parse them without
// rules; errors keep their type, stack and cause chain.
import { randomUUID } from 'node:crypto';
import { pino, stdSerializers, type Logger as PinoLogger } from 'pino';
import { parseRefKey } from './ref.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Extra fields on a log line; Error values, also nested, are written with their type, message, stack and cause. */
export type LogFields = Record<string, unknown>;

/** A structured logger; `child` binds fields (such as the CR key) to every line it writes. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (the line's own fields win on a clash). */
  child(fields: LogFields): Logger;
}

/** Where lines go and what every line carries. */
export interface LoggerOptions {
  /** Receives each line without the trailing newline. @default writes the line to stdout */
  write?: (line: string) => void;
  /** Fields on every line. @default none */
  fields?: LogFields;
  /** Clock, for tests. @default () => new Date() */
  now?: () => Date;
}

/** Keys the logger owns; a field of the same name must not hide them. */
const RESERVED = new Set(['ts', 'level', 'msg']);
/** Nesting followed to find errors; deeper values are written as they are. */
const MAX_DEPTH = 4;

/** `value` with every Error in it (also in arrays and plain objects) serialized, bigints as strings. */
function serializable(value: unknown, depth = 0): unknown {
  if (value instanceof Error) return stdSerializers.errWithCause(value);
  if (typeof value === 'bigint') return value.toString();
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => serializable(v, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out: LogFields = {};
  for (const [k, v] of Object.entries(value)) out[k] = serializable(v, depth + 1);
  return out;
}

function fieldsOf(obj: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(obj)) {
    if (!RESERVED.has(key) && value !== undefined) out[key] = serializable(value);
  }
  return out;
}

class PinoAdapter implements Logger {
  constructor(private readonly p: PinoLogger) {}
  debug(msg: string, fields?: LogFields): void {
    this.p.debug(fields ?? {}, msg);
  }
  info(msg: string, fields?: LogFields): void {
    this.p.info(fields ?? {}, msg);
  }
  warn(msg: string, fields?: LogFields): void {
    this.p.warn(fields ?? {}, msg);
  }
  error(msg: string, fields?: LogFields): void {
    this.p.error(fields ?? {}, msg);
  }
  child(fields: LogFields): Logger {
    // pino's bindings formatter sees only the base bindings, not a child's: serialize them here.
    return new PinoAdapter(this.p.child(fieldsOf(fields)));
  }
}

/** A logger writing lines at `level` and above. */
export function createLogger(level: LogLevel, opts: LoggerOptions = {}): Logger {
  const now = opts.now ?? (() => new Date());
  const write = opts.write;
  const p = pino(
    {
      level,
      base: null,
      messageKey: 'msg',
      timestamp: () => `,"ts":"${now().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }), log: fieldsOf },
      // fieldsOf serializes errors under any key; pino's own `err` serializer would see them serialized already.
      serializers: { err: (value: unknown) => value },
    },
    // Synchronous: a line logged just before process.exit() is not lost.
    write ? { write: (line: string) => write(line.endsWith('\n') ? line.slice(0, -1) : line) } : pino.destination({ dest: 1, sync: true }),
  );
  const log = new PinoAdapter(p);
  return opts.fields ? log.child(opts.fields) : log;
}

/** The fields of every log line of one reconcile of `key`, as controller-runtime names them, and a new reconcile id. */
export function reconcileFields(key: string): LogFields {
  const ref = parseRefKey(key);
  return { controller: ref.kind.toLowerCase(), namespace: ref.namespace, name: ref.name, reconcileID: randomUUID(), key };
}

/** A logger that drops everything, for library code called without one. */
export const silentLogger: Logger = createLogger('error', { write: () => undefined });
