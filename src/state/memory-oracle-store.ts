/**
 * The optimization oracle's state in memory: counters, records and candidates
 * (kept until the store closes, as on Redis) and sample reservoirs (expiring
 * after their last sample).
 */
import { ExpiringMap } from './expiring-map.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import {
  ORACLE_COUNTER_NAMES,
  zeroOracleCounters,
  type OracleCounters,
  type OracleSampleInput,
  type OracleSampleOptions,
  type OracleSampleOutcome,
  type OracleSampleScope,
  type OracleSampleStats,
  type OracleStore,
} from './oracle-store.js';
import { RuntimeKeys } from './runtime-keys.js';

/** One component's reservoir: the held samples by slot, and which slot holds each held input. */
interface Reservoir {
  readonly slots: Array<{ inputHash: string; outputHash: string; json: string }>;
  readonly bySlotOf: Map<string, number>;
  readonly stats: OracleSampleStats;
}

export class MemoryOracleStore implements OracleStore, SweptStore {
  private readonly counters = new Map<string, OracleCounters>();
  private readonly samples: ExpiringMap<Reservoir>;
  private readonly records = new Map<string, { version: number; json: string }>();
  private readonly candidates = new Map<string, string[]>();
  // Tuples become keys through the same builder Redis uses, so both agree on identity.
  private readonly keys = new RuntimeKeys('');

  constructor(private readonly context: MemoryContext) {
    this.samples = new ExpiringMap(context.now);
  }

  async incrOracleCounters(appId: string, componentId: string, deltas: Partial<OracleCounters>): Promise<OracleCounters> {
    this.context.assertOpen();
    const id = this.keys.oracleCounters(appId, componentId);
    const counters = this.counters.get(id) ?? zeroOracleCounters();
    for (const name of ORACLE_COUNTER_NAMES) counters[name] += deltas[name] ?? 0;
    this.counters.set(id, counters);
    return { ...counters };
  }

  async getOracleCounters(appId: string, componentId: string): Promise<OracleCounters> {
    this.context.assertOpen();
    return { ...(this.counters.get(this.keys.oracleCounters(appId, componentId)) ?? zeroOracleCounters()) };
  }

  async resetOracleCounters(appId: string, componentId: string): Promise<void> {
    this.context.assertOpen();
    this.counters.delete(this.keys.oracleCounters(appId, componentId));
  }

  async addOracleSample(
    scope: OracleSampleScope,
    sample: OracleSampleInput,
    options: OracleSampleOptions,
  ): Promise<{ outcome: OracleSampleOutcome; stats: OracleSampleStats }> {
    this.context.assertOpen();
    const key = this.keys.oracleSamples(scope.appId, scope.componentId, scope.revision);
    const reservoir = this.samples.live(key)?.value ?? { slots: [], bySlotOf: new Map(), stats: { seen: 0, stored: 0, repeats: 0, unstable: 0 } };
    this.samples.set(key, reservoir, this.context.now() + options.ttlMs);
    const { stats } = reservoir;
    let outcome: OracleSampleOutcome;
    const held = reservoir.bySlotOf.get(sample.inputHash);
    if (held !== undefined) {
      outcome = 'repeat';
      if (sample.fresh) {
        stats.repeats += 1;
        if (reservoir.slots[held]!.outputHash !== sample.outputHash) {
          stats.unstable += 1;
          outcome = 'unstable';
        }
      }
    } else {
      stats.seen += 1;
      // Algorithm R: the n-th input replaces a held one with probability limit/n.
      let slot: number | undefined;
      if (stats.stored < options.limit) {
        slot = stats.stored;
        stats.stored += 1;
        outcome = 'added';
      } else {
        const draw = options.pick % stats.seen;
        slot = draw < options.limit ? draw : undefined;
        outcome = slot === undefined ? 'passed' : 'replaced';
        if (slot !== undefined) reservoir.bySlotOf.delete(reservoir.slots[slot]!.inputHash);
      }
      if (slot !== undefined) {
        reservoir.slots[slot] = { inputHash: sample.inputHash, outputHash: sample.outputHash, json: sample.json };
        reservoir.bySlotOf.set(sample.inputHash, slot);
      }
    }
    return { outcome, stats: { ...stats } };
  }

  async getOracleSamples(scope: OracleSampleScope): Promise<{ samples: string[]; stats: OracleSampleStats }> {
    this.context.assertOpen();
    const reservoir = this.samples.live(this.keys.oracleSamples(scope.appId, scope.componentId, scope.revision))?.value;
    if (reservoir === undefined) return { samples: [], stats: { seen: 0, stored: 0, repeats: 0, unstable: 0 } };
    return { samples: reservoir.slots.map((slot) => slot.json), stats: { ...reservoir.stats } };
  }

  async getOracleRecord(appId: string, componentId: string): Promise<{ version: number; json: string } | undefined> {
    this.context.assertOpen();
    const record = this.records.get(this.keys.oracleRecord(appId, componentId));
    return record === undefined ? undefined : { ...record };
  }

  async putOracleRecord(appId: string, componentId: string, json: string, expectedVersion: number): Promise<number | undefined> {
    this.context.assertOpen();
    const key = this.keys.oracleRecord(appId, componentId);
    if ((this.records.get(key)?.version ?? 0) !== expectedVersion) return undefined;
    this.records.set(key, { version: expectedVersion + 1, json });
    return expectedVersion + 1;
  }

  async addOracleCandidate(appId: string, componentId: string, json: string, keep: number): Promise<void> {
    this.context.assertOpen();
    const key = this.keys.oracleCandidates(appId, componentId);
    this.candidates.set(key, [json, ...(this.candidates.get(key) ?? [])].slice(0, keep));
  }

  async listOracleCandidates(appId: string, componentId: string): Promise<string[]> {
    this.context.assertOpen();
    return [...(this.candidates.get(this.keys.oracleCandidates(appId, componentId)) ?? [])];
  }

  sweep(): void {
    this.samples.sweep();
  }
}
