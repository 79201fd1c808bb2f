/**
 * A verification thread: verifies the segments the pool hands it, one at a
 * time (segment-verifier.ts), and reports the bytes it has read now and then.
 * It gets the ledger keys' bytes, as the ledger thread does.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ledgerKeyring, makeLedgerKey } from './ledger-key.js';
import { verifySegment, type SegmentTask } from './segment-verifier.js';
import { unreadableReport, type FromVerifyThread } from './segment-verify-pool.js';

const { keySecrets } = workerData as { keySecrets: Uint8Array[] };
const keys = keySecrets.length === 0 ? undefined : ledgerKeyring(keySecrets.map((secret) => makeLedgerKey(secret, 'a ledger key')));
const port = parentPort!;

port.on('message', ({ id, task }: { id: number; task: SegmentTask }) => {
  let read = 0;
  const post = (message: FromVerifyThread): void => port.postMessage(message);
  try {
    const report = verifySegment(task, {
      ...(keys ? { keys } : {}),
      onProgress: (bytes) => {
        post({ kind: 'progress', bytes: bytes - read });
        read = bytes;
      },
    });
    post({ kind: 'done', id, report, bytes: report.bytes - read });
  } catch (error) {
    post({ kind: 'done', id, report: unreadableReport(task, error), bytes: 0 });
  }
});
