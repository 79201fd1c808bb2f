/** Flow gates in memory, for one core: the same rules as the Redis scripts (flow-enter-5.lua), on the store's clock. */
import type { MemoryContext, SweptStore } from './memory-context.js';
import { DEFAULT_WAITING_GATES_LIMIT, type EnterGateOptions, type FlowGate, type FlowStore, type GateEntry, type WaitingGate } from './flow-store.js';

interface Waiter {
  readonly holder: string;
  readonly priority: number;
  readonly seq: number;
  expiresAt: number;
}

interface GateState {
  readonly gate: FlowGate;
  /** holder -> when its slot expires. */
  readonly slots: Map<string, number>;
  /** In order: priority descending, then seq ascending. */
  waiters: Waiter[];
  latest?: { holder: string; expiresAt: number };
}

export class MemoryFlowStore implements FlowStore, SweptStore {
  private readonly gates = new Map<string, GateState>();
  private seq = 0;

  constructor(private readonly context: MemoryContext) {}

  async enterGate(gate: FlowGate, holder: string, options: EnterGateOptions): Promise<GateEntry> {
    this.context.assertOpen();
    const now = this.context.now();
    const state = this.stateOf(gate, now);
    if (state.slots.has(holder)) return { granted: true, position: 0, retryAfterMs: 0 };
    let waiter = state.waiters.find((w) => w.holder === holder);
    if (waiter === undefined) {
      waiter = { holder, priority: options.priority, seq: ++this.seq, expiresAt: 0 };
      const at = state.waiters.findIndex((w) => w.priority < options.priority);
      state.waiters.splice(at < 0 ? state.waiters.length : at, 0, waiter);
    }
    waiter.expiresAt = now + options.waitTtlMs;
    const free = options.limit - state.slots.size;
    const rank = state.waiters.indexOf(waiter);
    if (rank < free) {
      state.waiters.splice(rank, 1);
      state.slots.set(holder, now + options.holdMs);
      return { granted: true, position: 0, retryAfterMs: 0 };
    }
    const earliest = free <= 0 ? Math.min(...state.slots.values()) - now : 0;
    return { granted: false, position: rank + 1, retryAfterMs: Math.max(0, earliest) };
  }

  async renewGate(gate: FlowGate, holder: string, holdMs: number): Promise<boolean> {
    this.context.assertOpen();
    const now = this.context.now();
    const state = this.stateOf(gate, now);
    if (!state.slots.has(holder)) return false;
    state.slots.set(holder, now + holdMs);
    return true;
  }

  async leaveGate(gate: FlowGate, holder: string): Promise<void> {
    this.context.assertOpen();
    const state = this.gates.get(idOf(gate));
    if (state === undefined) return;
    state.slots.delete(holder);
    state.waiters = state.waiters.filter((w) => w.holder !== holder);
  }

  async markLatest(gate: FlowGate, holder: string, ttlMs: number): Promise<void> {
    this.context.assertOpen();
    const now = this.context.now();
    this.stateOf(gate, now).latest = { holder, expiresAt: now + ttlMs };
  }

  async latest(gate: FlowGate): Promise<string | undefined> {
    this.context.assertOpen();
    const now = this.context.now();
    const latest = this.gates.get(idOf(gate))?.latest;
    return latest !== undefined && latest.expiresAt > now ? latest.holder : undefined;
  }

  async waitingGates(app?: string, limit = DEFAULT_WAITING_GATES_LIMIT): Promise<WaitingGate[]> {
    this.context.assertOpen();
    const now = this.context.now();
    const out: WaitingGate[] = [];
    for (const state of this.gates.values()) {
      if (app !== undefined && state.gate.app !== app) continue;
      this.expire(state, now);
      if (state.waiters.length > 0) out.push({ ...state.gate, waiting: state.waiters.length, running: state.slots.size });
    }
    return out.sort((a, b) => b.waiting - a.waiting).slice(0, limit);
  }

  sweep(): void {
    const now = this.context.now();
    for (const [id, state] of this.gates) {
      this.expire(state, now);
      if (state.slots.size === 0 && state.waiters.length === 0 && (state.latest === undefined || state.latest.expiresAt <= now)) this.gates.delete(id);
    }
  }

  /** The gate's state with expired slots and waiters dropped. */
  private stateOf(gate: FlowGate, now: number): GateState {
    const id = idOf(gate);
    let state = this.gates.get(id);
    if (state === undefined) {
      state = { gate: { app: gate.app, scope: gate.scope, kind: gate.kind, key: gate.key }, slots: new Map(), waiters: [] };
      this.gates.set(id, state);
    }
    this.expire(state, now);
    return state;
  }

  private expire(state: GateState, now: number): void {
    for (const [holder, expiresAt] of state.slots) if (expiresAt <= now) state.slots.delete(holder);
    if (state.waiters.some((w) => w.expiresAt <= now)) state.waiters = state.waiters.filter((w) => w.expiresAt > now);
  }
}

function idOf(gate: FlowGate): string {
  return JSON.stringify([gate.app, gate.scope, gate.kind, gate.key]);
}
