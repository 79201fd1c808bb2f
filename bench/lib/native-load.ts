/**
 * Runs bench/loadgen, the native closed-loop load generator, built with the Go
 * toolchain into ~/.cache/uhlp/bench (again only when its source changes). A
 * load generator in Node would take as much CPU per request as the core it
 * measures; this one takes a fraction, on one OS thread (GOMAXPROCS=1, like
 * `wrk -t1`), so both sides of a comparison get the machine's cores.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { LoadResult } from './load.js';

const run = promisify(execFile);
const SOURCE_DIR = fileURLToPath(new URL('../loadgen/', import.meta.url));

export interface NativeLoadOptions {
  /** `unix:<path>` or `tcp:<host:port>`; connection i goes to target i modulo their number. */
  readonly targets: readonly string[];
  readonly connections: number;
  readonly method?: 'GET' | 'POST';
  /** `{{id}}` in the path, the headers and the body becomes a per-request id. */
  readonly path: string;
  readonly headers?: readonly string[];
  readonly body?: string;
  readonly durationMs: number;
  /** Unmeasured load before the measurement. @defaultValue 1500 */
  readonly warmupMs?: number;
  /** Told as the measured time starts and once it is over (to read what the target's processes used in it). @defaultValue nothing told */
  readonly onPhase?: (phase: 'measuring' | 'measured') => void;
}

let built: Promise<string> | undefined;

/** The loadgen binary, built when missing or when its source changed. */
export function loadgenBinary(): Promise<string> {
  built ??= (async () => {
    const hash = createHash('sha256');
    for (const file of ['main.go', 'go.mod']) hash.update(readFileSync(path.join(SOURCE_DIR, file)));
    const dir = path.join(os.homedir(), '.cache', 'uhlp', 'bench');
    const binary = path.join(dir, `loadgen-${hash.digest('hex').slice(0, 12)}`);
    if (!existsSync(binary)) {
      mkdirSync(dir, { recursive: true });
      try {
        // Standard library only: nothing is downloaded, and the local toolchain is used as it is.
        await run('go', ['build', '-o', binary, '.'], { cwd: SOURCE_DIR, env: { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0' } });
      } catch (error) {
        throw new Error(`cannot build bench/loadgen (the benchmarks need the Go toolchain on PATH): ${(error as Error).message}`);
      }
    }
    return binary;
  })();
  return built;
}

export async function nativeLoad(options: NativeLoadOptions): Promise<LoadResult> {
  const binary = await loadgenBinary();
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'uhlp-loadgen-'));
  try {
    const args = [
      '-target', options.targets.join(','),
      '-conns', String(options.connections),
      '-method', options.method ?? 'GET',
      '-path', options.path,
      '-duration', `${options.durationMs}ms`,
      '-warmup', `${options.warmupMs ?? 1500}ms`,
    ];
    for (const header of options.headers ?? []) args.push('-header', header);
    if (options.body !== undefined) {
      const bodyFile = path.join(scratch, 'body');
      writeFileSync(bodyFile, options.body);
      args.push('-body-file', bodyFile);
    }
    const stdout = await runLoadgen(binary, args, options.onPhase);
    return JSON.parse(stdout) as LoadResult;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Runs the loadgen; resolves with its stdout, telling `onPhase` of the phase lines it writes to stderr. */
function runLoadgen(binary: string, args: string[], onPhase: NativeLoadOptions['onPhase']): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { env: { ...process.env, GOMAXPROCS: '1', GOGC: '400' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (line === 'loadgen: measuring') onPhase?.('measuring');
        else if (line === 'loadgen: measured') onPhase?.('measured');
        else stderr += `${line}\n`;
      }
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`loadgen exited ${code}: ${(stderr + partial).trim()}`));
    });
  });
}
