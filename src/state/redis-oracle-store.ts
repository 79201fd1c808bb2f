/**
 * The optimization oracle's state on Redis: a counters hash per component, a
 * reservoir hash per (component, revision) with its stats and slots
 * (oracle-sample-add-1), a record hash written by compare-and-set
 * (oracle-record-put-1), and a list of candidates, newest first.
 */
import {
  ORACLE_COUNTER_NAMES,
  zeroOracleCounters,
  type OracleCounters,
  type OracleSampleInput,
  type OracleSampleOptions,
  type OracleSampleOutcome,
  type OracleSampleScope,
  type OracleSampleStats,
  type OracleStore,
} from './oracle-store.js';
import type { RedisStoreClient } from './redis-calls.js';

export class RedisOracleStore implements OracleStore {
  constructor(private readonly client: RedisStoreClient) {}

  async incrOracleCounters(appId: string, componentId: string, deltas: Partial<OracleCounters>): Promise<OracleCounters> {
    const { redis, keys } = this.client;
    const key = keys.oracleCounters(appId, componentId);
    const replies = await this.client.call(() => {
      const multi = redis.multi();
      for (const name of ORACLE_COUNTER_NAMES) {
        const delta = deltas[name];
        if (delta) multi.hincrby(key, name, delta);
      }
      return multi.hgetall(key).exec();
    });
    const last = replies?.[replies.length - 1];
    if (!last || last[0]) throw this.client.error(last?.[0] ?? new Error('MULTI returned no reply'));
    return parseCounters(last[1] as Record<string, string>);
  }

  async getOracleCounters(appId: string, componentId: string): Promise<OracleCounters> {
    return parseCounters(await this.client.call(() => this.client.redis.hgetall(this.client.keys.oracleCounters(appId, componentId))));
  }

  async resetOracleCounters(appId: string, componentId: string): Promise<void> {
    await this.client.call(() => this.client.redis.del(this.client.keys.oracleCounters(appId, componentId)));
  }

  async addOracleSample(
    scope: OracleSampleScope,
    sample: OracleSampleInput,
    options: OracleSampleOptions,
  ): Promise<{ outcome: OracleSampleOutcome; stats: OracleSampleStats }> {
    const key = this.client.keys.oracleSamples(scope.appId, scope.componentId, scope.revision);
    const args = [sample.inputHash, sample.outputHash, sample.json, sample.fresh ? '1' : '0', options.limit, options.ttlMs, options.pick];
    const [outcome, seen, stored, repeats, unstable] = (await this.client.script('oracleSampleAdd', [key], args)) as [OracleSampleOutcome, number, number, number, number];
    return { outcome, stats: { seen: Number(seen), stored: Number(stored), repeats: Number(repeats), unstable: Number(unstable) } };
  }

  async getOracleSamples(scope: OracleSampleScope): Promise<{ samples: string[]; stats: OracleSampleStats }> {
    const hash = await this.client.call(() => this.client.redis.hgetall(this.client.keys.oracleSamples(scope.appId, scope.componentId, scope.revision)));
    const stats = { seen: Number(hash.seen ?? 0), stored: Number(hash.stored ?? 0), repeats: Number(hash.repeats ?? 0), unstable: Number(hash.unstable ?? 0) };
    const samples: string[] = [];
    for (let slot = 0; slot < stats.stored; slot++) {
      const json = hash[`s:${slot}`];
      if (json !== undefined) samples.push(json);
    }
    return { samples, stats };
  }

  async getOracleRecord(appId: string, componentId: string): Promise<{ version: number; json: string } | undefined> {
    const [version, json] = await this.client.call(() => this.client.redis.hmget(this.client.keys.oracleRecord(appId, componentId), 'v', 'json'));
    return version === null || version === undefined || typeof json !== 'string' ? undefined : { version: Number(version), json };
  }

  async putOracleRecord(appId: string, componentId: string, json: string, expectedVersion: number): Promise<number | undefined> {
    const version = await this.client.script('oracleRecordPut', [this.client.keys.oracleRecord(appId, componentId)], [expectedVersion, json]);
    return version === null || version === undefined ? undefined : Number(version);
  }

  async addOracleCandidate(appId: string, componentId: string, json: string, keep: number): Promise<void> {
    const key = this.client.keys.oracleCandidates(appId, componentId);
    const replies = await this.client.call(() => this.client.redis.multi().lpush(key, json).ltrim(key, 0, keep - 1).exec());
    const failed = replies?.find(([error]) => error);
    if (!replies || failed) throw this.client.error(failed?.[0] ?? new Error('MULTI returned no reply'));
  }

  async listOracleCandidates(appId: string, componentId: string): Promise<string[]> {
    return this.client.call(() => this.client.redis.lrange(this.client.keys.oracleCandidates(appId, componentId), 0, -1));
  }
}

function parseCounters(hash: Record<string, string>): OracleCounters {
  const counters = zeroOracleCounters();
  for (const name of ORACLE_COUNTER_NAMES) counters[name] = Number(hash[name] ?? 0);
  return counters;
}
