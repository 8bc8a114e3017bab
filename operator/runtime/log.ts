// Structured logs: one JSON object a line on stdout, so log collectors parse them without rules.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Extra fields on a log line; Error values are written as their message. */
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

const SEVERITY: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
/** Keys the logger owns; a field of the same name must not hide them. */
const RESERVED = new Set(['ts', 'level', 'msg']);

/** JSON.stringify replacer: errors become their message, bigints strings (JSON has neither). */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return value.message;
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** Serializes one line; fields that cannot be serialized (cycles) are replaced by a note, never thrown. */
export function formatLine(ts: Date, level: LogLevel, msg: string, fields: LogFields): string {
  const line: LogFields = { ts: ts.toISOString(), level, msg };
  for (const [key, value] of Object.entries(fields)) {
    if (!RESERVED.has(key) && value !== undefined) line[key] = value;
  }
  try {
    return JSON.stringify(line, replacer);
  } catch (e) {
    return JSON.stringify({ ts: line.ts, level, msg, logError: `fields not serializable: ${(e as Error).message}` });
  }
}

/** A logger writing lines at `level` and above. */
export function createLogger(level: LogLevel, opts: LoggerOptions = {}): Logger {
  const write = opts.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const now = opts.now ?? (() => new Date());
  const min = SEVERITY[level];
  const bound = opts.fields ?? {};
  const emit = (lvl: LogLevel) => (msg: string, fields?: LogFields) => {
    if (SEVERITY[lvl] < min) return;
    write(formatLine(now(), lvl, msg, fields ? { ...bound, ...fields } : bound));
  };
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (fields) => createLogger(level, { write, now, fields: { ...bound, ...fields } }),
  };
}

/** A logger that drops everything, for library code called without one. */
export const silentLogger: Logger = createLogger('error', { write: () => undefined });
