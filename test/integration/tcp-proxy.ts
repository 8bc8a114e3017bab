// A TCP relay to the real API server that a test can put between one client (the operator) and the
// server, while everyone else still reaches the server directly: to reset the client's connections,
// to partition it silently (nothing passes, nothing is closed) and heal it, or to cut it off.
import { AddressInfo, connect, createServer, Server, Socket } from 'node:net';

export class TcpProxy {
  /** Relayed pairs (client, upstream). */
  private readonly pairs = new Set<[Socket, Socket]>();
  private partitioned = false;
  private refusing = false;
  private readonly server: Server;
  /** Connections accepted so far (a client reconnecting after a reset shows here). */
  accepted = 0;

  private constructor(target: URL) {
    this.server = createServer((client) => {
      if (this.refusing) return void client.destroy();
      this.accepted++;
      const upstream = connect(Number(target.port || 443), target.hostname);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      for (const s of pair) {
        s.on('close', () => {
          this.pairs.delete(pair);
          // A closed end closes the other, as a relay must (pipe() alone does not while unpiped).
          for (const other of pair) if (other !== s) other.destroy();
        });
        s.on('error', () => undefined); // a reset connection errors; that is the point
      }
      if (this.partitioned) for (const s of pair) s.pause();
      else this.relay(pair);
    });
  }

  static async start(target: URL): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await new Promise<void>((r) => proxy.server.listen(0, '127.0.0.1', r));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Open connections. */
  get connections(): number {
    return this.pairs.size;
  }

  private relay([client, upstream]: [Socket, Socket]): void {
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Resets every open connection (as a network blip does); new ones are relayed as before. */
  reset(): void {
    for (const pair of this.pairs) for (const s of pair) s.destroy();
  }

  /** The server unreachable: every open connection dropped and new ones refused, for good. */
  cut(): void {
    this.refusing = true;
    this.reset();
  }

  /**
   * A silent partition: nothing passes either way and nothing is closed (no reset, no FIN), as when
   * packets are dropped on the way; new connections are accepted and held. heal() lets it all through.
   */
  partition(): void {
    this.partitioned = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Ends a partition: what was held is delivered, as TCP retransmits once a partition heals. */
  heal(): void {
    this.partitioned = false;
    for (const pair of this.pairs) this.relay(pair);
  }

  close(): Promise<void> {
    this.reset();
    return new Promise((r) => this.server.close(() => r()));
  }
}
