/**
 * What the ledger costs: warm dispatch of the same JIT component through `uhlp dev`
 * with `--ledger off` and with each durability (`async`, `sync`, `fsync`), at 16
 * connections on two sandboxes of 8, rounds interleaved like the dispatch
 * benchmark; with the ledger bytes each request left on disk (both ledgers, every
 * segment, checkpoints). Then `uhlp ledger verify --full` over a ledger generated
 * directly (test/helpers/generate-ledger.ts): entries/s and peak memory, on one
 * verifying thread and on two.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { generateLedger } from '../test/helpers/generate-ledger.js';
import { startUhlpDev, UHLP_BIN } from '../test/helpers/uhlp-process.js';
import { writeHelloApp } from './lib/bench-app.js';
import { bytesUnder } from './lib/disk-usage.js';
import { loadThroughCore } from './lib/dispatch-load.js';
import { table, type LoadResult } from './lib/load.js';

export const LEDGER_MODES = ['off', 'async', 'sync', 'fsync'] as const;
export type LedgerMode = (typeof LEDGER_MODES)[number];

export interface LedgerDispatchRow {
  mode: LedgerMode;
  /** The round with the median req/s. */
  result: LoadResult;
  rounds: LoadResult[];
  /** Ledger bytes on disk after that round, per request answered (warm-up included). */
  ledgerBytesPerRequest: number;
}

export interface LedgerVerifyRow {
  threads: number;
  entries: number;
  mib: number;
  seconds: number;
  entriesPerSecond: number;
  peakMib: number;
}

export interface LedgerBench {
  dispatch: LedgerDispatchRow[];
  /** sync and fsync req/s over async req/s. */
  ratios: { sync: number; fsync: number; off: number };
  verify: LedgerVerifyRow[];
}

const CONNECTIONS = 16;
const run = promisify(execFile);


async function oneRound(mode: LedgerMode, durationMs: number): Promise<{ result: LoadResult; bytesPerRequest: number }> {
  const definitions = writeHelloApp('minWarm: 2, maxSize: 2, concurrency: 8, maxUses: 100000000, limits: { timeoutMs: 5000 }');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-ledger-'));
  const flags = mode === 'off' ? ['--ledger', 'off'] : ['--ledger-durability', mode];
  const core = await startUhlpDev(definitions, ['--log-level', 'error', ...flags], undefined, dataDir);
  let result: LoadResult;
  try {
    result = await loadThroughCore(core.url, '/bench/hello/{{id}}', CONNECTIONS, durationMs);
  } finally {
    await core.stop();
  }
  // The warm-up requests are ledgered too: count them from the ledger itself, not the load's figure.
  const answered = countExecEntries(path.join(dataDir, 'planes'));
  const bytes = bytesUnder(path.join(dataDir, 'planes'));
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(definitions, { recursive: true, force: true });
  return { result, bytesPerRequest: answered > 0 ? Math.round(bytes / answered) : 0 };
}

/** Exec entries (turns) under a planes directory: lines of exec segments, headers aside. */
function countExecEntries(planes: string): number {
  let count = 0;
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/^exec(\.(\d+))?\.jsonl$/.test(entry.name)) {
        const text = readFileSyncSafe(full);
        let lines = 0;
        for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines += 1;
        count += lines - (entry.name === 'exec.jsonl' ? 0 : 1);
      }
    }
  };
  walk(planes);
  return count;
}

function readFileSyncSafe(file: string): string {
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return '';
  }
}

async function verifyRate(dataDir: string, threads: number, entries: number): Promise<LedgerVerifyRow> {
  const { stderr } = await run(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', dataDir, '--full', '--stats', '--quiet', '--threads', String(threads)], { maxBuffer: 16 * 1024 * 1024 });
  const stats = /verified (\d+) entries \((\d+) MiB\) in ([\d.]+) s: (\d+) entries\/s; peak memory (\d+) MiB/.exec(stderr);
  if (!stats) throw new Error(`uhlp ledger verify printed no figures:\n${stderr}`);
  return { threads, entries: Number(stats[1]), mib: Number(stats[2]), seconds: Number(stats[3]), entriesPerSecond: Number(stats[4]), peakMib: Number(stats[5]) };
}

export async function benchLedger(durationMs: number, rounds: number, verifyEntries: number): Promise<LedgerBench> {
  const runs = new Map<LedgerMode, Array<{ result: LoadResult; bytesPerRequest: number }>>(LEDGER_MODES.map((m) => [m, []]));
  for (let round = 0; round < rounds; round++) {
    for (const mode of LEDGER_MODES) runs.get(mode)!.push(await oneRound(mode, durationMs));
  }
  const dispatch: LedgerDispatchRow[] = LEDGER_MODES.map((mode) => {
    const all = runs.get(mode)!;
    const median = [...all].sort((a, b) => a.result.rps - b.result.rps)[Math.floor((all.length - 1) / 2)]!;
    return { mode, result: median.result, rounds: all.map((r) => r.result), ledgerBytesPerRequest: median.bytesPerRequest };
  });
  const rps = (mode: LedgerMode): number => dispatch.find((r) => r.mode === mode)!.result.rps;
  const ratio = (mode: LedgerMode): number => Math.round((rps(mode) / rps('async')) * 100) / 100;

  const verify: LedgerVerifyRow[] = [];
  if (verifyEntries > 0) {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-verify-'));
    try {
      const sessions = 4;
      const turnsPerSession = Math.ceil(verifyEntries / 2 / sessions);
      generateLedger({ dataDir, sessions, turnsPerSession, turnsPerSegment: Math.ceil(turnsPerSession / 4) });
      for (const threads of [1, 2]) verify.push(await verifyRate(dataDir, threads, verifyEntries));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  return { dispatch, ratios: { sync: ratio('sync'), fsync: ratio('fsync'), off: ratio('off') }, verify };
}

export function ledgerBenchTables(bench: LedgerBench): string {
  const dispatch = table(
    bench.dispatch.map((r) => ({
      ledger: r.mode,
      conns: CONNECTIONS,
      'req/s': r.result.rps,
      'req/s of each round': r.rounds.map((round) => round.rps).join(' '),
      'p50 ms': r.result.p50Ms,
      'p99 ms': r.result.p99Ms,
      errors: r.result.errors,
      'ledger bytes/req': r.ledgerBytesPerRequest,
    })),
  );
  const verify = bench.verify.length === 0 ? '' : `\n\nuhlp ledger verify --full over a generated ledger\n${table(bench.verify.map((v) => ({ threads: v.threads, entries: v.entries, MiB: v.mib, seconds: v.seconds, 'entries/s': v.entriesPerSecond, 'peak MiB': v.peakMib })))}`;
  return `Warm dispatch (c16 2x8) by ledger mode\n${dispatch}\n\nreq/s over async: sync x${bench.ratios.sync}, fsync x${bench.ratios.fsync}, off x${bench.ratios.off}${verify}\n`;
}
