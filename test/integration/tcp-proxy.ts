// A TCP relay to the real API server that a test can cut or partition, to put a network fault between
// one client (the operator, a leader candidate) and the server while everyone else still reaches it.
import { AddressInfo, connect, createServer, Server, Socket } from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  /** Pairs relayed (client, upstream); a partition unpipes them and a heal pipes them again. */
  private readonly pairs = new Set<[Socket, Socket]>();
  private refusing = false;
  private partitioned = false;
  private readonly server: Server;

  private constructor(target: URL) {
    this.server = createServer((client) => {
      if (this.refusing) return void client.destroy();
      const upstream = connect(Number(target.port || 443), target.hostname);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      for (const s of pair) {
        this.sockets.add(s);
        s.on('close', () => {
          this.sockets.delete(s);
          this.pairs.delete(pair);
          // A closed end closes the other, as a relay must (pipe() alone does not while unpiped).
          for (const other of pair) if (other !== s) other.destroy();
        });
        s.on('error', () => undefined); // a cut connection errors; that is the point
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

  private relay([client, upstream]: [Socket, Socket]): void {
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Drops every open connection and refuses new ones. */
  cut(): void {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
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

  /** Ends a partition: what was held is delivered, as TCP retransmits after a partition heals. */
  heal(): void {
    this.partitioned = false;
    for (const pair of this.pairs) this.relay(pair);
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}
