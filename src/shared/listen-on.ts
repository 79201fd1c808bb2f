import type net from 'node:net';

/**
 * Listens on a TCP host and port or a Unix socket path, resolving once bound; a
 * bind that fails (port taken, no such address) rejects instead of becoming an
 * unhandled `error` event on the server.
 */
export function listenOn(server: net.Server, options: net.ListenOptions): Promise<net.AddressInfo | string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => {
      server.off('error', reject);
      resolve(server.address()!);
    });
  });
}
