/**
 * `uhlp ledger verify|prune`. bin/uhlp.js runs it through ledgerMain without
 * loading the rest of the command line: the core's modules would be most of
 * the memory of a verification that otherwise runs in constant memory.
 */
import type { CommandGroup } from './command-spec.js';
import { printHelp, subcommandOf } from './command-line.js';
import { LEDGER_PRUNE_COMMAND, runLedgerPrune } from './ledger-prune-command.js';
import { LEDGER_VERIFY_COMMAND, runLedgerVerify } from './ledger-verify-command.js';
import { runCommand } from './run-command.js';

export const LEDGER_GROUP: CommandGroup = {
  name: 'ledger',
  summary: 'The hash-chained turn ledgers of a data directory: verify them, prune them by retention (docs/runtime-state.md)',
  commands: [LEDGER_VERIFY_COMMAND, LEDGER_PRUNE_COMMAND],
};

export async function ledgerCommand(argv: string[]): Promise<number> {
  const chosen = subcommandOf(LEDGER_GROUP, argv);
  if ('help' in chosen) return printHelp(chosen.help);
  return chosen.spec === LEDGER_VERIFY_COMMAND ? runLedgerVerify([...chosen.rest]) : runLedgerPrune([...chosen.rest]);
}

/** `argv` is what follows `uhlp` and starts with `ledger`. */
export function ledgerMain(argv: string[]): Promise<number> {
  return runCommand(ledgerCommand, argv.slice(1));
}
