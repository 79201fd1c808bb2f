/**
 * `uhlp ledger prune`: applies retention by hand (ledger-prune.ts), with the
 * limits the core last applied to this data directory (`ledger-retention.json`:
 * its planes' and its apps') unless flags say otherwise. Prints what it removed
 * (or with --dry-run would remove) and exits 0, or 1 when a session could not
 * be pruned, 64 on a usage error.
 */
import { existsSync } from 'node:fs';
import { loadClientConfig, loadLedgerKey, loadLedgerPruneEnv, type Environment } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { readLedgerKeyFile, type LedgerKey } from '../ledger/ledger-key.js';
import { pruneLedgers } from '../ledger/ledger-prune.js';
import { formatLimits, formatSize, parseDuration, parseRetentionSpec, parseSize, readRetentionFile, type RetentionLimits } from '../ledger/ledger-retention.js';
import type { LedgerVerifyIo } from './ledger-verify-command.js';
import type { CommandSpec } from './command-spec.js';
import { parseCommandLineTo } from './command-line.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

const FLAGS = {
  'data-dir': { type: 'string', value: 'D', help: 'The data directory (UHLP_DATA_DIR; default ./.uhlp)' },
  'max-age': { type: 'string', value: 'A', help: 'Remove segments last written longer ago than A (90m, 12h, 7d), in every plane' },
  'max-size': { type: 'string', value: 'S', help: 'Remove the oldest segments while a plane holds more than S (500Mi, 10Gi), in every plane' },
  retention: {
    type: 'string',
    value: 'SPEC',
    help: "Per plane: production=30d/100Gi,*=7d, as UHLP_LEDGER_RETENTION (default: what the core last applied here, with its apps' own limits)",
  },
  'session-ttl': { type: 'string', value: 'T', help: "A stored session is over once idle this long (default: the core's, or 1h)" },
  'key-file': { type: 'string', value: 'F', help: 'The ledger key: anchors of keyed ledgers are sealed with it (default UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY)' },
  'dry-run': { type: 'boolean', help: 'Print what would go, remove nothing' },
} as const;

export const LEDGER_PRUNE_COMMAND: CommandSpec<typeof FLAGS> = {
  name: 'ledger prune',
  summary: 'Applies ledger retention by hand: removes whole old segments, leaving an anchor that keeps the rest verifiable',
  flags: FLAGS,
  examples: ['uhlp ledger prune --dry-run', 'uhlp ledger prune --data-dir /var/lib/uhlp --max-age 7d --max-size 10Gi'],
  notes: ['Exit: 0 pruned; 1 a session could not be pruned; 64 usage, or no limits given and none applied before.'],
};

const defaultIo: LedgerVerifyIo = {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

/** `argv` is what follows `uhlp ledger prune`. Resolves to the exit code. */
/** `env` stands for the process's environment (config.ts reads that one) in tests. */
export async function runLedgerPrune(argv: string[], io: LedgerVerifyIo = defaultIo, env?: Environment): Promise<number> {
  const line = parseCommandLineTo(LEDGER_PRUNE_COMMAND, argv, io);
  if (typeof line === 'number') return line;
  const { values } = line;
  const dryRun = values['dry-run'] === true;
  const usage = `Run "uhlp ledger prune --help" for its flags and examples.`;
  let dataDir = '';
  let key: LedgerKey | undefined;
  let planes: Record<string, RetentionLimits>;
  let apps: Record<string, RetentionLimits>;
  let sessionTtlMs: number;
  try {
    dataDir = values['data-dir'] === '' ? '' : loadClientConfig({ ...(values['data-dir'] !== undefined ? { 'data-dir': values['data-dir'] } : {}) }, env).dataDir;
    if (dataDir === '' || !existsSync(dataDir)) throw new UhlpError('UHLP_CONFIG_INVALID', `--data-dir must be an existing data directory, got "${values['data-dir'] ?? dataDir}"`);
    const known = readRetentionFile(dataDir);
    planes = values.retention !== undefined ? parseRetentionSpec(values.retention, '--retention') : { ...(known?.policy.planes ?? {}) };
    if (values['max-age'] !== undefined || values['max-size'] !== undefined) {
      const everywhere: RetentionLimits = {
        ...(values['max-age'] !== undefined ? { maxAgeMs: parseDuration(values['max-age'], '--max-age') } : {}),
        ...(values['max-size'] !== undefined ? { maxBytes: parseSize(values['max-size'], '--max-size') } : {}),
      };
      planes = Object.fromEntries([...Object.keys(planes), '*'].map((plane) => [plane, { ...planes[plane], ...everywhere }]));
    }
    apps = { ...(known?.policy.apps ?? {}) };
    const ttlSeconds = values['session-ttl'] === undefined && known?.sessionTtlMs === undefined ? loadLedgerPruneEnv(env).sessionTtlSeconds : undefined;
    sessionTtlMs = values['session-ttl'] !== undefined ? parseDuration(values['session-ttl'], '--session-ttl') : (known?.sessionTtlMs ?? (ttlSeconds ?? 3600) * 1000);
    key = values['key-file'] !== undefined ? readLedgerKeyFile(values['key-file'], '--key-file') : loadLedgerKey(env);
  } catch (error) {
    if (!(error instanceof UhlpError)) throw error;
    io.stderr(`uhlp ledger prune: ${error.message}\n${usage}`);
    return EXIT_USAGE;
  }
  if (Object.values(planes).every((l) => l.maxAgeMs === undefined && l.maxBytes === undefined) && Object.keys(apps).length === 0) {
    io.stderr(`uhlp ledger prune: no retention limits: give --max-age, --max-size or --retention (no core has applied any to ${dataDir})\n${usage}`);
    return EXIT_USAGE;
  }
  for (const [plane, limits] of Object.entries(planes)) io.stdout(`retention: plane ${plane}: ${formatLimits(limits)}`);
  for (const [app, limits] of Object.entries(apps)) io.stdout(`retention: app ${app}: ${formatLimits(limits)}`);

  const report = await pruneLedgers({ dataDir, policy: { planes, apps }, sessionTtlMs, dryRun, ...(key ? { key } : {}) });
  for (const record of report.pruned) {
    const what = record.whole ? 'the whole session' : record.throughSegment === 1 ? 'segment 1' : `segments 1-${record.throughSegment}`;
    io.stdout(`${dryRun ? 'would remove' : 'removed'}: ${record.tier}/${record.sessionId}: ${what} (${formatSize(record.bytes)}): ${record.reason}`);
  }
  for (const error of report.errors) io.stderr(`error: ${error.where}: ${error.message}`);
  const kept = Object.entries(report.keptBytes)
    .map(([plane, bytes]) => `${plane} ${formatSize(bytes)}`)
    .join(', ');
  io.stdout(
    `ledger prune${dryRun ? ' (dry run)' : ''}: ${report.removedSegments} segments of ${report.pruned.length} sessions (${report.removedSessions} whole), ` +
      `${formatSize(report.freedBytes)} ${dryRun ? 'to free' : 'freed'}; kept ${kept || 'nothing'}${report.errors.length > 0 ? `; ${report.errors.length} errors` : ''}`,
  );
  return report.errors.length > 0 ? EXIT_FAILURE : EXIT_OK;
}
