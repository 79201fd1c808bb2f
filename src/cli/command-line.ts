/**
 * Reads a command line against its CommandSpec: `--help` anywhere prints the
 * command's help, a misspelt flag or command is named with the nearest known
 * one, and every mistake is a UHLP_USAGE error (exit 64) that ends with the
 * usage and where to read more, never a parser's raw text.
 */
import { parseArgs } from 'node:util';
import { UhlpError } from '../shared/errors.js';
import { commandHelp, groupHelp, usageLines, type CommandGroup, type CommandSpec, type FlagSpecs, type FlagValues } from './command-spec.js';
import { closest } from '../shared/did-you-mean.js';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.js';

export interface CommandLine<F extends FlagSpecs> {
  readonly values: FlagValues<F>;
  readonly positionals: readonly string[];
  /** Set when `-h` or `--help` was given: the help to print instead of running the command. */
  readonly help?: string;
}

/** Prints a command's help (`--help`) and gives the exit code that goes with it. */
export function printHelp(text: string): number {
  process.stdout.write(text);
  return EXIT_OK;
}

/**
 * parseCommandLine for a command that writes through lines of its own (the ledger
 * commands, which tests drive): `--help` and a usage error are printed there and
 * answered as the exit code to return; otherwise the parsed line.
 */
export function parseCommandLineTo<F extends FlagSpecs>(
  spec: CommandSpec<F>,
  argv: readonly string[],
  io: { readonly stdout: (line: string) => void; readonly stderr: (line: string) => void },
): CommandLine<F> | number {
  let line: CommandLine<F>;
  try {
    line = parseCommandLine(spec, argv);
  } catch (error) {
    if (!(error instanceof UhlpError)) throw error;
    io.stderr(error.message);
    return EXIT_USAGE;
  }
  if (line.help === undefined) return line;
  io.stdout(line.help.trimEnd());
  return EXIT_OK;
}

/** A mistake on the command line of `spec`, with its usage and a pointer to its help. */
export function usageError(spec: Pick<CommandSpec, 'name' | 'usage'>, problem: string): UhlpError {
  const usage = usageLines(spec as CommandSpec);
  return new UhlpError(
    'UHLP_USAGE',
    [`uhlp ${spec.name}: ${problem}`, `usage: ${usage[0]}`, ...usage.slice(1).map((line) => `       ${line}`), `Run "uhlp ${spec.name} --help" for its flags and examples.`].join('\n'),
    { command: spec.name },
  );
}

export function parseCommandLine<F extends FlagSpecs>(spec: CommandSpec<F>, argv: readonly string[]): CommandLine<F> {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, flag] of Object.entries(spec.flags)) {
    options[name] = { type: flag.type, ...(flag.multiple ? { multiple: true } : {}), ...(flag.short ? { short: flag.short } : {}) };
  }
  // A lenient pass first: it sees every flag as given, so an unknown one is named with the nearest known one.
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  if (tokens.some((token) => token.kind === 'option' && token.name === 'help')) return { values: {}, positionals: [], help: commandHelp(spec) };
  const known = Object.keys(spec.flags);
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name in spec.flags) continue;
    const near = closest(token.name, known);
    const hint = near !== undefined ? `; did you mean --${near}?` : known.length === 0 ? ' (it takes no flags)' : '';
    throw usageError(spec, `unknown flag ${token.rawName}${hint}`);
  }
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (error) {
    // A missing value, or a value given to a switch: parseArgs's sentence names the flag.
    throw usageError(spec, (error as Error).message.replace(/\.? To specify .*$/s, ''));
  }
  const { positionals } = parsed;
  const { help: _help, ...values } = parsed.values as Record<string, unknown>;
  const range = spec.positionals ?? { min: 0, max: 0 };
  if (positionals.length < range.min) {
    const wanted = (spec.usage?.[0] ?? '').replace(/\s*\[flags\]$/, '').replace(/ --.*$/, '');
    throw usageError(spec, `expects ${wanted || `${range.min} arguments`}, got ${positionals.length === 0 ? 'none' : positionals.map((p) => `"${p}"`).join(' ')}`);
  }
  if (positionals.length > range.max) {
    const extra = positionals[range.max]!;
    throw usageError(spec, range.max === 0 ? `takes no arguments, got "${extra}"` : `unexpected argument "${extra}"`);
  }
  return { values: values as FlagValues<F>, positionals };
}

/** The command of a group named by the first argument, and the arguments that follow it; or the group's help. */
export function subcommandOf(group: CommandGroup, argv: readonly string[]): { readonly spec: CommandSpec; readonly rest: readonly string[] } | { readonly help: string } {
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') return { help: groupHelp(group) };
  const names = group.commands.map((command) => command.name.slice(group.name.length + 1));
  const groupUsage = { name: group.name, usage: ['<command> [flags]'] };
  if (first === undefined) throw usageError(groupUsage, `name a command: ${names.join(', ')}`);
  if (first.startsWith('-')) throw usageError(groupUsage, `name the command before its flags (one of ${names.join(', ')}), got "${first}"`);
  const index = names.indexOf(first);
  if (index < 0) {
    const near = closest(first, names);
    throw usageError(groupUsage, `unknown command "${first}"${near !== undefined ? `; did you mean "${near}"?` : ''} (one of ${names.join(', ')})`);
  }
  return { spec: group.commands[index]!, rest };
}
