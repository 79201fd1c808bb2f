/**
 * The `uhlp` command line. Each subcommand lives in its own module, says what
 * it takes in a CommandSpec (its `--help`), and returns its exit code
 * (exit-codes.ts); errors with a uhlp code are printed as one line, never a
 * stack. A misspelt command is answered with the nearest one.
 */
import { readFileSync } from 'node:fs';
import { DEV_COMMAND, devCommand, SERVE_COMMAND, serveCommand } from './dev-command.js';
import { MCP_GROUP, mcpCommand } from './mcp-command.js';
import { OPERATOR_COMMAND, operatorCommand } from './operator-command.js';
import { IMAGES_GROUP, imagesCommand } from './images-command.js';
import { LEDGER_GROUP, ledgerCommand } from './ledger-command.js';
import { QUEUES_GROUP, queuesCommand } from './queues-command.js';
import { OPTIMIZE_GROUP, optimizeCommand } from './optimize-command.js';
import { FN_GROUP, fnCommand } from './fn-command.js';
import { RUNS_GROUP, runsCommand } from './runs-command.js';
import { START_COMMAND, startCommand, STATUS_COMMAND, statusCommand, STOP_COMMAND, stopCommand } from './lifecycle-commands.js';
import { commandHelp, groupHelp, type CommandGroup, type CommandSpec } from './command-spec.js';
import { printHelp } from './command-line.js';
import { closest } from '../shared/did-you-mean.js';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { runCommand, type Command } from './run-command.js';

export interface TopCommand {
  readonly run: Command;
  /** What `--help` prints: a command's own spec, or the group of its subcommands. */
  readonly spec: CommandSpec | CommandGroup;
}

/** Every command, in the order `uhlp --help` lists them. */
export const COMMANDS: Readonly<Record<string, TopCommand>> = {
  dev: { run: devCommand, spec: DEV_COMMAND },
  serve: { run: serveCommand, spec: SERVE_COMMAND },
  start: { run: startCommand, spec: START_COMMAND },
  stop: { run: stopCommand, spec: STOP_COMMAND },
  status: { run: statusCommand, spec: STATUS_COMMAND },
  operator: { run: operatorCommand, spec: OPERATOR_COMMAND },
  images: { run: imagesCommand, spec: IMAGES_GROUP },
  mcp: { run: mcpCommand, spec: MCP_GROUP },
  fn: { run: (argv) => fnCommand(argv), spec: FN_GROUP },
  queues: { run: queuesCommand, spec: QUEUES_GROUP },
  runs: { run: (argv) => runsCommand(argv), spec: RUNS_GROUP },
  optimize: { run: optimizeCommand, spec: OPTIMIZE_GROUP },
  ledger: { run: ledgerCommand, spec: LEDGER_GROUP },
};

/** The package's version, as `uhlp --version` prints it. */
export function uhlpVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export function helpOf(spec: CommandSpec | CommandGroup): string {
  return 'commands' in spec ? groupHelp(spec) : commandHelp(spec);
}

/** `uhlp --help`: every command with its summary, and where to read more. */
export function topHelp(): string {
  const names = Object.keys(COMMANDS);
  const width = Math.max(...names.map((name) => name.length));
  return [
    'uhlp: a runtime for applications whose logic is partly an LLM and partly generated code',
    '',
    'usage: uhlp <command> [arguments] [flags]',
    '',
    'commands:',
    ...names.map((name) => `  ${name.padEnd(width)}  ${COMMANDS[name]!.spec.summary}`),
    '',
    'examples:',
    '  uhlp dev examples                 serve the example apps on http://127.0.0.1:8080',
    '  uhlp dev --help                   the flags of one command, and an example',
    '  uhlp queues ls                    ask the running core (the one uhlp dev or uhlp start recorded)',
    '',
    'Run "uhlp <command> --help" for its flags and examples; "uhlp --version" for the version.',
    'Exit codes: 0 ok; 1 failed; 3 not running (status) or torn tails only (ledger verify); 64 a usage or configuration error.',
    '',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`uhlp ${uhlpVersion()} (node ${process.version})\n`);
    return EXIT_OK;
  }
  if (name === undefined) {
    process.stderr.write(topHelp());
    return EXIT_USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    // `uhlp help dev` is `uhlp dev --help`.
    const asked = rest[0] !== undefined ? COMMANDS[rest[0]] : undefined;
    return printHelp(asked !== undefined ? helpOf(asked.spec) : topHelp());
  }
  const command = Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    const near = closest(name, Object.keys(COMMANDS));
    const what = name.startsWith('-') ? `unknown flag ${name}: name a command first` : `unknown command "${name}"`;
    process.stderr.write(`uhlp: ${what}${near !== undefined && !name.startsWith('-') ? `; did you mean "${near}"?` : ''}\nRun "uhlp --help" for the commands.\n`);
    return EXIT_USAGE;
  }
  return runCommand(command.run, rest);
}
