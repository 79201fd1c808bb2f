/**
 * `uhlp ledger verify [--data-dir D] [--full] [--key-file F]... [--allow-unkeyed] [--repair] [--threads N] [--quiet]`:
 * prints one line per problem, gap, torn tail and warning and a summary; exits
 * 0 when every chain verifies (warnings and gaps allowed), 1 when an entry does
 * not verify, 3 when the only trouble is a torn tail a crash left (which
 * `--repair` moves aside, and then exits 0), 64 on a usage error. Keyed ledgers
 * are checked with the keys of `--key-file` (repeat it across a key rotation),
 * else with the core's own setting (`UHLP_LEDGER_KEY_FILE` or `UHLP_LEDGER_KEY`);
 * in a session written keyed, an entry not sealed with the key is an error
 * (keyed-rule.ts).
 * A long run reports its progress on stderr every few seconds, and its rate and
 * peak memory at the end.
 */
import { loadClientConfig, loadLedgerKey, type Environment } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { ledgerKeyring, readLedgerKeyFile, type LedgerKey } from '../ledger/ledger-key.js';
import { verifyLedgers } from '../ledger/ledger-verify.js';
import type { CommandSpec } from './command-spec.js';
import { parseCommandLineTo } from './command-line.js';
import { EXIT_FAILURE, EXIT_NOT_RUNNING, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

export interface LedgerVerifyIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

const FLAGS = {
  'data-dir': { type: 'string', value: 'D', help: 'The data directory (UHLP_DATA_DIR; default ./.uhlp)' },
  full: { type: 'boolean', help: 'Verify every line of every segment and every checkpoint, not just from the latest checkpoint' },
  'key-file': {
    type: 'string',
    multiple: true,
    value: 'F',
    help: 'The ledger key (HMAC) the core seals with; repeat for the keys of a rotation (default UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY)',
  },
  'allow-unkeyed': {
    type: 'boolean',
    help: 'With a key: accept, with a warning, sessions never sealed with it and the plain entries that begin a ledger the key sealed later (never an unhashed entry in a keyed session)',
  },
  repair: { type: 'boolean', help: 'Move torn tails a crash left into <segment>.torn and cut the segment back to its last whole turn' },
  threads: { type: 'string', value: 'N', help: 'Segments verified at once, this thread included (default the CPUs, at most 8; 0 or 1: this thread alone)' },
  quiet: { type: 'boolean', help: 'No progress lines on stderr' },
  stats: { type: 'boolean', help: 'End with the rate and peak memory on stderr, however short the run' },
} as const;

export const LEDGER_VERIFY_COMMAND: CommandSpec<typeof FLAGS> = {
  name: 'ledger verify',
  summary: 'Checks every hash chain of the turn ledgers, streaming in constant memory, segments on several threads',
  flags: FLAGS,
  examples: ['uhlp ledger verify', 'uhlp ledger verify --data-dir /var/lib/uhlp --full --key-file /etc/uhlp/ledger.key'],
  notes: ['Exit: 0 verified (warnings and gaps allowed); 1 an entry does not verify; 3 only torn tails a crash left (--repair fixes them); 64 usage.'],
};

/** Exit code when the only trouble is a torn tail: a crash, not tampering (the convention's 3: a state reported, not a failure). */
export const EXIT_TORN = EXIT_NOT_RUNNING;
/** A run longer than this reports progress, and its rate at the end. */
const LONG_RUN_MS = 3000;
const PROGRESS_EVERY_MS = 5000;

const defaultIo: LedgerVerifyIo = {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

/** `argv` is what follows `uhlp ledger verify`. Resolves to the exit code. */
/** `env` stands for the process's environment (config.ts reads that one) in tests. */
export async function runLedgerVerify(argv: string[], io: LedgerVerifyIo = defaultIo, env?: Environment): Promise<number> {
  const line = parseCommandLineTo(LEDGER_VERIFY_COMMAND, argv, io);
  if (typeof line === 'number') return line;
  const { values } = line;
  const full = values.full === true;
  const allowUnkeyed = values['allow-unkeyed'] === true;
  const repair = values.repair === true;
  const quiet = values.quiet === true;
  const stats = values.stats === true;
  const keyFiles = values['key-file'] ?? [];
  let threads: number | undefined;
  if (values.threads !== undefined) {
    if (!/^\d{1,3}$/.test(values.threads) || Number(values.threads) > 64) {
      io.stderr(`uhlp ledger verify: --threads needs a number 0-64, got "${values.threads}"\nRun "uhlp ledger verify --help" for its flags and examples.`);
      return EXIT_USAGE;
    }
    threads = Number(values.threads);
  }
  if (values['data-dir'] === '' || keyFiles.includes('')) {
    io.stderr(`uhlp ledger verify: ${values['data-dir'] === '' ? '--data-dir needs a directory' : '--key-file needs a file'}\nRun "uhlp ledger verify --help" for its flags and examples.`);
    return EXIT_USAGE;
  }
  let dataDir: string;
  let keys: LedgerKey[];
  try {
    dataDir = loadClientConfig({ ...(values['data-dir'] !== undefined ? { 'data-dir': values['data-dir'] } : {}) }, env).dataDir;
    const fromEnv = keyFiles.length === 0 ? loadLedgerKey(env) : undefined;
    keys = keyFiles.length > 0 ? keyFiles.map((file) => readLedgerKeyFile(file, '--key-file')) : fromEnv ? [fromEnv] : [];
  } catch (error) {
    if (!(error instanceof UhlpError)) throw error;
    io.stderr(`uhlp ledger verify: ${error.message}`);
    return EXIT_USAGE;
  }

  const started = Date.now();
  let lastProgress = started;
  const report = await verifyLedgers(dataDir, {
    full,
    keys: ledgerKeyring(keys),
    allowUnkeyed,
    repair,
    ...(threads !== undefined ? { threads } : {}),
    onProgress: (progress) => {
      if (quiet || progress.elapsedMs < LONG_RUN_MS || Date.now() - lastProgress < PROGRESS_EVERY_MS) return;
      lastProgress = Date.now();
      const share = progress.totalBytes > 0 ? `${Math.min(100, Math.floor((progress.bytes / progress.totalBytes) * 100))}% ` : '';
      io.stderr(
        // Entries are counted when a segment is done; bytes as they are read, so they are what moves on a long segment.
        `verifying: ${share}${mib(progress.bytes)} of ${mib(progress.totalBytes)} MiB, ${progress.entries} entries in finished segments of ${progress.sessions} sessions, ` +
          `${Math.round(progress.bytes / 1048576 / (progress.elapsedMs / 1000))} MiB/s`,
      );
    },
  });
  for (const warning of report.warnings) io.stderr(`warning: ${warning.file}:${warning.line}: ${warning.message}`);
  for (const problem of report.problems) io.stdout(`${problem.file}:${problem.line}: ${problem.code}: ${problem.message}`);
  for (const gap of report.gaps) io.stdout(`gap: ${gap.where}: ${gap.message}`);
  for (const torn of report.torn) {
    io.stdout(`${torn.file}:${torn.line}: TORN_TAIL: ${torn.message}`);
    if (torn.repaired) io.stdout(`repaired: ${torn.file}: ${torn.repaired.bytes} bytes from byte ${torn.offset} moved to ${torn.repaired.quarantine}`);
  }
  const unrepaired = report.torn.filter((t) => !t.repaired).length;
  const verdict = report.problems.length > 0 ? 'FAILED' : unrepaired > 0 ? 'TORN' : 'ok';
  const keyed = keys.length === 0 ? '' : `, key ${keys.map((key) => key.id).join(', ')}`;
  const extra = `${report.gaps.length > 0 ? `, ${report.gaps.length} gaps` : ''}${report.torn.length > 0 ? `, ${report.torn.length} torn tails${unrepaired < report.torn.length ? ' (repaired)' : ''}` : ''}`;
  io.stdout(
    `ledger verify ${verdict}: ${report.sessions} sessions, ${report.files} files, ${report.entriesChecked} entries checked, ` +
      `${report.problems.length} problems, ${report.warnings.length} warnings${extra}${full ? ' (full)' : ''}${keyed}`,
  );
  const elapsedMs = Date.now() - started;
  if (stats || (!quiet && elapsedMs >= LONG_RUN_MS)) {
    io.stderr(
      `verified ${report.entriesChecked} entries (${mib(report.bytes)} MiB) in ${(elapsedMs / 1000).toFixed(1)} s: ` +
        `${Math.round(report.entriesChecked / (elapsedMs / 1000))} entries/s; peak memory ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`,
    );
  }
  if (report.problems.length > 0) return EXIT_FAILURE;
  return unrepaired > 0 ? EXIT_TORN : EXIT_OK;
}

function mib(bytes: number): string {
  return (bytes / 1048576).toFixed(bytes < 10 * 1048576 ? 1 : 0);
}
