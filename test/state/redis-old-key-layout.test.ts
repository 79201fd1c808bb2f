/**
 * An upgrade across the Cluster key layout, on a real Redis (UHLP_TEST_REDIS_URL;
 * fails, never skips, without it): the state is written under the names the
 * release before that layout used, by the scripts that release ran (the same
 * Lua files, unchanged since, except cron-fire-3 whose earlier text is below),
 * and the stores of this version read it as docs/runtime-state.md says — a run
 * record renamed on first touch, retries under the old name promoted as they
 * fall due, old dead letters adopted when the route starts, the last cron slot
 * fired under the old name counted.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntimeStore } from '../../src/state/create-runtime-store.js';
import { DELIVERY_GROUP, MAX_DEAD_LETTERS, deadLetterFields, retryMember, type DeliveryMessage, type StreamAddress } from '../../src/state/delivery-store.js';
import { LUA_SCRIPT_DIR } from '../../src/state/lua-scripts.js';
import { RedisDeliveryStore } from '../../src/state/redis-delivery-store.js';
import type { RuntimeStore } from '../../src/state/runtime-store.js';
import { RuntimeKeys } from '../../src/state/runtime-keys.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { dropKeys } from '../sources/redis-keys.js';
import { waitFor } from '../helpers/wait-for.js';

/** cron-fire-3.lua as the release before the Cluster layout shipped it (no `meta` field yet). */
const PREVIOUS_CRON_FIRE = `
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
if tonumber(ARGV[1]) <= last then
  return 0
end
if not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'payload', ARGV[4], 'invocationId', ARGV[5])
return 1
`;

const script = (file: string): string => readFileSync(new URL(file, LUA_SCRIPT_DIR), 'utf8');

/** The names the release before the Cluster layout gave these keys (its runtime-keys.ts). */
function previousNames(prefix: string) {
  const stream = (a: StreamAddress): string => new RuntimeKeys(prefix).deliveryStream(a.kind, a.app, a.name);
  return {
    run: (id: string) => `${prefix}run:${id}`,
    activeRuns: `${prefix}runs:active`,
    retries: (a: StreamAddress) => `${stream(a)}:retry`,
    dead: (a: StreamAddress) => `${stream(a)}:dead`,
    cronSlot: (app: string, job: string, slot: number) => `${prefix}cronslot:${app}:${job}:${slot}`,
    cronLast: (app: string, job: string) => `${prefix}cronlast:${app}:${job}`,
    stream,
  };
}

describe('an upgrade from the layout before Cluster hash tags, on one Redis', () => {
  let prefix: string;
  let old: Redis;
  let runtime: RuntimeStore;
  let delivery: RedisDeliveryStore;

  beforeEach(async () => {
    prefix = uniqueKeyPrefix('old-layout');
    old = new Redis(TEST_REDIS_URL);
    runtime = await createRuntimeStore({ state: TEST_REDIS_URL, keyPrefix: prefix });
    delivery = await RedisDeliveryStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix, timeoutMs: 5000 });
  });

  afterEach(async () => {
    old.disconnect();
    await runtime.close();
    await delivery.close();
    await dropKeys(prefix);
  });

  it('moves a run record to its new name on first touch, and the run goes on from there', async () => {
    const names = previousNames(prefix);
    const keys = new RuntimeKeys(prefix);
    const json = JSON.stringify({ id: 'RUN-old', status: 'running', step: 's3' });
    // The previous release's createRun: run-create-2 on `run:<id>` and `runs:active`.
    expect(await old.eval(script('run-create-2.lua'), 2, names.run('RUN-old'), names.activeRuns, 'RUN-old', json, 60_000, 1, Date.now())).toBe(1);

    // A new core starting lists the active runs to resume them: the old record is there, under its new name now.
    expect(await runtime.runs.listActiveRuns()).toEqual(['RUN-old']);
    expect(await old.exists(names.run('RUN-old'))).toBe(0);
    expect(await old.hgetall(keys.run('RUN-old'))).toEqual({ version: '1', json });
    expect(await old.pttl(keys.run('RUN-old'))).toBeGreaterThan(50_000);
    expect(await runtime.runs.getRun('RUN-old')).toEqual({ json, version: 1 });
    const next = JSON.stringify({ id: 'RUN-old', status: 'completed' });
    expect(await runtime.runs.updateRun('RUN-old', 1, next, 60_000, false)).toBe(true);
    expect(await runtime.runs.getRun('RUN-old')).toEqual({ json: next, version: 2 });
    expect(await runtime.runs.listActiveRuns()).toEqual([]);
  });

  it('reads a run the new core is asked for by id (getRun), and never overwrites a record it already has under the new name', async () => {
    const names = previousNames(prefix);
    await old.eval(script('run-create-2.lua'), 2, names.run('RUN-a'), names.activeRuns, 'RUN-a', '{"v":"old"}', 60_000, 0, Date.now());
    expect(await runtime.runs.getRun('RUN-a')).toEqual({ json: '{"v":"old"}', version: 1 });
    // Both names held (an old core wrote after the new one had moved the record): the new one wins, the old stays untouched.
    await old.eval(script('run-create-2.lua'), 2, names.run('RUN-a'), names.activeRuns, 'RUN-a', '{"v":"stale"}', 60_000, 0, Date.now());
    expect(await runtime.runs.getRun('RUN-a')).toEqual({ json: '{"v":"old"}', version: 1 });
    expect(await runtime.runs.getRun('RUN-none')).toBeUndefined();
  });

  it('looks for a run under the old name once per core, not at each of its steps', async () => {
    const monitor = await old.monitor();
    const renames: string[] = [];
    let probed = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'renamenx' && args[1]?.startsWith(prefix)) renames.push(args[1]);
      if (args[0]?.toLowerCase() === 'get' && args[1] === `${prefix}probe`) probed = true;
    });
    try {
      expect(await runtime.runs.createRun('RUN-new', '{"step":0}', 60_000, true)).toBe(true);
      for (let step = 1; step <= 5; step++) {
        expect(await runtime.runs.getRun('RUN-new')).toEqual({ json: `{"step":${step - 1}}`, version: step });
        expect(await runtime.runs.updateRun('RUN-new', step, `{"step":${step}}`, 60_000, true)).toBe(true);
      }
      // Commands reach the monitor in the order Redis ran them: once it has seen this one, it has seen the steps'.
      await old.get(`${prefix}probe`);
      await waitFor(() => probed, { timeoutMs: 5000, what: 'the monitor to catch up' });
      expect(renames).toEqual([`${prefix}run:RUN-new`]);
    } finally {
      monitor.disconnect();
    }
  });

  it('promotes retries kept under the old name when they fall due, with their attempt count', async () => {
    const names = previousNames(prefix);
    const address: StreamAddress = { kind: 'queue', app: 'shop', name: 'orders' };
    await delivery.ensureGroup(address);
    // The previous release: a message read by a core, failed, and moved to `<stream>:retry` by queue-retry-2.
    const entry = (await old.xadd(names.stream(address), '*', 'payload', '{"order":7}', 'invocationId', 'inv-7'))!;
    await old.xreadgroup('GROUP', DELIVERY_GROUP, 'old-core', 'COUNT', 10, 'STREAMS', names.stream(address), '>');
    const message: DeliveryMessage = { id: entry, invocationId: 'inv-7', payload: '{"order":7}', attempt: 1, publishedAt: Date.now() };
    const due = Date.now() + 200;
    expect(await old.eval(script('queue-retry-2.lua'), 2, names.stream(address), names.retries(address), DELIVERY_GROUP, entry, due, retryMember(message, randomUUID()))).toBe(1);
    expect(await old.zcard(names.retries(address))).toBe(1);

    expect(await delivery.promoteDue(address, due - 100, 10)).toBe(0);
    expect(await delivery.promoteDue(address, due, 10)).toBe(1);
    expect(await old.zcard(names.retries(address))).toBe(0);
    const reader = delivery.reader();
    try {
      const [again, ...rest] = await reader.read(address, 'new-core', 10, 1000);
      expect(rest).toEqual([]);
      expect(again).toMatchObject({ invocationId: 'inv-7', payload: '{"order":7}', attempt: 2 });
    } finally {
      await reader.close();
    }
  });

  it('adopts dead letters kept under the old name when the route starts, and redrives them', async () => {
    const names = previousNames(prefix);
    const address: StreamAddress = { kind: 'queue', app: 'shop', name: 'invoices' };
    // The previous release: the group, a message failed three times, queue-dead-letter-2 into `<stream>:dead`.
    await old.xgroup('CREATE', names.stream(address), DELIVERY_GROUP, '0', 'MKSTREAM');
    const entry = (await old.xadd(names.stream(address), '*', 'payload', '{"invoice":3}', 'invocationId', 'inv-3'))!;
    await old.xreadgroup('GROUP', DELIVERY_GROUP, 'old-core', 'COUNT', 10, 'STREAMS', names.stream(address), '>');
    const message: DeliveryMessage = { id: entry, invocationId: 'inv-3', payload: '{"invoice":3}', attempt: 3, publishedAt: Date.now() };
    const fields = deadLetterFields(message, 'failed', { code: 'UHLP_SCRIPT_ERROR', message: 'boom' }, Date.now());
    expect(await old.eval(script('queue-dead-letter-2.lua'), 2, names.stream(address), names.dead(address), DELIVERY_GROUP, entry, MAX_DEAD_LETTERS, ...fields)).toBe(1);

    await delivery.ensureGroup(address);
    expect(await old.exists(names.dead(address))).toBe(0);
    const [letter, ...others] = await delivery.deadLetters(address, 10);
    expect(others).toEqual([]);
    expect(letter).toMatchObject({ invocationId: 'inv-3', payload: '{"invoice":3}', attempts: 3, reason: 'failed', error: 'UHLP_SCRIPT_ERROR' });
    expect((await delivery.stats(address, Date.now())).deadLetters).toBe(1);
    expect(await delivery.redrive(address, 10, Date.now())).toBe(1);
    const reader = delivery.reader();
    try {
      const [again] = await reader.read(address, 'new-core', 10, 1000);
      expect(again).toMatchObject({ invocationId: 'inv-3', payload: '{"invoice":3}' });
    } finally {
      await reader.close();
    }
  });

  it('leaves dead letters under the old name alone when the new stream has some already (RENAMENX), rather than mix or lose them', async () => {
    const names = previousNames(prefix);
    const address: StreamAddress = { kind: 'queue', app: 'shop', name: 'both' };
    const keys = new RuntimeKeys(prefix);
    await old.xadd(keys.deliveryDead('queue', 'shop', 'both'), '*', 'payload', '{}', 'invocationId', 'new-1', 'attempts', '1', 'reason', 'failed', 'deadAt', String(Date.now()));
    await old.xadd(names.dead(address), '*', 'payload', '{}', 'invocationId', 'old-1', 'attempts', '1', 'reason', 'failed', 'deadAt', String(Date.now()));
    await delivery.ensureGroup(address);
    expect((await delivery.deadLetters(address, 10)).map((letter) => letter.invocationId)).toEqual(['new-1']);
    expect(await old.xlen(names.dead(address))).toBe(1);
  });

  it('counts the last cron slot fired under the old name, so the catch-up after the upgrade fires no slot twice', async () => {
    const names = previousNames(prefix);
    const address: StreamAddress = { kind: 'cron', app: 'shop', name: 'nightly' };
    const slot = Date.parse('2026-11-29T02:00:00Z');
    // The previous release's fireCronSlot: cron-fire-3 (its text then) on `cronslot:…`, `cronlast:…` and the stream.
    expect(await old.eval(PREVIOUS_CRON_FIRE, 3, names.cronSlot('shop', 'nightly', slot), names.cronLast('shop', 'nightly'), names.stream(address), slot, 60_000, 'old-core', '{}', 'cron-1')).toBe(1);

    expect(await delivery.lastCronSlot('shop', 'nightly')).toBe(slot);
    // A later slot fired by this version counts from then on: the greater of the two.
    const later = slot + 86_400_000;
    expect(await delivery.fireCronSlot(address, later, 'new-core', 60_000, { payload: '{}', invocationId: 'cron-2' })).toBe(true);
    expect(await delivery.lastCronSlot('shop', 'nightly')).toBe(later);
    expect(await delivery.lastCronSlot('shop', 'never')).toBeUndefined();
  });
});
