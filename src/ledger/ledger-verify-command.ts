/**
 * `uhlp ledger verify [--data-dir D] [--full]`: prints one line per problem and
 * warning and a summary; exits 0 when every chain verifies (warnings allowed),
 * 1 when an entry does not verify, 2 on a usage error.
 */
import { verifyLedgers } from './ledger-verify.js';

export interface LedgerVerifyIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

const USAGE = 'usage: uhlp ledger verify [--data-dir D] [--full]\n  --data-dir D  the data directory (default ./.uhlp)\n  --full        verify every line and checkpoint, not just from the latest checkpoint';

const defaultIo: LedgerVerifyIo = {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

/** `argv` is what follows `uhlp ledger verify`. Resolves to the exit code. */
export async function runLedgerVerify(argv: string[], io: LedgerVerifyIo = defaultIo): Promise<number> {
  let dataDir = './.uhlp';
  let full = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--data-dir') dataDir = argv[++i] ?? '';
    else if (arg.startsWith('--data-dir=')) dataDir = arg.slice('--data-dir='.length);
    else if (arg === '--full') full = true;
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

  const report = await verifyLedgers(dataDir, { full });
  for (const warning of report.warnings) io.stderr(`warning: ${warning.file}:${warning.line}: ${warning.message}`);
  for (const problem of report.problems) io.stdout(`${problem.file}:${problem.line}: ${problem.code}: ${problem.message}`);
  const verdict = report.problems.length === 0 ? 'ok' : 'FAILED';
  io.stdout(
    `ledger verify ${verdict}: ${report.sessions} sessions, ${report.files} files, ${report.entriesChecked} entries checked, ` +
      `${report.problems.length} problems, ${report.warnings.length} warnings${full ? ' (full)' : ''}`,
  );
  return report.problems.length === 0 ? 0 : 1;
}
