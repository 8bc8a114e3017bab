// Typed view of the API server's JSON audit log (audit.k8s.io/v1 Event, the fields tests look at).
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';

export interface AuditObjectRef {
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  apiGroup?: string;
  apiVersion?: string;
}

export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  /** Where the request came from (a pod's IP for a pod on the real node). */
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: AuditObjectRef;
  responseStatus?: { code?: number; reason?: string };
  stageTimestamp: string;
}

function isAuditEvent(value: unknown): value is AuditEvent {
  if (typeof value !== 'object' || value === null) return false;
  const event = value as Partial<AuditEvent>;
  return typeof event.verb === 'string' && typeof event.requestURI === 'string' && typeof event.user === 'object';
}

/** One event per line; a partly written last line (the server is still writing) is skipped. */
export function parseAuditLog(text: string): AuditEvent[] {
  return text.split('\n').flatMap((line) => eventOf(line) ?? []);
}

/**
 * The events of an audit log file. A big run's log (hundreds of MB at thousands of apps) can be longer
 * than the longest string V8 makes (512 MiB), so a file above `wholeUpTo` bytes is read line by line; below it,
 * at once (faster for the tests' logs, which are read again and again). No file: no events.
 */
export async function readAuditLogFile(path: string, wholeUpTo = 480 * 2 ** 20): Promise<AuditEvent[]> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  if (size <= wholeUpTo) return parseAuditLog(await readFile(path, 'utf8'));
  const events: AuditEvent[] = [];
  for await (const line of createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity })) {
    const event = eventOf(line);
    if (event) events.push(event);
  }
  return events;
}

function eventOf(line: string): AuditEvent | undefined {
  if (!line.trim()) return undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    return isAuditEvent(parsed) ? parsed : undefined;
  } catch {
    return undefined; // truncated tail line
  }
}
