import net from 'node:net';

/**
 * A loopback port free at the time of asking: something is about to listen on
 * it (a test service), or nothing will, so connections to it are refused at once.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
