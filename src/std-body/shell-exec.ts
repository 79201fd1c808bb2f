/**
 * The std-body shell endpoint (`tool.shell.exec` / `cap.std.shell`), following
 * the body-endpoints document's algorithm: parse, validate argv, clamp limits,
 * run by argv with no shell, and map timeout / runtime failure / non-zero exit
 * / success to outcomes. Whether the calling app may run this argv at all is
 * the core's decision (capabilities.shell.allow) before it invokes the route.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { isAbsolute } from 'node:path';
import type { EndpointOutcome } from '../spine/spine-protocol.js';
import { OutputCapture } from './output-capture.js';
import { type ParsedPayload, clampLimit, invalid, isObject } from './payload-fields.js';

export const SHELL_AFFORDANCE = 'tool.shell.exec';
export const SHELL_CAPABILITY = 'cap.std.shell';

/** Hard limits: a payload may ask for less, never for more. */
export const SHELL_LIMITS = Object.freeze({
  defaultTimeoutMs: 10_000,
  maxTimeoutMs: 120_000,
  defaultOutputBytes: 64 * 1024,
  maxOutputBytes: 4 * 1024 * 1024,
  maxArgs: 1024,
  maxArgvBytes: 128 * 1024,
  maxEnvEntries: 256,
});

/**
 * Used when the payload's env has no PATH, so that `argv[0]` is found the usual
 * way without handing the host's own environment to the command.
 */
export const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/** A validated shell request with its limits clamped. */
export interface ShellExecRequest {
  readonly argv: readonly [string, ...string[]];
  readonly cwd?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly maxStdoutBytes: number;
  readonly maxStderrBytes: number;
}

export interface ShellExecOptions {
  /**
   * Time between SIGTERM and SIGKILL to the command's process group after a timeout.
   * @defaultValue 500
   */
  readonly killGraceMs?: number;
}

export function parseShellExecRequest(payload: unknown): ParsedPayload<ShellExecRequest> {
  if (!isObject(payload)) return invalid('payload', 'payload must be an object');
  const argv = payload['argv'];
  if (!Array.isArray(argv) || argv.length === 0) return invalid('argv', 'argv must be a non-empty array of strings');
  if (argv.length > SHELL_LIMITS.maxArgs) return invalid('argv', `argv has more than ${SHELL_LIMITS.maxArgs} entries`);
  let argvBytes = 0;
  for (const [index, arg] of argv.entries()) {
    if (typeof arg !== 'string') return invalid(`argv[${index}]`, 'argv entries must be strings');
    // The kernel takes C strings: a NUL would silently cut the argument.
    if (arg.includes('\0')) return invalid(`argv[${index}]`, 'argv entries may not contain NUL');
    argvBytes += Buffer.byteLength(arg) + 1;
  }
  if (argv[0] === '') return invalid('argv[0]', 'argv[0] must name a program');
  if (argvBytes > SHELL_LIMITS.maxArgvBytes) return invalid('argv', `argv is over ${SHELL_LIMITS.maxArgvBytes} bytes`);

  const cwd = payload['cwd'];
  if (cwd !== undefined && (typeof cwd !== 'string' || !isAbsolute(cwd) || cwd.includes('\0'))) {
    return invalid('cwd', 'cwd must be an absolute path');
  }

  const env = payload['env'];
  const cleanEnv: Record<string, string> = {};
  if (env !== undefined) {
    if (!isObject(env)) return invalid('env', 'env must be an object of strings');
    const entries = Object.entries(env);
    if (entries.length > SHELL_LIMITS.maxEnvEntries) return invalid('env', `env has more than ${SHELL_LIMITS.maxEnvEntries} entries`);
    for (const [name, value] of entries) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return invalid(`env.${name}`, 'env names must be letters, digits and _');
      if (typeof value !== 'string' || value.includes('\0')) return invalid(`env.${name}`, 'env values must be strings without NUL');
      cleanEnv[name] = value;
    }
  }

  const timeoutMs = clampLimit(payload, 'timeoutMs', SHELL_LIMITS.defaultTimeoutMs, 1, SHELL_LIMITS.maxTimeoutMs);
  if (!timeoutMs.ok) return timeoutMs;
  const maxStdoutBytes = clampLimit(payload, 'maxStdoutBytes', SHELL_LIMITS.defaultOutputBytes, 0, SHELL_LIMITS.maxOutputBytes);
  if (!maxStdoutBytes.ok) return maxStdoutBytes;
  const maxStderrBytes = clampLimit(payload, 'maxStderrBytes', SHELL_LIMITS.defaultOutputBytes, 0, SHELL_LIMITS.maxOutputBytes);
  if (!maxStderrBytes.ok) return maxStderrBytes;

  return {
    ok: true,
    request: {
      argv: argv as [string, ...string[]],
      ...(cwd !== undefined ? { cwd } : {}),
      env: cleanEnv,
      timeoutMs: timeoutMs.request,
      maxStdoutBytes: maxStdoutBytes.request,
      maxStderrBytes: maxStderrBytes.request,
    },
  };
}

/** Runs a validated request. Never rejects: every failure is a `rejected` outcome. */
export function runShellExec(request: ShellExecRequest, options: ShellExecOptions = {}): Promise<EndpointOutcome> {
  const killGraceMs = options.killGraceMs ?? 500;
  const started = performance.now();
  const stdout = new OutputCapture(request.maxStdoutBytes);
  const stderr = new OutputCapture(request.maxStderrBytes);
  const env = { PATH: DEFAULT_PATH, ...request.env };

  return new Promise<EndpointOutcome>((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(request.argv[0], request.argv.slice(1), {
        cwd: request.cwd,
        env,
        shell: false,
        // Its own process group, so that a timeout kills what the command started too.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      resolve(execFailure(error));
      return;
    }

    let settled = false;
    let timedOut = false;
    let ioError: unknown;
    let graceTimer: NodeJS.Timeout | undefined;

    const finish = (outcome: EndpointOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      resolve(outcome);
    };
    const output = (): Record<string, unknown> => ({
      stdout: stdout.text(),
      stderr: stderr.text(),
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
      durationMs: Math.round(performance.now() - started),
    });

    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid, 'SIGTERM');
      graceTimer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), killGraceMs);
    }, request.timeoutMs);

    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdout?.on('error', (error) => (ioError ??= error));
    child.stderr?.on('error', (error) => (ioError ??= error));
    child.on('error', (error) => {
      // No pid means the program never started (not found, not executable, bad cwd).
      if (child.pid === undefined) finish(execFailure(error));
      else ioError ??= error;
    });
    child.on('exit', () => {
      // Whatever the command left running in its group would outlive it and keep
      // the pipes open; the command is over, so is its group.
      killGroup(child.pid, 'SIGKILL');
    });
    child.on('close', (code, signal) => {
      if (timedOut) {
        finish({ outcome: 'rejected', reason: 'timeout', observation: { timeoutMs: request.timeoutMs, ...output() } });
      } else if (ioError !== undefined) {
        finish(execFailure(ioError));
      } else if (code === 0) {
        finish({ outcome: 'applied', referenceId: `shell-${randomUUID()}`, observation: { exitCode: 0, signal: null, ...output() } });
      } else {
        finish({ outcome: 'rejected', reason: 'non_zero_exit', observation: { exitCode: code, signal, ...output() } });
      }
    });
  });
}

/** The route handler: parse, then run. */
export async function handleShellExec(payload: unknown, options: ShellExecOptions = {}): Promise<EndpointOutcome> {
  const parsed = parseShellExecRequest(payload);
  if (!parsed.ok) return { outcome: 'rejected', reason: 'invalid_payload', observation: parsed.error };
  return runShellExec(parsed.request, options);
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone, which is what we wanted.
  }
}

function execFailure(error: unknown): EndpointOutcome {
  const errno = (error as { code?: unknown }).code;
  return {
    outcome: 'rejected',
    reason: 'exec_failure',
    observation: {
      message: error instanceof Error ? error.message : String(error),
      ...(typeof errno === 'string' ? { errno } : {}),
    },
  };
}
