/**
 * `uhlp ledger verify [--data-dir D] [--full] [--key-file F]... [--allow-unkeyed]`:
 * prints one line per problem and warning and a summary; exits 0 when every chain
 * verifies (warnings allowed), 1 when an entry does not verify, 2 on a usage
 * error. Keyed ledgers are checked with the keys of `--key-file` (repeat it
 * across a key rotation), else with the core's own setting
 * (`UHLP_LEDGER_KEY_FILE` or `UHLP_LEDGER_KEY`).
 */
import { loadLedgerKey } from '../config.js';
import { UhlpError } from '../errors.js';
import { ledgerKeyring, readLedgerKeyFile, type LedgerKey } from './ledger-key.js';
import { verifyLedgers } from './ledger-verify.js';

export interface LedgerVerifyIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

const USAGE = [
  'usage: uhlp ledger verify [--data-dir D] [--full] [--key-file F]... [--allow-unkeyed]',
  '  --data-dir D      the data directory (default ./.uhlp)',
  '  --full            verify every line and checkpoint, not just from the latest checkpoint',
  '  --key-file F      the ledger key (HMAC) the core seals with; repeat for keys of a rotation',
  '                    (default: UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY)',
  '  --allow-unkeyed   with a key: accept chains that have no keyed entry (begun before the key), with a warning',
].join('\n');

const defaultIo: LedgerVerifyIo = {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

/** `argv` is what follows `uhlp ledger verify`. Resolves to the exit code. */
export async function runLedgerVerify(argv: string[], io: LedgerVerifyIo = defaultIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let dataDir = './.uhlp';
  let full = false;
  let allowUnkeyed = false;
  const keyFiles: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--data-dir') dataDir = argv[++i] ?? '';
    else if (arg.startsWith('--data-dir=')) dataDir = arg.slice('--data-dir='.length);
    else if (arg === '--key-file') keyFiles.push(argv[++i] ?? '');
    else if (arg.startsWith('--key-file=')) keyFiles.push(arg.slice('--key-file='.length));
    else if (arg === '--full') full = true;
    else if (arg === '--allow-unkeyed') allowUnkeyed = true;
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

  const report = await verifyLedgers(dataDir, { full, keys: ledgerKeyring(keys), allowUnkeyed });
  for (const warning of report.warnings) io.stderr(`warning: ${warning.file}:${warning.line}: ${warning.message}`);
  for (const problem of report.problems) io.stdout(`${problem.file}:${problem.line}: ${problem.code}: ${problem.message}`);
  const verdict = report.problems.length === 0 ? 'ok' : 'FAILED';
  const keyed = keys.length === 0 ? '' : `, key ${keys.map((key) => key.id).join(', ')}`;
  io.stdout(
    `ledger verify ${verdict}: ${report.sessions} sessions, ${report.files} files, ${report.entriesChecked} entries checked, ` +
      `${report.problems.length} problems, ${report.warnings.length} warnings${full ? ' (full)' : ''}${keyed}`,
  );
  return report.problems.length === 0 ? 0 : 1;
}
