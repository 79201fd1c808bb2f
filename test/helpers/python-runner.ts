/**
 * The python runner as unit tests run it: its files taken from src/runners/python
 * with the contract's schema written next to them (what the build does), started
 * unisolated with Debian's python3 on a Unix socket, and stopped after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { EXECUTE_CONTRACT_JSON, executeContractJson } from '../../src/contract/execute-contract-json.js';
import { DEFAULT_PYTHON_PATH, PYTHON_FLAGS } from '../../src/images/python-runtime.js';

const SOURCE = fileURLToPath(new URL('../../src/runners/python/', import.meta.url));

/** A directory holding the runner's files as the build lays them out. */
export function pythonRunnerDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-pyrunner-'));
  for (const name of readdirSync(SOURCE)) if (name.endsWith('.py')) cpSync(path.join(SOURCE, name), path.join(dir, name));
  writeFileSync(path.join(dir, EXECUTE_CONTRACT_JSON), executeContractJson());
  return dir;
}

export interface StartedPythonRunner {
  readonly socketPath: string;
  readonly child: ChildProcess;
  /** What the runner wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the exit status (or signal) once the runner is gone. */
  readonly exited: Promise<number | string>;
  stop(): Promise<void>;
}

/** Starts the runner with `args` after --listen; resolves once it printed its ready line. */
export async function startPythonRunner(args: readonly string[], options: { dir?: string } = {}): Promise<StartedPythonRunner> {
  const dir = options.dir ?? pythonRunnerDir();
  const socketPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-pysock-')), 'runner.sock');
  const child = spawn(DEFAULT_PYTHON_PATH, [...PYTHON_FLAGS, path.join(dir, 'main.py'), '--listen', `unix:${socketPath}`, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', TZ: 'UTC' },
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the python runner did not start: ${stderr}`)), 10_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"ready"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the python runner exited (${code}) during start: ${stderr}`));
    });
  });
  return {
    socketPath,
    child,
    stderr: () => stderr,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
