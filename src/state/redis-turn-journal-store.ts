/**
 * The turn journal on Redis: a list per app and core (LPUSH, LTRIM to `size`,
 * PEXPIRE `ttlMs`, every app of a batch in one MULTI), a sorted set per app of
 * the cores that wrote its turns and one of the apps, each scored by when it
 * was last written, so that a reader finds the lists of one app (or of all)
 * without a key scan, and a core or an app that stopped drops out once its
 * lists expired. Per app: a noisy app trims only its own lists, and a reader
 * filtering by app reads that app's lists alone.
 */
import type { TurnJournalEntry } from '../turns/turn-journal-entry.js';
import type { RedisStoreClient } from './redis-calls.js';
import type { TurnJournalStore } from './turn-journal-store.js';

export interface RedisTurnJournalOptions {
  /** This core's id. */
  readonly core: string;
  /** Records kept per app and core. */
  readonly size: number;
  /** How long a list outlives its last write, ms. */
  readonly ttlMs: number;
  /** Cores read per app at most. @defaultValue 64 */
  readonly maxCores?: number;
  /** Apps read at most by a reader that names none. @defaultValue 256 */
  readonly maxApps?: number;
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
    const byApp = new Map<string, string[]>();
    for (const entry of entries) {
      let lines = byApp.get(entry.app);
      if (lines === undefined) byApp.set(entry.app, (lines = []));
      lines.push(JSON.stringify(entry));
    }
    const now = Date.now();
    const replies = await this.client.call(() => {
      const multi = redis.multi();
      for (const [app, lines] of byApp) {
        const list = keys.turnJournal(app, core);
        const cores = keys.turnJournalCores(app);
        multi
          .lpush(list, ...lines)
          .ltrim(list, 0, size - 1)
          .pexpire(list, ttlMs)
          .zadd(cores, now, core)
          .zremrangebyscore(cores, '-inf', now - ttlMs)
          .pexpire(cores, ttlMs)
          .zadd(keys.turnJournalApps(), now, app);
      }
      return multi.zremrangebyscore(keys.turnJournalApps(), '-inf', now - ttlMs).pexpire(keys.turnJournalApps(), ttlMs).exec();
    });
    const failed = replies?.find(([error]) => error !== null)?.[0];
    if (failed) throw this.client.error(failed);
  }

  async recent(app?: string): Promise<TurnJournalEntry[]> {
    const { redis, keys } = this.client;
    const { size, ttlMs, maxCores = 64, maxApps = 256 } = this.options;
    const since = Date.now() - ttlMs;
    const apps = app !== undefined ? [app] : await this.client.call(() => redis.zrevrangebyscore(keys.turnJournalApps(), '+inf', since, 'LIMIT', 0, maxApps));
    if (apps.length === 0) return [];
    const coresOf = await this.client.call(() => {
      const pipeline = redis.pipeline();
      for (const name of apps) pipeline.zrevrangebyscore(keys.turnJournalCores(name), '+inf', since, 'LIMIT', 0, maxCores);
      return pipeline.exec();
    });
    const lists: string[] = [];
    (coresOf ?? []).forEach(([error, cores], index) => {
      if (error !== null) throw this.client.error(error);
      for (const core of cores as string[]) lists.push(keys.turnJournal(apps[index]!, core));
    });
    if (lists.length === 0) return [];
    const read = await this.client.call(() => {
      const pipeline = redis.pipeline();
      for (const list of lists) pipeline.lrange(list, 0, size - 1);
      return pipeline.exec();
    });
    const entries: TurnJournalEntry[] = [];
    for (const [error, lines] of read ?? []) {
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
