// One watch request as a stream of events, on the pooled keep-alive connections: the answer read
// line by line, ended when idle too long, resent once when a kept-alive connection was dead.
import { ApiError } from './api-failure.js';
import { parseRetryAfter } from './throttle.js';
import { Credentials, parseJson, Transport } from './transport.js';

/**
 * A watch that receives nothing for this long is ended and resumed (a connection that died without a
 * FIN). The API server sends a bookmark to every watch that asks for them about once a minute.
 */
export const WATCH_IDLE_MS = 150_000;

/** Where a watch's events and answers go. */
export interface WatchHandlers {
  readonly onEvent: (type: string, object: unknown) => void;
  /** Every answer's code (0 when no answer came), as the client counts its requests. */
  readonly onRequest: (verb: string, code: number) => void;
}

/**
 * One watch request (`?watch=true`) on the pooled keep-alive connections, as client-go's watches
 * share its transport: no new TLS connection per watch, and a watch the server ends (timeoutSeconds)
 * hands its connection back for the next one. client-node's Watch opened a new connection each
 * time and ended any watch that was quiet for 30 s, so a quiet resource re-opened its watch (a TLS
 * handshake on the server) twice a minute. Each line of the stream is one event, parsed here.
 * Resolves when the server ends the watch or `signal` aborts it; rejects with an ApiError for an
 * error answer (a throttled one says its Retry-After) or a dropped connection (code 0), and with
 * a `TimeoutError` when nothing, not even a bookmark, came for `idleMs`.
 */
export async function watchStream(
  transport: Transport,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  handlers: WatchHandlers,
  opts: { signal?: AbortSignal; idleMs?: number } = {},
): Promise<void> {
  const url = transport.url(path, { watch: true, ...query });
  const idleMs = opts.idleMs ?? WATCH_IDLE_MS;
  for (let resent = false; ;) {
    const creds = await transport.auth();
    if (opts.signal?.aborted) return;
    try {
      return await stream(transport, url, path, creds, handlers, idleMs, opts.signal);
    } catch (e) {
      // As in RestClient.request(): a kept-alive socket the server closed meanwhile fails before any answer.
      if ((e as { reused?: boolean }).reused && !resent) {
        resent = true;
        continue;
      }
      if (e instanceof ApiError || (e as Error).name === 'TimeoutError') throw e;
      handlers.onRequest('WATCH', 0);
      // Refused: nothing listens (an API server restarting); the informer resumes rather than relists.
      const reason = (e as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 'ConnectionRefused' : 'ConnectionFailed';
      throw new ApiError(0, reason, `WATCH ${path}: ${(e as Error).message}`, 'WATCH', path);
    }
  }
}

function stream(
  transport: Transport,
  url: URL,
  path: string,
  creds: Credentials,
  { onEvent, onRequest }: WatchHandlers,
  idleMs: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let answered = false;
    /** Why this side ended the watch: aborted (resolve) or idle too long (TimeoutError). */
    let endedHere: Error | undefined;
    // Whatever ends the stream first decides; a cause set here wins over the errors it triggers.
    const settle = (e?: Error) => {
      if (endedHere?.name === 'AbortError') resolve();
      else if (endedHere) reject(endedHere);
      else if (e) reject(e);
      else resolve();
    };
    const end = (why: Error) => {
      endedHere ??= why;
      req.destroy(why);
    };
    const req = transport.open(url, { method: 'GET' }, creds, (res) => {
      answered = true;
      const code = res.statusCode ?? 0;
      onRequest('WATCH', code);
      res.setEncoding('utf8');
      if (code !== 200) {
        let text = '';
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          if (code === 401) transport.forgetCredentials(); // read them again for the next request
          settle(ApiError.ofAnswer(code, parseJson(text), text, 'WATCH', path, parseRetryAfter(res.headers['retry-after'])));
        });
        res.on('error', settle);
        return;
      }
      let pending = '';
      res.on('data', (chunk: string) => {
        pending += chunk;
        let nl: number;
        while (!endedHere && (nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          if (!line.trim()) continue;
          let event: { type?: string; object?: unknown };
          try {
            event = JSON.parse(line) as { type?: string; object?: unknown };
          } catch {
            continue; // not an event (the server only sends whole JSON lines)
          }
          if (event.type) onEvent(event.type, event.object);
        }
      });
      res.on('end', () => settle());
      res.on('error', settle);
      // A connection dropped mid-stream (an API server restart) closes without 'end'.
      res.on('close', () =>
        settle(
          res.complete ? undefined : new ApiError(0, 'ConnectionFailed', `WATCH ${path}: connection closed mid-stream`, 'WATCH', path),
        ),
      );
    });
    const onAbort = () => end(Object.assign(new Error(`WATCH ${path}: stopped`), { name: 'AbortError' }));
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => signal?.removeEventListener('abort', onAbort));
    req.setTimeout(idleMs, () =>
      end(Object.assign(new Error(`WATCH ${path}: nothing received for ${idleMs / 1000} s`), { name: 'TimeoutError' })),
    );
    req.on('error', (e: NodeJS.ErrnoException) => {
      const reused = !answered && !endedHere && req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
      settle(Object.assign(e, { reused }));
    });
    req.end();
  });
}
