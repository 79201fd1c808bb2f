import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait-for.js';
import { DEFAULT_PATH, SHELL_LIMITS, handleShellExec, parseShellExecRequest } from './shell-exec.js';

/** A process that is gone, or a zombie waiting for a reaper, no longer runs anything. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('shell exec endpoint', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'uhlp-shell-')));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs argv and answers applied with output and a reference id', async () => {
    const result = await handleShellExec({ argv: ['echo', 'hello', 'world'] });
    expect(result.outcome).toBe('applied');
    expect(result.referenceId).toMatch(/^shell-[0-9a-f-]{36}$/);
    expect(result.observation).toMatchObject({ exitCode: 0, stdout: 'hello world\n', stderr: '', stdoutTruncated: false, stderrTruncated: false });
  });

  it('keeps shell metacharacters as inert argv', async () => {
    const marker = join(dir, 'pwned');
    const hostile = `$(touch ${marker}); \`touch ${marker}\` | touch ${marker} && touch ${marker} > ${marker} * ~ $HOME`;
    const result = await handleShellExec({ argv: ['printf', '%s', hostile] });
    expect(result.outcome).toBe('applied');
    expect(result.observation).toMatchObject({ stdout: hostile });
    expect(existsSync(marker)).toBe(false);

    // A whole command line in argv[0] is a program name that does not exist.
    const asProgram = await handleShellExec({ argv: [`echo hi; touch ${marker}`] });
    expect(asProgram).toMatchObject({ outcome: 'rejected', reason: 'exec_failure', observation: { errno: 'ENOENT' } });
    expect(existsSync(marker)).toBe(false);
  });

  it('gives the command exactly the payload env, plus a default PATH', async () => {
    const result = await handleShellExec({ argv: ['env'], env: { GREETING: 'hi there' } });
    const lines = String((result.observation as { stdout: string }).stdout).trim().split('\n').sort();
    expect(lines).toEqual(['GREETING=hi there', `PATH=${DEFAULT_PATH}`]);

    const ownPath = await handleShellExec({ argv: ['/usr/bin/env'], env: { PATH: '/bin' } });
    expect((ownPath.observation as { stdout: string }).stdout).toBe('PATH=/bin\n');
  });

  it('runs in the given cwd, and fails with exec_failure when it does not exist', async () => {
    const result = await handleShellExec({ argv: ['pwd'], cwd: dir });
    expect(result.observation).toMatchObject({ stdout: `${dir}\n` });
    const missing = await handleShellExec({ argv: ['pwd'], cwd: join(dir, 'missing') });
    expect(missing).toMatchObject({ outcome: 'rejected', reason: 'exec_failure' });
  });

  it('answers a non-zero exit as rejected non_zero_exit with code and output', async () => {
    const result = await handleShellExec({ argv: ['sh', '-c', 'echo out; echo err >&2; exit 3'] });
    expect(result).toMatchObject({
      outcome: 'rejected',
      reason: 'non_zero_exit',
      observation: { exitCode: 3, signal: null, stdout: 'out\n', stderr: 'err\n' },
    });
    expect(result.referenceId).toBeUndefined();
  });

  it('kills a command past its timeout and reports timeout', async () => {
    const started = Date.now();
    const result = await handleShellExec({ argv: ['sleep', '30'], timeoutMs: 100 });
    expect(result).toMatchObject({ outcome: 'rejected', reason: 'timeout', observation: { timeoutMs: 100 } });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('kills the whole process group, with SIGKILL when SIGTERM is ignored', async () => {
    const script = 'trap "" TERM; sleep 30 & echo $!; wait';
    const result = await handleShellExec({ argv: ['sh', '-c', script], timeoutMs: 300 }, { killGraceMs: 100 });
    expect(result).toMatchObject({ outcome: 'rejected', reason: 'timeout' });
    const sleeper = Number((result.observation as { stdout: string }).stdout.trim());
    expect(sleeper).toBeGreaterThan(0);
    await waitFor(() => !isRunning(sleeper), { what: 'the sleeper to be gone' });
  });

  it('does not wait for background processes a finished command left behind', async () => {
    const started = Date.now();
    const result = await handleShellExec({ argv: ['sh', '-c', 'sleep 30 & echo $!'], timeoutMs: 20_000 });
    expect(result.outcome).toBe('applied');
    expect(Date.now() - started).toBeLessThan(5000);
    const leftover = Number((result.observation as { stdout: string }).stdout.trim());
    await waitFor(() => !isRunning(leftover), { what: 'the leftover process to be gone' });
  });

  it('keeps at most maxStdoutBytes and maxStderrBytes and flags the cut', async () => {
    const result = await handleShellExec({
      argv: ['sh', '-c', 'head -c 100000 /dev/zero | tr "\\0" a; head -c 5000 /dev/zero | tr "\\0" b >&2'],
      maxStdoutBytes: 1000,
      maxStderrBytes: 10,
    });
    const observation = result.observation as { stdout: string; stderr: string; stdoutTruncated: boolean; stderrTruncated: boolean };
    expect(result.outcome).toBe('applied');
    expect(observation.stdout).toBe('a'.repeat(1000));
    expect(observation.stderr).toBe('b'.repeat(10));
    expect(observation.stdoutTruncated).toBe(true);
    expect(observation.stderrTruncated).toBe(true);
  });

  it('clamps limits to the hard maxima', () => {
    const parsed = parseShellExecRequest({ argv: ['true'], timeoutMs: 10 ** 9, maxStdoutBytes: 10 ** 12, maxStderrBytes: -5 });
    expect(parsed).toMatchObject({
      ok: true,
      request: { timeoutMs: SHELL_LIMITS.maxTimeoutMs, maxStdoutBytes: SHELL_LIMITS.maxOutputBytes, maxStderrBytes: 0 },
    });
    expect(parseShellExecRequest({ argv: ['true'], timeoutMs: 0 })).toMatchObject({ ok: true, request: { timeoutMs: 1 } });
    expect(parseShellExecRequest({ argv: ['true'] })).toMatchObject({
      ok: true,
      request: { timeoutMs: SHELL_LIMITS.defaultTimeoutMs, maxStdoutBytes: SHELL_LIMITS.defaultOutputBytes, env: {} },
    });
  });

  it.each([
    ['not an object', 'ls', 'payload'],
    ['no argv', {}, 'argv'],
    ['empty argv', { argv: [] }, 'argv'],
    ['argv as a string', { argv: 'ls -l' }, 'argv'],
    ['a number in argv', { argv: ['ls', 1] }, 'argv[1]'],
    ['an empty program', { argv: [''] }, 'argv[0]'],
    ['a NUL byte', { argv: ['ls', 'a\0b'] }, 'argv[1]'],
    ['too many args', { argv: Array(SHELL_LIMITS.maxArgs + 1).fill('x') }, 'argv'],
    ['a relative cwd', { argv: ['ls'], cwd: 'tmp' }, 'cwd'],
    ['a bad env name', { argv: ['ls'], env: { 'A=B': 'x' } }, 'env.A=B'],
    ['a non-string env value', { argv: ['ls'], env: { A: 1 } }, 'env.A'],
    ['a non-numeric timeout', { argv: ['ls'], timeoutMs: '5s' }, 'timeoutMs'],
  ])('rejects %s as invalid_payload naming %s', async (_name, payload, field) => {
    const result = await handleShellExec(payload);
    expect(result).toMatchObject({ outcome: 'rejected', reason: 'invalid_payload', observation: { field } });
  });
});
