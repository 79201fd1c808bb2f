/**
 * Runs one subcommand for the `uhlp` command line: errors with a uhlp code are
 * printed as one line, never a stack.
 */
import { isUhlpError } from '../shared/errors.js';

export type Command = (argv: string[]) => Promise<number>;

export async function runCommand(run: Command, argv: string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(isUhlpError(error) ? `uhlp: ${error.code}: ${message}\n` : `uhlp: ${message}\n`);
    return isUhlpError(error) && error.code === 'UHLP_CONFIG_INVALID' ? 64 : 1;
  }
}
