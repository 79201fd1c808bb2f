/**
 * The oracle's records in the runtime store, with the cache the request path
 * reads them from. Every request of an optimized component needs its stage,
 * and a store round trip per request would cost more than the routing: the
 * request path reads the last record seen (synchronously) and refreshes it in
 * the background once it is older than `freshMs`, so a stage moved by another
 * core is followed within that time. Writes go by compare-and-set and retry
 * on a conflict with the record read again.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { OracleStore } from '../state/oracle-store.js';
import { parseRecord, STAGE_GAUGE, type OracleRecord } from './oracle-record.js';

interface Cached {
  record: OracleRecord | undefined;
  version: number;
  fetchedAt: number;
  refreshing: boolean;
}

/** Conflicting writers in a row before an update gives up (another core keeps moving the record). */
const MAX_CAS_ATTEMPTS = 8;

export class OracleRecords {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly store: OracleStore,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    /** How old a cached record may be before the request path refreshes it, ms. */
    private readonly freshMs = 1000,
  ) {}

  /**
   * The record as last read, for the request path: `undefined` when there is
   * none, `'unknown'` before the first read (which this call starts).
   */
  cached(appId: string, componentId: string): OracleRecord | undefined | 'unknown' {
    const key = `${appId}\0${componentId}`;
    const entry = this.cache.get(key);
    if (entry === undefined || (Date.now() - entry.fetchedAt > this.freshMs && !entry.refreshing)) {
      if (entry !== undefined) entry.refreshing = true;
      void this.read(appId, componentId).catch((error: unknown) => {
        if (entry !== undefined) entry.refreshing = false;
        this.logger.warn({ err: error, app: appId, component: componentId }, 'oracle record not read');
      });
    }
    return entry === undefined ? 'unknown' : entry.record;
  }

  /** The record from the store (and into the cache). */
  async read(appId: string, componentId: string): Promise<{ record: OracleRecord | undefined; version: number }> {
    const stored = await this.store.getOracleRecord(appId, componentId);
    const record = stored === undefined ? undefined : parseRecord(stored.json);
    this.remember(appId, componentId, record, stored?.version ?? 0);
    return { record, version: stored?.version ?? 0 };
  }

  /**
   * Applies `change` to the current record by compare-and-set, reading it
   * again after a conflict. `change` returns the new record, or undefined to
   * leave it as it is. Resolves with the record written, or undefined when
   * nothing was written.
   */
  async update(appId: string, componentId: string, change: (current: OracleRecord | undefined) => OracleRecord | undefined): Promise<OracleRecord | undefined> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const { record, version } = await this.read(appId, componentId);
      const next = change(record);
      if (next === undefined) return undefined;
      const written = await this.store.putOracleRecord(appId, componentId, JSON.stringify(next), version);
      if (written !== undefined) {
        this.remember(appId, componentId, next, written);
        return next;
      }
    }
    this.logger.warn({ app: appId, component: componentId }, 'oracle record not updated: other writers kept changing it');
    return undefined;
  }

  private remember(appId: string, componentId: string, record: OracleRecord | undefined, version: number): void {
    this.cache.set(`${appId}\0${componentId}`, { record, version, fetchedAt: Date.now(), refreshing: false });
    if (record !== undefined) this.metrics.oracleStage.set({ app: appId, component: componentId }, STAGE_GAUGE[record.stage]);
  }
}
