/**
 * What the state guarantees need of Redis, checked when a core starts
 * (docs/runtime-state.md, "Sentinel"): every finding is a warning logged with
 * its code, never a refusal, because a managed Redis may hide CONFIG, a replica
 * may be down for a while, and a core that will not start serves nobody.
 *
 * - `UHLP_STATE_NOT_PERSISTED`: `appendonly no`. A restarted master comes back
 *   empty, or from its last snapshot; a replica then syncs from it and loses
 *   everything too. Queues, once-only records and leases go with it.
 * - `UHLP_STATE_FSYNC_RELAXED`: `appendfsync` other than `always`. A crash of
 *   the machine (not of the process) loses up to a second of acknowledged writes.
 * - `UHLP_STATE_REPLICA_ACKS_OFF`: Sentinel without `UHLP_STATE_REPLICA_ACKS`.
 *   Replication is asynchronous: a write the master answered and no replica
 *   had yet is lost when a replica is promoted.
 * - `UHLP_STATE_REPLICAS_SHORT`: fewer replicas connected than
 *   `UHLP_STATE_REPLICA_ACKS` waits for: kept writes fail (503) until they are back.
 * - `UHLP_STATE_MIN_REPLICAS_OFF`: Sentinel and `min-replicas-to-write 0`. A
 *   master cut off from its replicas (and the sentinels) goes on taking writes
 *   that are dropped when it rejoins as a replica.
 * - `UHLP_STATE_UNCHECKED`: CONFIG GET refused (renamed or forbidden): nothing
 *   above could be checked.
 */
import type { ReplicaAcks } from './replica-acks.js';

/** The master's settings the guarantees depend on, as CONFIG GET and INFO replication answer them. */
export interface RedisGuaranteeSettings {
  readonly appendonly?: string;
  readonly appendfsync?: string;
  readonly minReplicasToWrite?: number;
  readonly connectedReplicas?: number;
  /** Why CONFIG GET failed, when it did. */
  readonly unreadable?: string;
}

export interface GuaranteeFinding {
  readonly code: string;
  readonly message: string;
}

export function guaranteeFindings(settings: RedisGuaranteeSettings, context: { readonly sentinel: boolean; readonly replicaAcks: ReplicaAcks }): GuaranteeFinding[] {
  if (settings.unreadable !== undefined) {
    return [{ code: 'UHLP_STATE_UNCHECKED', message: `could not read the Redis settings the state guarantees need (${settings.unreadable}); see docs/runtime-state.md` }];
  }
  const findings: GuaranteeFinding[] = [];
  if (settings.appendonly !== 'yes') {
    findings.push({ code: 'UHLP_STATE_NOT_PERSISTED', message: 'Redis runs without appendonly: a restarted master loses queued messages, once-only records and leases (set appendonly yes)' });
  } else if (settings.appendfsync !== 'always') {
    findings.push({ code: 'UHLP_STATE_FSYNC_RELAXED', message: `Redis fsyncs its append-only file "${settings.appendfsync ?? '?'}": a machine crash can lose the last second of acknowledged writes (appendfsync always keeps them)` });
  }
  const wanted = context.replicaAcks.replicas;
  if (context.sentinel && wanted === 0) {
    findings.push({ code: 'UHLP_STATE_REPLICA_ACKS_OFF', message: 'on Sentinel without UHLP_STATE_REPLICA_ACKS, a failover can lose acknowledged queue messages, once-only answers, cron claims and leases (set it to 1, or to the number of replicas for planned failovers)' });
  }
  if (context.sentinel && (settings.minReplicasToWrite ?? 0) === 0) {
    findings.push({ code: 'UHLP_STATE_MIN_REPLICAS_OFF', message: 'on Sentinel with min-replicas-to-write 0, a master cut off from its replicas keeps taking writes that are dropped when it rejoins (set min-replicas-to-write 1)' });
  }
  if (wanted > 0 && settings.connectedReplicas !== undefined && settings.connectedReplicas < wanted) {
    findings.push({ code: 'UHLP_STATE_REPLICAS_SHORT', message: `UHLP_STATE_REPLICA_ACKS is ${wanted} but the master has ${settings.connectedReplicas} replicas connected: kept writes fail until enough are back` });
  }
  return findings;
}
