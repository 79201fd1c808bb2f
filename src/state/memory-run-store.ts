/** Workflow run records in memory, with the active runs in the order they became active. */
import { ExpiringMap } from './expiring-map.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { DEFAULT_ACTIVE_RUNS_LIMIT, type RunStore, type StoredRun } from './run-store.js';

export class MemoryRunStore implements RunStore, SweptStore {
  private readonly runs: ExpiringMap<StoredRun>;
  private readonly cancels: ExpiringMap<true>;
  /** Active run ids, in the order they became active (a Map keeps insertion order). */
  private readonly activeRuns = new Map<string, true>();
  /** The requests waiting for each session's active run to end. */
  private readonly queues = new Map<string, SessionQueue>();

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

  async joinSessionQueue(sessionId: string, ticket: string, max: number, ttlMs: number): Promise<number> {
    this.context.assertOpen();
    const queue = this.liveQueue(sessionId);
    const held = queue.tickets.get(ticket);
    if (held === undefined) {
      if (queue.tickets.size >= max) return -1;
      queue.tickets.set(ticket, { order: ++queue.arrivals, expiresAt: this.context.now() + ttlMs });
      this.queues.set(sessionId, queue);
    } else held.expiresAt = this.context.now() + ttlMs;
    return [...queue.tickets.keys()].indexOf(ticket);
  }

  async sessionQueueHead(sessionId: string, ticket: string, ttlMs: number): Promise<boolean | undefined> {
    this.context.assertOpen();
    const queue = this.liveQueue(sessionId);
    const held = queue.tickets.get(ticket);
    if (held === undefined) return undefined;
    held.expiresAt = this.context.now() + ttlMs;
    return queue.tickets.keys().next().value === ticket;
  }

  async leaveSessionQueue(sessionId: string, ticket: string): Promise<void> {
    this.context.assertOpen();
    const queue = this.queues.get(sessionId);
    if (queue === undefined) return;
    queue.tickets.delete(ticket);
    if (queue.tickets.size === 0) this.queues.delete(sessionId);
  }

  /** The session's queue without the tickets past their time (a Map keeps arrival order). */
  private liveQueue(sessionId: string): SessionQueue {
    const queue = this.queues.get(sessionId) ?? { arrivals: 0, tickets: new Map() };
    const now = this.context.now();
    for (const [ticket, held] of queue.tickets) if (held.expiresAt <= now) queue.tickets.delete(ticket);
    return queue;
  }

  sweep(): void {
    for (const [sessionId] of this.queues) if (this.liveQueue(sessionId).tickets.size === 0) this.queues.delete(sessionId);
    this.runs.sweep();
    this.cancels.sweep();
  }

  private markActive(id: string, active: boolean): void {
    if (!active) this.activeRuns.delete(id);
    else if (!this.activeRuns.has(id)) this.activeRuns.set(id, true);
  }
}

interface SessionQueue {
  arrivals: number;
  readonly tickets: Map<string, { readonly order: number; expiresAt: number }>;
}
