/**
 * The ledger thread: hashes and appends the turns the core sends it, one
 * FileLedger per deployment tier, and runs retention when the core asks.
 * Hashing the query and both entries of every turn is a sizeable part of a
 * request's work, and here it runs beside the core's event loop instead of on
 * it. With a ledger key, the thread gets the key's bytes and seals with
 * HMAC-SHA256 (ledger-key.ts).
 *
 * A batch is written with one write per file; with `fsync` it is also flushed
 * to disk, and with a sequence number (sync and fsync durability) the core is
 * told once it is, so that the answers of its turns can be sent.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { FileLedger } from './file-ledger.js';
import { makeLedgerKey } from './ledger-key.js';
import { pruneLedgers } from './ledger-prune.js';
import { writeRetentionFile } from './ledger-retention.js';
import type { TurnInput } from './file-ledger.js';
import { decodeTurns, turnInput, type FromLedgerThread, type ToLedgerThread } from './turn-ledger-protocol.js';
import { TurnRingReader, type TurnRingMemory } from './turn-ring.js';

export interface LedgerWorkerData {
  dataDir: string;
  keySecret?: Uint8Array;
  /** Flush every batch to disk before it counts as written. */
  fsync: boolean;
  segmentBytes?: number;
  segmentMs?: number;
  /** Async durability: the ring the core writes turns into (turn-ring.ts). */
  ring?: TurnRingMemory;
}

const { dataDir, keySecret, fsync, segmentBytes, segmentMs, ring } = workerData as LedgerWorkerData;
const key = keySecret === undefined ? undefined : makeLedgerKey(keySecret, 'the ledger key');
const ledgers = new Map<string, FileLedger>();
const port = parentPort!;

function ledgerOf(tier: string): FileLedger {
  let ledger = ledgers.get(tier);
  if (ledger === undefined) {
    ledger = new FileLedger({
      dataDir,
      tier,
      sync: fsync,
      ...(key ? { key } : {}),
      ...(segmentBytes !== undefined ? { segmentBytes } : {}),
      ...(segmentMs !== undefined ? { segmentMs } : {}),
    });
    ledgers.set(tier, ledger);
  }
  return ledger;
}

const reply = (message: FromLedgerThread): void => port.postMessage(message);
const text = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Async turns: written as they are drained; a failure is reported turn by turn, as for a 'turns' message without seq. */
const turnRing =
  ring === undefined
    ? undefined
    : new TurnRingReader(ring, (lines) => {
        let failed: ReturnType<typeof writeTurns>;
        try {
          failed = writeTurns(lines);
        } catch (error) {
          // Lines that cannot be read (never written by encodeTurn()): reported, and the ring drained on.
          failed = [{ sessionId: '', turnNumber: 0, error: text(error) }];
        }
        for (const failure of failed) reply({ kind: 'turn-failed', ...failure });
      });

port.on('message', (message: ToLedgerThread) => {
  // The ring's turns came before this message (a forgotten session's last turns, a close): written first.
  turnRing?.drain();
  switch (message.kind) {
    case 'start':
      try {
        ledgerOf(message.tier).startSessionSync(message.sessionId, message.meta);
        reply({ kind: 'done', id: message.id });
      } catch (error) {
        reply({ kind: 'done', id: message.id, error: text(error) });
      }
      return;
    case 'turns': {
      const failed = writeTurns(message.lines);
      if (message.seq !== undefined) reply({ kind: 'written', seq: message.seq, failed });
      else for (const failure of failed) reply({ kind: 'turn-failed', ...failure });
      return;
    }
    case 'forget':
      ledgerOf(message.tier).forgetSession(message.sessionId);
      return;
    case 'prune':
      void prune(message.id, message.policy, message.sessionTtlMs);
      return;
    case 'close':
      turnRing?.stop();
      void Promise.all([...ledgers.values()].map((ledger) => ledger.close())).then(
        () => reply({ kind: 'done', id: message.id }),
        (error: unknown) => reply({ kind: 'done', id: message.id, error: text(error) }),
      );
  }
});

/** Writes a batch of turns, per tier; every turn that fails is returned, none throws. */
function writeTurns(lines: string): Array<{ sessionId: string; turnNumber: number; error: string }> {
  const failed: Array<{ sessionId: string; turnNumber: number; error: string }> = [];
  const byTier = new Map<string, TurnInput[]>();
  for (const record of decodeTurns(lines)) {
    let input: TurnInput;
    try {
      input = turnInput(record);
    } catch (error) {
      failed.push({ sessionId: record.sessionId, turnNumber: record.turnNumber, error: text(error) });
      continue;
    }
    const inputs = byTier.get(record.tier);
    if (inputs === undefined) byTier.set(record.tier, [input]);
    else inputs.push(input);
  }
  for (const [tier, inputs] of byTier) {
    let failures: Array<{ input: TurnInput; error: unknown }>;
    try {
      failures = ledgerOf(tier).recordTurnsSync(inputs);
    } catch (error) {
      failures = inputs.map((input) => ({ input, error }));
    }
    for (const { input, error } of failures) failed.push({ sessionId: input.sessionId, turnNumber: input.turnNumber, error: text(error) });
  }
  return failed;
}

/**
 * Retention, on this thread: it yields between sessions, so batches keep being
 * written, and it closes a session here before removing it whole.
 */
turnRing?.start();

async function prune(id: number, policy: Parameters<typeof pruneLedgers>[0]['policy'], sessionTtlMs: number): Promise<void> {
  try {
    writeRetentionFile(dataDir, policy, sessionTtlMs);
    const report = await pruneLedgers({
      dataDir,
      policy,
      sessionTtlMs,
      ...(key ? { key } : {}),
      writer: {
        isOpen: (tier, sessionId) => ledgers.get(tier)?.isOpen(sessionId) ?? false,
        beginPrune: (tier, sessionId) => ledgerOf(tier).beginPrune(sessionId),
        endPrune: (tier, sessionId) => ledgerOf(tier).endPrune(sessionId),
      },
    });
    reply({ kind: 'done', id, report });
  } catch (error) {
    reply({ kind: 'done', id, error: text(error) });
  }
}
