/**
 * The node:http server that takes the requests an Http1Server hands over
 * (`handOver`), each as a connection of its own that ends with its answer, and
 * serves its other listeners (the core's Unix socket) with the same
 * expectations of a client as the Http1Server has: a client that half-closed
 * its side after its requests still gets its answers (node:http would end the
 * connection at once), and idle connections live as long.
 */
import http from 'node:http';

export function createHandOverServer(listener: http.RequestListener, keepAliveTimeoutMs: number): http.Server {
  const server = http.createServer(listener);
  server.keepAliveTimeout = keepAliveTimeoutMs;
  // node:http's own switch for half-open clients (the default, false, ends the socket on the client's FIN).
  (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  return server;
}
