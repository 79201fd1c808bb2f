/**
 * `uhlp ledger verify|prune`. bin/uhlp.js runs it through ledgerMain without
 * loading the rest of the command line: the core's modules would be most of
 * the memory of a verification that otherwise runs in constant memory.
 */
import { PRUNE_USAGE_LINE, runLedgerPrune } from './ledger-prune-command.js';
import { runLedgerVerify, VERIFY_USAGE_LINE } from './ledger-verify-command.js';
import { runCommand } from './run-command.js';

export const LEDGER_USAGE = `${VERIFY_USAGE_LINE}\n  ${PRUNE_USAGE_LINE}`;

export async function ledgerCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'verify') return runLedgerVerify(rest);
  if (sub === 'prune') return runLedgerPrune(rest);
  throw new Error(`usage: ${VERIFY_USAGE_LINE}\n       ${PRUNE_USAGE_LINE}`);
}

/** `argv` is what follows `uhlp` and starts with `ledger`. */
export function ledgerMain(argv: string[]): Promise<number> {
  return runCommand(ledgerCommand, argv.slice(1));
}
