/**
 * Moves a Sentinel client to the new master as soon as the sentinels announce
 * a failover (`+switch-master`), instead of at its next failed command.
 *
 * ioredis has this built in (`failoverDetector`), but its detector, on a switch
 * heard while the client is still in its reconnect loop asking the sentinels
 * (the master it knew is gone), closes the connector under that attempt: the
 * attempt fails with "Connection is closed." and the client ends for good,
 * with no further retry. With slow sentinels (cluster DNS, a loaded network)
 * that is every failover. This watch only ever asks a *ready* client to
 * reconnect (`disconnect(true)`, which goes through its retry strategy); a
 * client not ready is already reconnecting and asks the sentinels anyway.
 *
 * The watch holds one subscriber per configured sentinel, each reconnecting
 * forever with backoff, and closes them when its client is closed: on the
 * client's 'end', and on `disconnect()` (a client closed between two reconnect
 * attempts never emits 'end').
 */
import { Redis, type RedisOptions } from 'ioredis';
import { backoffDelay } from '../shared/backoff.js';

const CHANNEL = '+switch-master';

/** Whether `client` follows a master through Sentinel (has sentinels and a master name). */
export function isSentinelClient(client: Redis): boolean {
  return (client.options.sentinels?.length ?? 0) > 0 && typeof client.options.name === 'string';
}

/** Starts watching the sentinels of `client` (a Sentinel client) for switches of its master; ends with the client. */
export function watchSentinelSwitches(client: Redis): void {
  const options = client.options;
  const masterName = options.name!;
  const subscribers = (options.sentinels ?? []).map((sentinel) => {
    const subscriber = new Redis({
      host: sentinel.host ?? '127.0.0.1',
      port: sentinel.port ?? 26379,
      ...(typeof options.sentinelUsername === 'string' ? { username: options.sentinelUsername } : {}),
      ...(typeof options.sentinelPassword === 'string' ? { password: options.sentinelPassword } : {}),
      ...(options.sentinelTLS !== undefined ? { tls: options.sentinelTLS } : {}),
      connectTimeout: options.connectTimeout ?? 2000,
      // A sentinel answers no INFO about loading data.
      enableReadyCheck: false,
      // Subscribed again by hand on each 'ready': a subscription queued while a sentinel is down could be dropped.
      autoResubscribe: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (attempt: number) => backoffDelay(attempt - 1, { initialMs: 100, maxMs: 2000 }),
      connectionName: 'uhlp-switch-watch',
    } satisfies RedisOptions);
    subscriber.on('error', () => {
      // A sentinel away: its retry strategy keeps trying; the others (and the client's own reconnects) still cover.
    });
    subscriber.on('ready', () => {
      subscriber.subscribe(CHANNEL).catch(() => subscriber.disconnect(true));
    });
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === CHANNEL) switched(message);
    });
    return subscriber;
  });

  // "<master name> <old ip> <old port> <new ip> <new port>", told by each sentinel: act on the first telling only.
  let lastSwitch: string | undefined;
  const switched = (message: string): void => {
    const [name, , , host, port] = message.split(' ');
    if (name !== masterName || message === lastSwitch) return;
    lastSwitch = message;
    if (client.status !== 'ready') return;
    // Already on the new master (it reconnected on its own since the master went). Sentinels announcing host names
    // never match the socket's IP here: the client then reconnects once more, which is harmless.
    const stream = (client as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
    if (stream?.remoteAddress === host && String(stream?.remotePort) === port) return;
    client.disconnect(true);
  };

  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    for (const subscriber of subscribers) subscriber.disconnect();
  };
  client.once('end', close);
  const disconnect = client.disconnect.bind(client);
  client.disconnect = (reconnect = false): void => {
    if (!reconnect) close();
    disconnect(reconnect);
  };
}
