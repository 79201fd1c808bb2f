/**
 * The ledger thread: hashes and appends the turns the core sends it, one
 * FileLedger per deployment tier. Hashing the query and both entries of every
 * turn is a sizeable part of a request's work, and here it runs beside the
 * core's event loop instead of on it. With a ledger key, the thread gets the
 * key's bytes and seals with HMAC-SHA256 (ledger-key.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { FileLedger } from './file-ledger.js';
import { makeLedgerKey } from './ledger-key.js';
import type { TurnInput } from './file-ledger.js';
import { decodeTurns, turnInput, type FromLedgerThread, type ToLedgerThread } from './turn-ledger-protocol.js';

const { dataDir, keySecret } = workerData as { dataDir: string; keySecret?: Uint8Array };
const key = keySecret === undefined ? undefined : makeLedgerKey(keySecret, 'the ledger key');
const ledgers = new Map<string, FileLedger>();
const port = parentPort!;

function ledgerOf(tier: string): FileLedger {
  let ledger = ledgers.get(tier);
  if (ledger === undefined) {
    ledger = new FileLedger({ dataDir, tier, ...(key ? { key } : {}) });
    ledgers.set(tier, ledger);
  }
  return ledger;
}

const reply = (message: FromLedgerThread): void => port.postMessage(message);
const text = (error: unknown): string => (error instanceof Error ? error.message : String(error));

port.on('message', (message: ToLedgerThread) => {
  switch (message.kind) {
    case 'start':
      ledgerOf(message.tier)
        .startSession(message.sessionId)
        .then(
          () => reply({ kind: 'done', id: message.id }),
          (error: unknown) => reply({ kind: 'done', id: message.id, error: text(error) }),
        );
      return;
    case 'turns':
      void writeTurns(message.lines);
      return;
    case 'forget':
      ledgerOf(message.tier).forgetSession(message.sessionId);
      return;
    case 'close':
      void Promise.all([...ledgers.values()].map((ledger) => ledger.close())).then(
        () => reply({ kind: 'done', id: message.id }),
        (error: unknown) => reply({ kind: 'done', id: message.id, error: text(error) }),
      );
  }
});

/** Writes a batch of turns, per tier; every turn that fails is reported, none throws. */
async function writeTurns(lines: string): Promise<void> {
  const byTier = new Map<string, TurnInput[]>();
  for (const record of decodeTurns(lines)) {
    let input: TurnInput;
    try {
      input = turnInput(record);
    } catch (error) {
      reply({ kind: 'turn-failed', sessionId: record.sessionId, turnNumber: record.turnNumber, error: text(error) });
      continue;
    }
    const inputs = byTier.get(record.tier);
    if (inputs === undefined) byTier.set(record.tier, [input]);
    else inputs.push(input);
  }
  for (const [tier, inputs] of byTier) {
    let failed: Array<{ input: TurnInput; error: unknown }>;
    try {
      failed = await ledgerOf(tier).recordTurns(inputs);
    } catch (error) {
      failed = inputs.map((input) => ({ input, error }));
    }
    for (const { input, error } of failed) reply({ kind: 'turn-failed', sessionId: input.sessionId, turnNumber: input.turnNumber, error: text(error) });
  }
}
