/**
 * `uhlp ledger verify [--data-dir D] [--full] [--key-file F]... [--allow-unkeyed] [--repair] [--threads N] [--quiet]`:
 * prints one line per problem, gap, torn tail and warning and a summary; exits
 * 0 when every chain verifies (warnings and gaps allowed), 1 when an entry does
 * not verify, 3 when the only trouble is a torn tail a crash left (which
 * `--repair` moves aside, and then exits 0), 2 on a usage error. Keyed ledgers
 * are checked with the keys of `--key-file` (repeat it across a key rotation),
 * else with the core's own setting (`UHLP_LEDGER_KEY_FILE` or `UHLP_LEDGER_KEY`);
 * in a session written keyed, an entry not sealed with the key is an error
 * (keyed-rule.ts).
 * A long run reports its progress on stderr every few seconds, and its rate and
 * peak memory at the end.
 */
import { loadLedgerKey, type Environment } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { ledgerKeyring, readLedgerKeyFile, type LedgerKey } from '../ledger/ledger-key.js';
import { verifyLedgers } from '../ledger/ledger-verify.js';

export interface LedgerVerifyIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

export const VERIFY_USAGE_LINE = 'uhlp ledger verify [--data-dir D] [--full] [--key-file F]... [--allow-unkeyed] [--repair] [--threads N] [--quiet] [--stats]';

const USAGE = [
  `usage: ${VERIFY_USAGE_LINE}`,
  '  --data-dir D      the data directory (default ./.uhlp)',
  '  --full            verify every line of every segment and every checkpoint, not just from the latest checkpoint',
  '  --key-file F      the ledger key (HMAC) the core seals with; repeat for keys of a rotation',
  '                    (default: UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY)',
  '  --allow-unkeyed   with a key: accept, with a warning, sessions never sealed with it (begun before the key) and the',
  '                    plain entries that begin a ledger the key sealed later; never an unhashed entry in a keyed session',
  '  --repair          move torn tails a crash left into <segment>.torn and cut the segment back to its last whole turn',
  '  --threads N       segments verified at once, this thread included (default: the CPUs, at most 8; 0 or 1: this thread alone)',
  '  --quiet           no progress lines on stderr',
  '  --stats           end with the rate and peak memory on stderr, however short the run',
  'exit: 0 verified, 1 an entry does not verify, 3 only torn tails (repairable), 2 usage',
].join('\n');

/** Exit code when the only trouble is a torn tail: a crash, not tampering. */
export const EXIT_TORN = 3;
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
  let dataDir = './.uhlp';
  let full = false;
  let allowUnkeyed = false;
  let repair = false;
  let quiet = false;
  let stats = false;
  let threads: number | undefined;
  const keyFiles: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--data-dir') dataDir = argv[++i] ?? '';
    else if (arg.startsWith('--data-dir=')) dataDir = arg.slice('--data-dir='.length);
    else if (arg === '--key-file') keyFiles.push(argv[++i] ?? '');
    else if (arg.startsWith('--key-file=')) keyFiles.push(arg.slice('--key-file='.length));
    else if (arg === '--full') full = true;
    else if (arg === '--allow-unkeyed') allowUnkeyed = true;
    else if (arg === '--repair') repair = true;
    else if (arg === '--quiet') quiet = true;
    else if (arg === '--stats') stats = true;
    else if (arg === '--threads' || arg.startsWith('--threads=')) {
      const raw = arg === '--threads' ? (argv[++i] ?? '') : arg.slice('--threads='.length);
      if (!/^\d{1,3}$/.test(raw) || Number(raw) > 64) {
        io.stderr(`uhlp ledger verify: --threads needs a number 0-64, got "${raw}"\n${USAGE}`);
        return 2;
      }
      threads = Number(raw);
    }
    else if (arg === '--help' || arg === '-h') {
      io.stdout(USAGE);
      return 0;
    } else {
      io.stderr(`uhlp ledger verify: unknown argument "${arg}"\n${USAGE}`);
      return 2;
    }
  }
  if (dataDir === '') {
    io.stderr(`uhlp ledger verify: --data-dir needs a directory\n${USAGE}`);
    return 2;
  }
  if (keyFiles.includes('')) {
    io.stderr(`uhlp ledger verify: --key-file needs a file\n${USAGE}`);
    return 2;
  }
  let keys: LedgerKey[];
  try {
    const fromEnv = keyFiles.length === 0 ? loadLedgerKey(env) : undefined;
    keys = keyFiles.length > 0 ? keyFiles.map((file) => readLedgerKeyFile(file, '--key-file')) : fromEnv ? [fromEnv] : [];
  } catch (error) {
    if (!(error instanceof UhlpError)) throw error;
    io.stderr(`uhlp ledger verify: ${error.message}`);
    return 2;
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
  if (report.problems.length > 0) return 1;
  return unrepaired > 0 ? EXIT_TORN : 0;
}

function mib(bytes: number): string {
  return (bytes / 1048576).toFixed(bytes < 10 * 1048576 ? 1 : 0);
}
