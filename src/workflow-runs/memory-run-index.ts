/**
 * The run index of a core whose runtime state is in memory: summaries by id,
 * and ids in newest-first order. Runs live as long as their records would
 * (`ttlMs` after their last change).
 */
import { decodeCursor, encodeCursor, isAfter, matches, MAX_COUNTED, type RunIndex, type RunPage, type RunQuery, type RunSummary } from './run-index.js';

export interface MemoryRunIndexOptions {
  /** How long a run is listed after its last change, ms (the run records' TTL). */
  readonly ttlMs: number;
  /** Clock, epoch ms. @defaultValue Date.now */
  readonly now?: () => number;
}

interface Entry {
  readonly at: number;
  summary: RunSummary;
}

export class MemoryRunIndex implements RunIndex {
  private readonly byId = new Map<string, Entry>();
  /** Ids newest first; kept sorted on insert (runs nearly always arrive newest last). */
  private order: string[] = [];
  private readonly now: () => number;

  constructor(private readonly options: MemoryRunIndexOptions) {
    this.now = options.now ?? Date.now;
  }

  put(summary: RunSummary): void {
    const existing = this.byId.get(summary.id);
    if (existing !== undefined) {
      existing.summary = summary;
      return;
    }
    const at = Date.parse(summary.createdAt);
    this.byId.set(summary.id, { at, summary });
    // Binary search for the place in newest-first order.
    let low = 0;
    let high = this.order.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const other = this.byId.get(this.order[mid]!)!;
      if (isAfter(at, summary.id, { at: other.at, id: this.order[mid]! })) low = mid + 1;
      else high = mid;
    }
    this.order.splice(low, 0, summary.id);
  }

  async list(query: RunQuery): Promise<RunPage> {
    this.expire();
    const cursor = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined;
    const runs: RunSummary[] = [];
    let total = 0;
    let more = false;
    for (const id of this.order) {
      const entry = this.byId.get(id)!;
      if (!matches(entry.summary, query)) continue;
      if (total < MAX_COUNTED) total++;
      if (cursor !== undefined && !isAfter(entry.at, id, cursor)) continue;
      if (runs.length < query.limit) runs.push(entry.summary);
      else {
        more = true;
        // Later pages are not counted (run-index.ts): the page is whole.
        if (cursor !== undefined) break;
      }
    }
    const last = runs.at(-1);
    const next = more && last !== undefined ? encodeCursor({ at: Date.parse(last.createdAt), id: last.id }) : undefined;
    return { runs, ...(next !== undefined ? { next } : {}), ...(cursor === undefined ? { total, countCapped: total >= MAX_COUNTED } : {}) };
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.byId.clear();
    this.order = [];
  }

  /** Forgets runs whose records have expired. */
  private expire(): void {
    const oldest = this.now() - this.options.ttlMs;
    let dropped = false;
    for (const [id, entry] of this.byId) {
      if (Date.parse(entry.summary.updatedAt) < oldest) {
        this.byId.delete(id);
        dropped = true;
      }
    }
    if (dropped) this.order = this.order.filter((id) => this.byId.has(id));
  }
}
