/**
 * The ledger thread: hashes and appends the turns the core sends it, one
 * FileLedger per deployment tier. Hashing the query and both entries of every
 * turn is a sizeable part of a request's work, and here it runs beside the
 * core's event loop instead of on it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { FileLedger } from './file-ledger.js';
import { writeTurn, type FromLedgerThread, type ToLedgerThread } from './turn-ledger-protocol.js';

const { dataDir } = workerData as { dataDir: string };
const ledgers = new Map<string, FileLedger>();
const port = parentPort!;

function ledgerOf(tier: string): FileLedger {
  let ledger = ledgers.get(tier);
  if (ledger === undefined) {
    ledger = new FileLedger({ dataDir, tier });
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
      for (const turn of message.turns) {
        let written: Promise<unknown>;
        try {
          written = writeTurn(ledgerOf(turn.tier), turn);
        } catch (error) {
          written = Promise.reject(error);
        }
        written.catch((error: unknown) => reply({ kind: 'turn-failed', sessionId: turn.sessionId, turnNumber: turn.turnNumber, error: text(error) }));
      }
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
