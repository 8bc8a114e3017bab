// The write fence: a write leaves the process only if the fence allows it at the moment its bytes go
// out, so a leader that lost its Lease (or was frozen past it) sends nothing more.
import type { ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/**
 * Decides, at the moment a write would go out, whether it may: undefined to send it, else why not.
 * Leader election fences the client so: only a leader whose lease is current writes.
 */
export type WriteFence = () => string | undefined;

/** A write the fence held back: it never left the process. */
export class WriteRefused extends Error {
  override readonly name = 'WriteRefused';
}

/** Methods that change nothing on the server; every other method is a write. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether `method` writes, and so goes through the fence. */
export const isWrite = (method: string): boolean => !READ_METHODS.has(method);

/**
 * Sends the request's headers and body only once its connection is up, and only if `fence` allows
 * it then: the check and the hand-over of the bytes to the kernel happen in one turn of the event
 * loop, so a process frozen in between (SIGSTOP) cannot wake to a write queued before it froze.
 */
export function endWhenFenceAllows(req: ClientRequest, body: string | undefined, fence: WriteFence): void {
  const go = () => {
    const refusal = fence();
    if (refusal === undefined) req.end(body);
    else req.destroy(new WriteRefused(refusal));
  };
  req.once('socket', (socket: Socket) => {
    // A new connection is still connecting when handed over; a kept-alive one is ready.
    if (!socket.connecting) go();
    else socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', go);
  });
}
