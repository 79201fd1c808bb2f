/**
 * The turn journal on Redis: a list per core (LPUSH, LTRIM to `size`, PEXPIRE
 * `ttlMs`, in one MULTI per batch) and a sorted set of the cores by when they
 * last wrote, so that a reader finds every core's list without a key scan and
 * a core that stopped drops out once its list expired.
 */
import type { TurnJournalEntry } from '../turns/turn-journal-entry.js';
import type { RedisStoreClient } from './redis-calls.js';
import type { TurnJournalStore } from './turn-journal-store.js';

export interface RedisTurnJournalOptions {
  /** This core's id. */
  readonly core: string;
  /** Records kept per core. */
  readonly size: number;
  /** How long a core's list outlives its last write, ms. */
  readonly ttlMs: number;
  /** Cores read at most. @defaultValue 64 */
  readonly maxCores?: number;
}

/** How long a core's list outlives its last record by default: a day. */
export const DEFAULT_TURN_JOURNAL_TTL_MS = 24 * 3600_000;

export class RedisTurnJournalStore implements TurnJournalStore {
  constructor(
    private readonly client: RedisStoreClient,
    private readonly options: RedisTurnJournalOptions,
  ) {}

  async append(entries: readonly TurnJournalEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const { redis, keys } = this.client;
    const { core, size, ttlMs } = this.options;
    const list = keys.turnJournal(core);
    const replies = await this.client.call(() =>
      redis
        .multi()
        .lpush(list, ...entries.map((entry) => JSON.stringify(entry)))
        .ltrim(list, 0, size - 1)
        .pexpire(list, ttlMs)
        .zadd(keys.turnJournalCores(), Date.now(), core)
        .zremrangebyscore(keys.turnJournalCores(), '-inf', Date.now() - ttlMs)
        .pexpire(keys.turnJournalCores(), ttlMs)
        .exec(),
    );
    const failed = replies?.find(([error]) => error !== null)?.[0];
    if (failed) throw this.client.error(failed);
  }

  async recent(): Promise<TurnJournalEntry[]> {
    const { redis, keys } = this.client;
    const { size, ttlMs, maxCores = 64 } = this.options;
    const cores = await this.client.call(() => redis.zrevrangebyscore(keys.turnJournalCores(), '+inf', Date.now() - ttlMs, 'LIMIT', 0, maxCores));
    if (cores.length === 0) return [];
    const lists = await this.client.call(() => {
      const pipeline = redis.pipeline();
      for (const core of cores) pipeline.lrange(keys.turnJournal(core), 0, size - 1);
      return pipeline.exec();
    });
    const entries: TurnJournalEntry[] = [];
    for (const [error, lines] of lists ?? []) {
      if (error !== null) throw this.client.error(error);
      for (const line of lines as string[]) {
        try {
          entries.push(JSON.parse(line) as TurnJournalEntry);
        } catch {
          // A record that does not parse is not shown.
        }
      }
    }
    return entries;
  }
}
