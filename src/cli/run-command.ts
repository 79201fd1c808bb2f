/**
 * Runs one subcommand for the `uhlp` command line: errors with a uhlp code are
 * printed as one line (a usage error with its usage), never a stack, and end
 * with the exit code of the convention in exit-codes.ts.
 */
import { isUhlpError } from '../shared/errors.js';
import { EXIT_FAILURE, EXIT_USAGE } from './exit-codes.js';

export type Command = (argv: string[]) => Promise<number>;

/** Codes that say the command line, a setting or the definitions directory given must change: no retry fixes them. */
const USAGE_CODES: ReadonlySet<string> = new Set(['UHLP_USAGE', 'UHLP_CONFIG_INVALID', 'UHLP_DEFINITIONS_UNREADABLE']);

/** The exit code an error thrown by a command ends it with. */
export function exitCodeOf(error: unknown): number {
  return isUhlpError(error) && USAGE_CODES.has(error.code) ? EXIT_USAGE : EXIT_FAILURE;
}

/** What a failed command prints: usage errors carry their own `uhlp <command>:` line and usage. */
export function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (isUhlpError(error) && error.code === 'UHLP_USAGE') return `${message}\n`;
  return isUhlpError(error) ? `uhlp: ${error.code}: ${message}\n` : `uhlp: ${message}\n`;
}

export async function runCommand(run: Command, argv: string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (error) {
    process.stderr.write(errorText(error));
    return exitCodeOf(error);
  }
}
