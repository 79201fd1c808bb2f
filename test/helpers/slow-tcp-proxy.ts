/**
 * A loopback TCP proxy that holds back every chunk the upstream sends by
 * `delayMs` (what the client sends goes through at once): a slow or distant
 * server, e.g. a sentinel behind cluster DNS and a busy network, on loopback.
 * Chunks keep their order (timers of one delay fire in the order they were set).
 */
import net from 'node:net';

export class SlowTcpProxy {
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(upstreamPort: number, delayMs: number): Promise<SlowTcpProxy> {
    let proxy: SlowTcpProxy | undefined;
    const server = net.createServer((client) => {
      const upstream = net.connect(upstreamPort, '127.0.0.1');
      proxy!.sockets.add(client).add(upstream);
      client.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => {
        setTimeout(() => {
          if (!client.destroyed) client.write(chunk);
        }, delayMs);
      });
      // Either side closing closes the other, after the chunks still held back.
      const closeBoth = (): void => {
        setTimeout(() => {
          client.destroy();
          upstream.destroy();
        }, delayMs);
      };
      client.on('close', closeBoth).on('error', () => {});
      upstream.on('close', closeBoth).on('error', () => {});
      client.on('close', () => proxy!.sockets.delete(client));
      upstream.on('close', () => proxy!.sockets.delete(upstream));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    proxy = new SlowTcpProxy(server, (server.address() as net.AddressInfo).port);
    return proxy;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
