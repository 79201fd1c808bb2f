/**
 * The `uhlp` command line. Each subcommand lives in its own module and returns
 * its exit code; errors with a uhlp code are printed as one line, never a stack.
 */
import { DEV_USAGE, devCommand, SERVE_USAGE, serveCommand } from './dev-command.js';
import { MCP_USAGE, mcpCommand } from './mcp-command.js';
import { OPERATOR_USAGE, operatorCommand } from './operator-command.js';
import { IMAGES_USAGE, imagesCommand } from './images-command.js';
import { LEDGER_USAGE, ledgerCommand } from './ledger-command.js';
import { QUEUES_USAGE, queuesCommand } from './queues-command.js';
import { OPTIMIZE_USAGE, optimizeCommand } from './optimize-command.js';
import { FN_USAGE, fnCommand } from './fn-command.js';
import { RUNS_USAGE, runsCommand } from './runs-command.js';
import { START_USAGE, startCommand, STATUS_USAGE, statusCommand, STOP_USAGE, stopCommand } from './lifecycle-commands.js';
import { runCommand, type Command } from './run-command.js';

const COMMANDS: Record<string, { run: Command; usage: string }> = {
  dev: { run: devCommand, usage: DEV_USAGE },
  serve: { run: serveCommand, usage: SERVE_USAGE },
  start: { run: startCommand, usage: START_USAGE },
  stop: { run: stopCommand, usage: STOP_USAGE },
  status: { run: statusCommand, usage: STATUS_USAGE },
  mcp: { run: mcpCommand, usage: MCP_USAGE },
  operator: { run: operatorCommand, usage: OPERATOR_USAGE },
  images: { run: imagesCommand, usage: IMAGES_USAGE },
  fn: { run: (argv) => fnCommand(argv), usage: FN_USAGE },
  queues: { run: queuesCommand, usage: QUEUES_USAGE },
  runs: { run: (argv) => runsCommand(argv), usage: RUNS_USAGE },
  optimize: { run: optimizeCommand, usage: OPTIMIZE_USAGE },
  ledger: { run: ledgerCommand, usage: LEDGER_USAGE },
};

function usage(): string {
  return ['usage:', ...Object.values(COMMANDS).map((c) => `  ${c.usage}`)].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name ? 0 : 64;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`uhlp: unknown command "${name}"\n${usage()}\n`);
    return 64;
  }
  return runCommand(command.run, rest);
}
