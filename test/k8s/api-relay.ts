/**
 * A loopback TCP relay between a client and the real API server, for tests of what a
 * client does when the connection misbehaves: `freeze` stops every byte on the
 * connections open now while they stay open (a relay or NAT that dropped them), `block`
 * holds new ones the same way until `unblock`, and `cut` is the API server gone (open
 * connections reset, new ones closed at once) until `restore`.
 */
import net from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';

export interface ApiRelay {
  readonly port: number;
  freeze(): void;
  block(): void;
  unblock(): void;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
  /** The kube config with the API server reached through the relay. */
  kubeConfig(base: KubeConfig): KubeConfig;
}

export async function startApiRelay(target: URL): Promise<ApiRelay> {
  const open = new Set<{ client: net.Socket; upstream: net.Socket }>();
  const frozen: net.Socket[] = [];
  let blocked = false;
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    if (blocked) {
      client.pause();
      frozen.push(client);
      return;
    }
    const upstream = net.connect(Number(target.port), target.hostname);
    const pair = { client, upstream };
    open.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = (): void => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    freeze() {
      for (const { client, upstream } of open) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
        frozen.push(client, upstream);
      }
      open.clear();
    },
    block() {
      blocked = true;
    },
    unblock() {
      blocked = false;
    },
    cut() {
      cut = true;
      for (const { client, upstream } of open) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      open.clear();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of frozen) socket.destroy();
        for (const { client } of open) client.destroy();
        server.close(() => resolve());
      }),
    kubeConfig(base: KubeConfig): KubeConfig {
      const config = new (base.constructor as new () => KubeConfig)();
      config.loadFromString(base.exportConfig());
      const cluster = config.getCurrentCluster()!;
      const server = new URL(cluster.server);
      server.port = String(port);
      config.clusters = config.clusters.map((c) => (c.name === cluster.name ? { ...c, server: server.toString().replace(/\/$/, '') } : c));
      return config;
    },
  };
}
