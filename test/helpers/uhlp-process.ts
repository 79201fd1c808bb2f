/**
 * Runs the real `uhlp` CLI (bin/uhlp.js over the built dist/) as a child process,
 * the way a user does, and waits for what it prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isProcessAlive } from '../../src/cli/runtime-state.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const UHLP_BIN = path.join(REPO_ROOT, 'bin', 'uhlp.js');

export interface UhlpProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** The operator listener's URL (the console, /_uhlp/oracle, /_uhlp/dev, the queues' operator actions). */
  readonly operatorUrl: string;
  readonly dataDir: string;
  stdout(): string;
  stderr(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Copies a fixture tree into a fresh temp directory (so `git init` happens there). */
export function copyFixture(name: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `uhlp-${name}-`));
  cpSync(path.join(REPO_ROOT, 'test', 'fixtures', name), dir, { recursive: true });
  return dir;
}

/** `uhlp dev` on a free port (see startUhlpCore). */
export function startUhlpDev(...args: Parameters<typeof startUhlpCore> extends [unknown, ...infer Rest] ? Rest : never): Promise<UhlpProcess> {
  return startUhlpCore('dev', ...args);
}

/** `uhlp dev` or `uhlp serve` on a free port; resolves once it prints its URL. */
export async function startUhlpCore(
  command: 'dev' | 'serve',
  definitionsDir: string,
  extraArgs: string[] = [],
  timeoutMs = 30_000,
  dataDirGiven?: string,
  extraEnv: Record<string, string> = {},
  /** The uhlp entry: another tree's, for before/after benchmarks. */
  bin = UHLP_BIN,
): Promise<UhlpProcess> {
  // A data directory made here is removed once the core has stopped: a full run starts hundreds of
  // cores, and their ledgers and revisions left in /tmp filled the disk until the node's kubelet
  // reclaimed space by deleting images. One the caller gave stays: it is the caller's.
  const dataDir = dataDirGiven ?? mkdtempSync(path.join(os.tmpdir(), 'uhlp-data-'));
  // An empty definitions directory means apps come from elsewhere (--registry kubernetes).
  const positional = definitionsDir ? [definitionsDir] : [];
  const child = spawn(process.execPath, [bin, command, ...positional, '--port', '0', '--data-dir', dataDir, ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, UHLP_LOG_LEVEL: process.env.UHLP_LOG_LEVEL ?? 'warn', ...extraEnv },
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const { url, operatorUrl } = await new Promise<{ url: string; operatorUrl: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`uhlp ${command} printed no URL within ${timeoutMs} ms; stderr:\n${err}`)), timeoutMs);
    const onData = (): void => {
      const match = /ready at (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        // Printed with the ready line; a core of another tree (a benchmark's baseline) served operators on its own URL.
        const operator = /operator routes at (http:\/\/\S+)/.exec(out);
        resolve({ url: match[1]!, operatorUrl: operator?.[1] ?? match[1]! });
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`uhlp ${command} exited with ${code} before it was ready; stderr:\n${err}`));
    });
  });

  return {
    child,
    url,
    operatorUrl,
    dataDir,
    stdout: () => out,
    stderr: () => err,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const code = await exited;
      if (dataDirGiven === undefined) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

/** True while a process with this pid exists. */
/** Every process below `pid` (children, their children...), read from /proc: sandboxed runners report namespaced pids of their own. */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields after the last ")" are fixed.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone while we read: not a descendant any more.
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of parents.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Whether `pid` runs (a zombie, dead and waiting to be reaped, does not). */
export const isAlive = isProcessAlive;

/** Waits until the core's `/readyz` answers 200 (every pool warm), else fails with what it said and its stderr. */
export async function waitUntilReady(core: UhlpProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await fetch(`${core.url}/readyz`);
    if (answer.status === 200) return;
    if (Date.now() > deadline) throw new Error(`core not ready: ${await answer.text()}\n${core.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
