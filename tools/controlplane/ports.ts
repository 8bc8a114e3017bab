// Free loopback ports. The OS picks them; a port is only held until we close the probe socket, so
// callers bind it soon after (the same race envtest accepts).
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('controlplane: no free port'))));
    });
  });
}

/** Distinct free ports: the OS may hand a just-closed port out again, so duplicates are skipped. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
