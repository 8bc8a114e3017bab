// Typed view of the API server's JSON audit log (audit.k8s.io/v1 Event, the fields tests look at).
import { readFile } from 'node:fs/promises';

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
  const events: AuditEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const parsed: unknown = JSON.parse(line);
      if (isAuditEvent(parsed)) events.push(parsed);
    } catch {
      // truncated tail line
    }
  }
  return events;
}

export async function readAuditLogFile(path: string): Promise<AuditEvent[]> {
  try {
    return parseAuditLog(await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
