import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listenOn } from './listen-on.js';

describe('listenOn', () => {
  const servers: net.Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it('resolves with the address bound', async () => {
    const server = net.createServer();
    servers.push(server);
    const address = (await listenOn(server, { host: '127.0.0.1', port: 0 })) as net.AddressInfo;
    expect(address.address).toBe('127.0.0.1');
    expect(address.port).toBeGreaterThan(0);
  });

  it('rejects a port already taken, and leaves no error listener behind', async () => {
    const first = net.createServer();
    servers.push(first);
    const { port } = (await listenOn(first, { host: '127.0.0.1', port: 0 })) as net.AddressInfo;
    const second = net.createServer();
    await expect(listenOn(second, { host: '127.0.0.1', port })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(second.listenerCount('error')).toBe(0);
  });
});
