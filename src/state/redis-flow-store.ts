/**
 * Flow gates on Redis, shared by every core: each gate's keys share one hash
 * tag (runtime-keys.ts flowGate), so one script (flow-enter-4, flow-leave-4,
 * flow-renew-1) moves a holder between its queue and its slots atomically, on
 * Redis's clock. The index of gates with waiting holders sits in a slot of its
 * own and is written after the script: it is a listing aid, never a rule.
 */
import type { RedisStoreClient } from './redis-calls.js';
import { DEFAULT_WAITING_GATES_LIMIT, type EnterGateOptions, type FlowGate, type FlowStore, type GateEntry, type WaitingGate } from './flow-store.js';

/** How long a gate stays in the index after a holder last waited on it, ms. */
const INDEX_TTL_MS = 10 * 60_000;

export class RedisFlowStore implements FlowStore {
  constructor(private readonly client: RedisStoreClient) {}

  async enterGate(gate: FlowGate, holder: string, options: EnterGateOptions): Promise<GateEntry> {
    const [granted, position, retryAfterMs] = (await this.client.script('flowEnter', this.queueKeys(gate), [
      holder,
      options.limit,
      options.holdMs,
      options.priority,
      options.waitTtlMs,
    ])) as [number, number, number];
    if (granted !== 1) {
      // Each wait keeps the gate on the list (and its score fresh) while holders wait on it.
      await this.client.call(() => this.client.redis.zadd(this.client.keys.flowWaitingIndex(), Date.now(), JSON.stringify([gate.app, gate.scope, gate.kind, gate.key])));
    }
    return { granted: granted === 1, position: Number(position), retryAfterMs: Number(retryAfterMs) };
  }

  async renewGate(gate: FlowGate, holder: string, holdMs: number): Promise<boolean> {
    const anchor = this.anchor(gate);
    return (await this.client.script('flowRenew', [this.client.keys.flowSlots(anchor)], [holder, holdMs])) === 1;
  }

  async leaveGate(gate: FlowGate, holder: string): Promise<void> {
    await this.client.script('flowLeave', this.queueKeys(gate), [holder]);
  }

  async markLatest(gate: FlowGate, holder: string, ttlMs: number): Promise<void> {
    await this.client.call(() => this.client.redis.set(this.client.keys.flowLatest(this.anchor(gate)), holder, 'PX', ttlMs));
  }

  async latest(gate: FlowGate): Promise<string | undefined> {
    return (await this.client.call(() => this.client.redis.get(this.client.keys.flowLatest(this.anchor(gate))))) ?? undefined;
  }

  async waitingGates(app?: string, limit = DEFAULT_WAITING_GATES_LIMIT): Promise<WaitingGate[]> {
    const index = this.client.keys.flowWaitingIndex();
    const now = Date.now();
    await this.client.call(() => this.client.redis.zremrangebyscore(index, '-inf', now - INDEX_TTL_MS));
    const members = await this.client.call(() => this.client.redis.zrevrange(index, 0, 999));
    const out: WaitingGate[] = [];
    for (const member of members) {
      const [gateApp, scope, kind, key] = JSON.parse(member) as [string, string, FlowGate['kind'], string];
      if (app !== undefined && gateApp !== app) continue;
      const gate: FlowGate = { app: gateApp, scope, kind, key };
      const anchor = this.anchor(gate);
      // Counted by live expiry, so a dead core's lapsed waiters and slots are not listed.
      const [waiting, running] = await Promise.all([
        this.client.call(() => this.client.redis.zcount(this.client.keys.flowWaitExpiry(anchor), `(${now}`, '+inf')),
        this.client.call(() => this.client.redis.zcount(this.client.keys.flowSlots(anchor), `(${now}`, '+inf')),
      ]);
      if (waiting > 0) out.push({ ...gate, waiting, running });
    }
    return out.sort((a, b) => b.waiting - a.waiting).slice(0, limit);
  }

  private anchor(gate: FlowGate): string {
    return this.client.keys.flowGate(gate.app, gate.scope, gate.kind, gate.key);
  }

  private queueKeys(gate: FlowGate): string[] {
    const anchor = this.anchor(gate);
    const keys = this.client.keys;
    return [keys.flowSlots(anchor), keys.flowWaiting(anchor), keys.flowWaitExpiry(anchor), keys.flowHolders(anchor)];
  }
}
