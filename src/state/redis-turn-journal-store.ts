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
    // One MULTI per app: an app's lists and its cores' set share a slot (runtime-keys.ts), the set of apps is a
    // key of its own, so on a Cluster each is one node's transaction.
    const apps = keys.turnJournalApps();
    const replies = await Promise.all([
      ...[...byApp].map(([app, lines]) =>
        this.client.call(() => {
          const list = keys.turnJournal(app, core);
          const cores = keys.turnJournalCores(app);
          return redis
            .multi()
            .lpush(list, ...lines)
            .ltrim(list, 0, size - 1)
            .pexpire(list, ttlMs)
            .zadd(cores, now, core)
            .zremrangebyscore(cores, '-inf', now - ttlMs)
            .pexpire(cores, ttlMs)
            .exec();
        }),
      ),
      this.client.call(() =>
        redis
          .multi()
          .zadd(apps, ...[...byApp.keys()].flatMap((app) => [now, app]))
          .zremrangebyscore(apps, '-inf', now - ttlMs)
          .pexpire(apps, ttlMs)
          .exec(),
      ),
    ]);
    const failed = replies.flatMap((reply) => reply ?? []).find(([error]) => error !== null)?.[0];
    if (failed) throw this.client.error(failed);
  }

  async recent(app?: string): Promise<TurnJournalEntry[]> {
    const { redis, keys } = this.client;
    const { size, ttlMs, maxCores = 64, maxApps = 256 } = this.options;
    const since = Date.now() - ttlMs;
    const apps = app !== undefined ? [app] : await this.client.call(() => redis.zrevrangebyscore(keys.turnJournalApps(), '+inf', since, 'LIMIT', 0, maxApps));
    if (apps.length === 0) return [];
    // Per app, its cores' set and then its lists: one slot each (a Cluster refuses a pipeline across slots).
    const read = await Promise.all(
      apps.map(async (name) => {
        const cores = await this.client.call(() => redis.zrevrangebyscore(keys.turnJournalCores(name), '+inf', since, 'LIMIT', 0, maxCores));
        if (cores.length === 0) return [];
        const replies = await this.client.call(() => {
          const pipeline = redis.pipeline();
          for (const core of cores) pipeline.lrange(keys.turnJournal(name, core), 0, size - 1);
          return pipeline.exec();
        });
        return replies ?? [];
      }),
    );
    const entries: TurnJournalEntry[] = [];
    for (const [error, lines] of read.flat()) {
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
