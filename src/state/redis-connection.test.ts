import { describe, expect, it } from 'vitest';
import { masterMovedDetector, NOREPLICAS_RECONNECT_MS, sentinelOptions } from './redis-connection.js';
import { parseRedisUrl } from './redis-url.js';

describe('masterMovedDetector', () => {
  it('asks the sentinels again on READONLY, every time', () => {
    const moved = masterMovedDetector(() => 0);
    expect(moved(new Error("READONLY You can't write against a read only replica."))).toBe(true);
    expect(moved(new Error("READONLY You can't write against a read only replica."))).toBe(true);
  });

  it('asks the sentinels again on NOREPLICAS (an old master left without replicas), at most once a second', () => {
    let now = 10_000;
    const moved = masterMovedDetector(() => now);
    const noReplicas = new Error('NOREPLICAS Not enough good replicas to write.');
    expect(moved(noReplicas)).toBe(true);
    now += NOREPLICAS_RECONNECT_MS - 1;
    expect(moved(noReplicas)).toBe(false);
    now += 1;
    expect(moved(noReplicas)).toBe(true);
  });

  it('keeps the connection on any other error', () => {
    const moved = masterMovedDetector(() => 0);
    for (const message of ['ERR wrong number of arguments', 'WRONGTYPE Operation against a key holding the wrong kind of value', 'NOSCRIPT No matching script', 'OOM command not allowed', 'BUSY Redis is busy running a script']) {
      expect(moved(new Error(message)), message).toBe(false);
    }
  });

  it('is what a Sentinel client reconnects on', () => {
    const target = parseRedisUrl('redis+sentinel://127.0.0.1:26379/mymaster');
    if (target.kind !== 'sentinel') throw new Error(`parsed as ${target.kind}`);
    const options = sentinelOptions(target);
    expect(options.failoverDetector).toBe(true);
    const reconnectOnError = options.reconnectOnError as (error: Error) => boolean;
    expect(reconnectOnError(new Error('NOREPLICAS Not enough good replicas to write.'))).toBe(true);
    expect(reconnectOnError(new Error('ERR unknown command'))).toBe(false);
  });
});
