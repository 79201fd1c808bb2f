/**
 * What a `uhlp` command takes, written once: the flags it parses, its usage,
 * what each flag does and an example, from which both `--help` and the
 * "did you mean" of a misspelt flag are made (command-line.ts). A command with
 * subcommands (`uhlp queues ls`) is a group of such commands.
 */

export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  /** Repeatable: the values are collected in order. @defaultValue false */
  readonly multiple?: boolean;
  /** A one-letter alias, without the dash. */
  readonly short?: string;
  /** The value's placeholder in help (`N`, `URL`); string flags only. @defaultValue `VALUE` */
  readonly value?: string;
  /** One line: what it does, its default and the variable it overrides. */
  readonly help: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The parsed flags of a command: each flag's value as parseArgs gives it, absent when not given. */
export type FlagValues<F extends FlagSpecs> = {
  -readonly [K in keyof F]?: F[K]['type'] extends 'boolean' ? boolean : F[K]['multiple'] extends true ? string[] : string;
};

export interface CommandSpec<F extends FlagSpecs = FlagSpecs> {
  /** The words after `uhlp`: `dev`, `queues ls`. */
  readonly name: string;
  /** One line: what it does. */
  readonly summary: string;
  /** What may follow the name, one usage line each (`<definitions-dir> [flags]`). @defaultValue `[flags]` */
  readonly usage?: readonly string[];
  /** How many positional arguments it takes, at least and at most. @defaultValue no positionals */
  readonly positionals?: { readonly min: number; readonly max: number };
  readonly flags: F;
  /** Full command lines a user can paste, the first one the most common. At least one. */
  readonly examples: readonly [string, ...string[]];
  /** Lines printed after the examples: environment, exit codes, where to read more. */
  readonly notes?: readonly string[];
}

/** A command whose first argument names one of its commands (`uhlp queues ls`, `uhlp fn publish`). */
export interface CommandGroup {
  /** The word after `uhlp`. */
  readonly name: string;
  readonly summary: string;
  readonly commands: readonly CommandSpec[];
  readonly notes?: readonly string[];
}

/**
 * Some of a group's flags, typed as all of them: the group's code reads one type
 * of values, and each of its commands takes (and its help lists) only its own.
 */
export function someFlags<F extends FlagSpecs>(flags: F, ...names: ReadonlyArray<keyof F & string>): F {
  return Object.fromEntries(names.map((name) => [name, flags[name]])) as unknown as F;
}

/** The flag every command answers besides its own. */
const HELP_LINE: readonly [string, string] = ['-h, --help', 'Show this help and exit'];

function flagLabel(name: string, flag: FlagSpec): string {
  const long = `--${name}${flag.type === 'string' ? ` ${flag.value ?? 'VALUE'}` : ''}${flag.multiple ? ' ...' : ''}`;
  return flag.short ? `-${flag.short}, ${long}` : long;
}

function table(rows: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.min(34, Math.max(...rows.map(([left]) => left.length)));
  return rows.map(([left, right]) => (left.length > width ? `  ${left}\n  ${' '.repeat(width)}  ${right}` : `  ${left.padEnd(width)}  ${right}`));
}

/** The usage lines of a command, as `uhlp <name> ...`. */
export function usageLines(spec: CommandSpec): string[] {
  return (spec.usage ?? ['[flags]']).map((line) => `uhlp ${spec.name} ${line}`);
}

/** `uhlp <command> --help`. */
export function commandHelp(spec: CommandSpec): string {
  const lines = [`uhlp ${spec.name}: ${spec.summary}`, '', 'usage:', ...usageLines(spec).map((line) => `  ${line}`), '', 'flags:'];
  lines.push(...table([...Object.entries(spec.flags).map(([name, flag]) => [flagLabel(name, flag), flag.help] as const), HELP_LINE]));
  lines.push('', 'examples:', ...spec.examples.map((example) => `  ${example}`));
  if (spec.notes !== undefined && spec.notes.length > 0) lines.push('', ...spec.notes);
  return `${lines.join('\n')}\n`;
}

/** `uhlp <group> --help`: its commands, an example of each, and how to get one's flags. */
export function groupHelp(group: CommandGroup): string {
  const lines = [`uhlp ${group.name}: ${group.summary}`, '', 'usage:'];
  for (const command of group.commands) lines.push(...usageLines(command).map((line) => `  ${line}`));
  lines.push('', 'commands:');
  lines.push(...table(group.commands.map((command) => [command.name.slice(group.name.length + 1), command.summary] as const)));
  lines.push('', 'examples:', ...group.commands.map((command) => `  ${command.examples[0]}`));
  lines.push('', `Run "uhlp ${group.name} <command> --help" for a command's flags.`);
  if (group.notes !== undefined && group.notes.length > 0) lines.push(...group.notes);
  return `${lines.join('\n')}\n`;
}
