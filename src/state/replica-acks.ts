/**
 * Waiting for replicas after a write the core promises to keep (`WAIT`).
 *
 * Redis replicates asynchronously: a write the master answered can be lost when
 * the master dies before a replica has it, and Sentinel then promotes a replica
 * without it. After the writes behind the core's guarantees (a queue publish or
 * acknowledgement, a once-only claim or answer, a cron slot, a lease, a
 * single-use mark) the stores can ask the master to wait until `replicas`
 * replicas hold everything written on the connection so far. Sentinel promotes
 * the replica with the largest replication offset, which holds every write any
 * replica acknowledged, so `replicas: 1` keeps an acknowledged write through a
 * failover as long as that replica is the one promoted or behind no other.
 *
 * The price is a round trip to a replica on each of those writes; off (0) by
 * default, docs/runtime-state.md ("Sentinel") has the trade-off.
 */
import { UhlpError } from '../shared/errors.js';

export interface ReplicaAcks {
  /** Replicas that must hold a write before it counts as done. @defaultValue 0 (do not wait) */
  readonly replicas: number;
  /** Longest wait for them, ms. @defaultValue 1000 */
  readonly timeoutMs?: number;
}

/**
 * Waits until `acks.replicas` replicas hold every write made on the connection so
 * far (`wait` sends WAIT on it, through the caller's error mapping);
 * UHLP_STATE_UNAVAILABLE when fewer did in time (the write is applied on the
 * master, but a failover could lose it: the caller does not count it as done).
 */
export async function awaitReplicas(acks: ReplicaAcks | undefined, what: string, wait: (replicas: number, timeoutMs: number) => Promise<number>): Promise<void> {
  if (acks === undefined || acks.replicas === 0) return;
  const timeoutMs = acks.timeoutMs ?? 1000;
  const reached = await wait(acks.replicas, timeoutMs);
  if (reached < acks.replicas) {
    throw new UhlpError('UHLP_STATE_UNAVAILABLE', `the runtime state store (Redis) kept ${what} on ${reached} of ${acks.replicas} replicas within ${timeoutMs} ms; a failover could lose it`, {
      replicas: reached,
    });
  }
}
