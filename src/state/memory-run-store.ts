/** Workflow run records in memory, with the active runs in the order they became active. */
import { ExpiringMap } from './expiring-map.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { DEFAULT_ACTIVE_RUNS_LIMIT, type RunStore, type StoredRun } from './run-store.js';

export class MemoryRunStore implements RunStore, SweptStore {
  private readonly runs: ExpiringMap<StoredRun>;
  private readonly cancels: ExpiringMap<true>;
  /** Active run ids, in the order they became active (a Map keeps insertion order). */
  private readonly activeRuns = new Map<string, true>();

  constructor(private readonly context: MemoryContext) {
    this.runs = new ExpiringMap(context.now);
    this.cancels = new ExpiringMap(context.now);
  }

  async markRunCancel(id: string, ttlMs: number): Promise<void> {
    this.context.assertOpen();
    this.cancels.set(id, true, this.context.now() + ttlMs);
  }

  async runCancelMarked(id: string): Promise<boolean> {
    this.context.assertOpen();
    return this.cancels.live(id) !== undefined;
  }

  async createRun(id: string, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    this.context.assertOpen();
    if (this.runs.live(id)) return false;
    this.runs.set(id, { json, version: 1 }, this.context.now() + ttlMs);
    this.markActive(id, active);
    return true;
  }

  async getRun(id: string): Promise<StoredRun | undefined> {
    this.context.assertOpen();
    const entry = this.runs.live(id);
    return entry ? { ...entry.value } : undefined;
  }

  async updateRun(id: string, expectedVersion: number, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    this.context.assertOpen();
    const entry = this.runs.live(id);
    if (!entry || entry.value.version !== expectedVersion) return false;
    this.runs.set(id, { json, version: expectedVersion + 1 }, this.context.now() + ttlMs);
    this.markActive(id, active);
    return true;
  }

  async listActiveRuns(limit = DEFAULT_ACTIVE_RUNS_LIMIT): Promise<string[]> {
    this.context.assertOpen();
    const ids: string[] = [];
    for (const id of [...this.activeRuns.keys()]) {
      if (!this.runs.live(id)) {
        this.activeRuns.delete(id);
        continue;
      }
      ids.push(id);
      if (ids.length >= limit) break;
    }
    return ids;
  }

  sweep(): void {
    this.runs.sweep();
    this.cancels.sweep();
  }

  private markActive(id: string, active: boolean): void {
    if (!active) this.activeRuns.delete(id);
    else if (!this.activeRuns.has(id)) this.activeRuns.set(id, true);
  }
}
