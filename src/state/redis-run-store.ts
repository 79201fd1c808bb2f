/**
 * Workflow run records on Redis: one hash per run (version and JSON) and a
 * sorted set of the active runs' ids by the time they became active
 * (run-create-2, run-update-2 keep both in step; runs-prune-n takes out the ids
 * whose record expired, checking and removing in one step). Each record sits in the
 * active set's slot (runtime-keys.ts), so these scripts run on a Redis Cluster.
 *
 * Versions before that layout named a record `<prefix>run:<id>`. On a single
 * Redis such a record is moved to its new name (RENAMENX) the first time it is
 * touched, so runs stored by an earlier version are read, resumed and kept.
 * The ids this store has created or already looked up under the old name are
 * remembered (the last ADOPTED_IDS of them), so a run's later steps cost no
 * RENAMENX: with no core of the earlier version left (the documented upgrade),
 * nothing writes under the old name again.
 */
import { isCluster } from './redis-connection.js';
import type { RedisStoreClient } from './redis-calls.js';
import { DEFAULT_ACTIVE_RUNS_LIMIT, type RunStore, type StoredRun } from './run-store.js';

/** Run ids remembered as having no record under the old name; past it, the oldest are forgotten (and looked up again if touched). */
const ADOPTED_IDS = 10_000;

export class RedisRunStore implements RunStore {
  /** Ids whose record is known to be under its new name, oldest first. */
  private readonly adopted = new Set<string>();

  constructor(private readonly client: RedisStoreClient) {}

  async createRun(id: string, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    const { keys } = this.client;
    await this.adoptLegacy(id);
    const created = await this.client.script('runCreate', [keys.run(id), keys.activeRuns()], [id, json, ttlMs, active ? 1 : 0, Date.now()]);
    return created === 1;
  }

  async getRun(id: string): Promise<StoredRun | undefined> {
    await this.adoptLegacy(id);
    const [version, json] = await this.client.call(() => this.client.redis.hmget(this.client.keys.run(id), 'version', 'json'));
    if (version === null || version === undefined || json === null || json === undefined) return undefined;
    return { json, version: Number(version) };
  }

  async updateRun(id: string, expectedVersion: number, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    const { keys } = this.client;
    await this.adoptLegacy(id);
    const updated = await this.client.script('runUpdate', [keys.run(id), keys.activeRuns()], [id, expectedVersion, json, ttlMs, active ? 1 : 0, Date.now()]);
    return updated === 1;
  }

  async markRunCancel(id: string, ttlMs: number): Promise<void> {
    await this.client.call(() => this.client.redis.set(this.client.keys.runCancel(id), '1', 'PX', ttlMs));
  }

  async runCancelMarked(id: string): Promise<boolean> {
    return (await this.client.call(() => this.client.redis.exists(this.client.keys.runCancel(id)))) === 1;
  }

  async listActiveRuns(limit = DEFAULT_ACTIVE_RUNS_LIMIT): Promise<string[]> {
    const { redis, keys } = this.client;
    const set = keys.activeRuns();
    const ids = await this.client.call(() => redis.zrange(set, '0', String(limit - 1)));
    if (ids.length === 0) return [];
    for (const id of ids) await this.adoptLegacy(id);
    // The check and the removal of ids whose record expired are one script: a read that failed, or was made on a
    // node a failover then left behind, never takes a live run out of the set (and out of the orphan sweep).
    const kept = (await this.client.script('runsPrune', [set, ...ids.map((id) => keys.run(id))], ids)) as number[];
    return ids.filter((_, i) => kept[i] === 1);
  }

  async joinSessionQueue(sessionId: string, ticket: string, max: number, ttlMs: number): Promise<number> {
    const { keys } = this.client;
    const place = await this.client.script('sessionQueueJoin', [keys.sessionQueue(sessionId), keys.sessionQueueTickets(sessionId)], [ticket, max, ttlMs, Date.now()]);
    return Number(place);
  }

  async sessionQueueHead(sessionId: string, ticket: string, ttlMs: number): Promise<boolean | undefined> {
    const { keys } = this.client;
    const head = Number(await this.client.script('sessionQueueHead', [keys.sessionQueue(sessionId), keys.sessionQueueTickets(sessionId)], [ticket, ttlMs, Date.now()]));
    return head === -1 ? undefined : head === 1;
  }

  async leaveSessionQueue(sessionId: string, ticket: string): Promise<void> {
    const { redis, keys } = this.client;
    // Both keys share the queue's slot, so one MULTI takes the ticket out of both.
    await this.client.call(() => redis.multi().zrem(keys.sessionQueue(sessionId), ticket).hdel(keys.sessionQueueTickets(sessionId), ticket).exec());
  }

  /** On a single Redis, moves a record an earlier version stored under `<prefix>run:<id>` to its name now; a Cluster never held one. */
  private async adoptLegacy(id: string): Promise<void> {
    const { redis, keys } = this.client;
    if (isCluster(redis) || this.adopted.has(id)) return;
    try {
      await this.client.call(() => redis.renamenx(keys.legacyRun(id), keys.run(id)));
    } catch (error) {
      // No record under the old name: the usual case.
      if (!(error instanceof Error && /no such key/i.test(error.message))) throw error;
    }
    this.adopted.add(id);
    if (this.adopted.size > ADOPTED_IDS) this.adopted.delete(this.adopted.values().next().value!);
  }
}
