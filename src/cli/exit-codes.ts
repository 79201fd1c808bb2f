/**
 * The exit codes of every `uhlp` command, one convention for all of them (the
 * README's "Exit codes" lists the same): scripts tell a usage or configuration
 * mistake, which no retry fixes, from a failure of the work itself.
 */

/** The command did what it was asked. */
export const EXIT_OK = 0;
/** The work failed: a check did not pass, a core refused or did not answer, a start failed for a reason no flag names. */
export const EXIT_FAILURE = 1;
/**
 * A state the command reports, not a failure of its own: `uhlp status` finds
 * nothing running (the LSB status convention), `uhlp ledger verify` finds only
 * torn tails a crash left (`--repair` fixes them).
 */
export const EXIT_NOT_RUNNING = 3;
/** The command line or the configuration must change: an unknown command or flag, a missing argument, a bad value (sysexits' EX_USAGE). */
export const EXIT_USAGE = 64;
/** A second SIGINT/SIGTERM ended a stopping core at once (128 + SIGINT). */
export const EXIT_INTERRUPTED = 130;
