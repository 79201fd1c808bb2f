/**
 * `npm run soak` (not in CI): `uhlp dev` under SOAK_CONNECTIONS (64) connections
 * for SOAK_SECONDS (60) against a trivial JIT route, as a new user would try it,
 * and what it leaves behind: errors, the core's resident memory at the start and
 * the end (and every SOAK_SAMPLE_SECONDS, 5, between), its open file
 * descriptors, and how much the data directory grew (the ledger, mostly), per
 * request too. SOAK_DURABILITY (async) sets `--ledger-durability`; SOAK_LEDGER=off
 * turns the ledger off. Ends with `uhlp ledger verify` over what it wrote.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startUhlpDev, UHLP_BIN } from '../test/helpers/uhlp-process.js';
import { writeHelloApp } from './lib/bench-app.js';
import { bytesUnder } from './lib/disk-usage.js';
import { loadThroughCore } from './lib/dispatch-load.js';

const seconds = Number(process.env.SOAK_SECONDS ?? 60);
const connections = Number(process.env.SOAK_CONNECTIONS ?? 64);
const sampleSeconds = Number(process.env.SOAK_SAMPLE_SECONDS ?? 5);
const durability = process.env.SOAK_DURABILITY ?? 'async';
const ledgerOff = process.env.SOAK_LEDGER === 'off';

interface Sample {
  atSeconds: number;
  rssMib: number;
  openFds: number;
  dataMib: number;
}

function rssMib(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}


const mib = (bytes: number): number => Math.round((bytes / 1048576) * 10) / 10;

const definitions = writeHelloApp('minWarm: 2, maxSize: 2, concurrency: 8, maxUses: 100000000, limits: { timeoutMs: 5000 }');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-soak-'));
const flags = ledgerOff ? ['--ledger', 'off'] : ['--ledger-durability', durability];
const core = await startUhlpDev(definitions, ['--log-level', 'error', ...flags], undefined, dataDir);
const pid = core.child.pid!;
const samples: Sample[] = [];
const started = performance.now();
const sample = (): void => {
  samples.push({ atSeconds: Math.round((performance.now() - started) / 100) / 10, rssMib: rssMib(pid), openFds: openFds(pid), dataMib: mib(bytesUnder(dataDir)) });
};
sample();
const timer = setInterval(sample, sampleSeconds * 1000);
let result;
try {
  result = await loadThroughCore(core.url, '/bench/hello/{{id}}', connections, seconds * 1000);
  sample();
} finally {
  clearInterval(timer);
  await core.stop();
}
const { stdout: verified } = await promisify(execFile)(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', dataDir, '--quiet'], { maxBuffer: 16 * 1024 * 1024 }).catch(
  (error: { stdout: string; stderr: string }) => ({ stdout: `${error.stdout}${error.stderr}` }),
);
const first = samples[0]!;
const last = samples[samples.length - 1]!;
const grown = (last.dataMib - first.dataMib) * 1048576;
const report = {
  machine: { cpus: os.cpus().length, node: process.version, loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100) },
  ledger: ledgerOff ? 'off' : durability,
  connections,
  seconds,
  load: result,
  rssMib: { start: first.rssMib, end: last.rssMib, max: Math.max(...samples.map((s) => s.rssMib)) },
  openFds: { start: first.openFds, end: last.openFds, max: Math.max(...samples.map((s) => s.openFds)) },
  diskGrowthMib: mib(grown),
  /** Growth over the measured requests; the load's warm-up (1.5 s) wrote some too. */
  diskBytesPerRequest: result.requests > 0 ? Math.round(grown / result.requests) : 0,
  verify: verified.trim().split('\n').at(-1),
  samples,
};
process.stdout.write(`${JSON.stringify(report)}\n\n`);
process.stdout.write(
  `soak: ${result.requests} requests in ${result.seconds} s (${result.rps} req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms), ${result.errors} errors, ledger ${report.ledger}\n` +
    `core RSS ${report.rssMib.start} -> ${report.rssMib.end} MiB (max ${report.rssMib.max}); open fds ${report.openFds.start} -> ${report.openFds.end} (max ${report.openFds.max}); ` +
    `disk +${report.diskGrowthMib} MiB (${report.diskBytesPerRequest} bytes/request)\n${report.verify}\n`,
);
rmSync(dataDir, { recursive: true, force: true });
rmSync(definitions, { recursive: true, force: true });
