/**
 * Replays a Markdown guide the way a reader follows it: each fenced block whose
 * info string names `file=<path>` is written (relative to where the reader's
 * shell is), each `console` block's `$ command` is run in bash, and the lines
 * under a command are what it must print (`…` stands for any text on a line).
 * `uhlp dev …` starts a core in the background (stopping the one before, as a
 * reader's Ctrl-C would) and waits for its ready line; a `curl` is asked again
 * until it answers as promised, because a commit is served a moment after it is
 * made. The address `127.0.0.1:8080` in a command, an expected line or a file
 * written while a core runs stands for that core's. The first step that does
 * not hold fails, naming the guide's line.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitForValue } from './wait-for.js';

export type GuideStep =
  | { readonly kind: 'file'; readonly line: number; readonly path: string; readonly content: string }
  | { readonly kind: 'command'; readonly line: number; readonly command: string; readonly expected: readonly string[] };

/** The steps of a guide, in reading order. */
export function guideSteps(markdown: string): GuideStep[] {
  const steps: GuideStep[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^```(\S*)(.*)$/.exec(lines[i]!);
    if (open === null) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== '```') end += 1;
    const body = lines.slice(start, end);
    const file = /(?:^|\s)file=(\S+)/.exec(open[2]!)?.[1];
    if (file !== undefined) steps.push({ kind: 'file', line: start, path: file, content: `${body.join('\n')}\n` });
    else if (open[1] === 'console') {
      for (let j = 0; j < body.length; j += 1) {
        if (!body[j]!.startsWith('$ ')) continue;
        const expected: string[] = [];
        while (j + 1 < body.length && !body[j + 1]!.startsWith('$ ')) expected.push(body[(j += 1)]!);
        steps.push({ kind: 'command', line: start + j + 1 - expected.length, command: body[j - expected.length]!.slice(2), expected });
      }
    }
    i = end;
  }
  return steps;
}

/** A line pattern: `…` is any text; the rest is literal. */
export function outputMatches(expected: readonly string[], actual: string): boolean {
  const pattern = expected.map((line) => line.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^\\n]*')).join('\\n');
  return new RegExp(`^${pattern}$`).test(actual.replace(/\s+$/, ''));
}

export interface WalkthroughOptions {
  /** The uhlp tree whose bin/uhlp.js the reader's `uhlp` runs. */
  readonly uhlpRoot: string;
  /** Text replaced in every command and expected line, such as the Redis URL the tests use. */
  readonly replace?: ReadonlyArray<readonly [string, string]>;
  /** Added to every command's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** How long a curl may take to answer as promised. @defaultValue 90000 */
  readonly settleMs?: number;
}

export interface Walkthrough {
  /** Where the reader's shell started. */
  readonly home: string;
  run(step: GuideStep, where: string): Promise<void>;
  /** Stops the core a `uhlp dev` started, if one runs. */
  stop(): Promise<void>;
}

const GUIDE_PORT = '127.0.0.1:8080';

export function startWalkthrough(options: WalkthroughOptions): Walkthrough {
  const home = mkdtempSync(path.join(os.tmpdir(), 'uhlp-guide-'));
  const bin = path.join(home, '.bin');
  mkdirSync(bin);
  // `uhlp` on PATH, as `npm link` puts it there.
  writeFileSync(path.join(bin, 'uhlp'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(options.uhlpRoot, 'bin', 'uhlp.js')}" "$@"\n`);
  chmodSync(path.join(bin, 'uhlp'), 0o755);
  let cwd = home;
  const vars: Record<string, string> = {};
  let core: { child: ChildProcess; exited: Promise<unknown>; port: string } | undefined;
  const env = (): NodeJS.ProcessEnv => ({
    ...process.env,
    PATH: `${bin}:${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    GIT_AUTHOR_NAME: 'Guide Reader', GIT_AUTHOR_EMAIL: 'reader@example.com', GIT_COMMITTER_NAME: 'Guide Reader', GIT_COMMITTER_EMAIL: 'reader@example.com',
    UHLP_LOG_LEVEL: 'warn',
    ...options.env,
    ...vars,
  });
  const rewrite = (text: string): string => {
    let out = text;
    for (const [from, to] of options.replace ?? []) out = out.split(from).join(to);
    return core === undefined ? out : out.split(GUIDE_PORT).join(`127.0.0.1:${core.port}`);
  };

  async function stop(): Promise<void> {
    if (core === undefined) return;
    const { child, exited } = core;
    core = undefined;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
  }

  function shell(command: string): { status: number | null; stdout: string; stderr: string } {
    const pwdFile = path.join(home, '.pwd');
    const script = `cd ${JSON.stringify(cwd)} && ${command}\nrc=$?; pwd > ${JSON.stringify(pwdFile)}; exit $rc`;
    const result = spawnSync('bash', ['-c', script], { env: env(), encoding: 'utf8', timeout: 120_000 });
    try {
      cwd = readFileSync(pwdFile, 'utf8').trim() || cwd;
    } catch {
      // The command failed before `pwd`: the shell stays where it was.
    }
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  async function startCore(command: string, expected: readonly string[], where: string): Promise<void> {
    await stop();
    // Port 0: the core picks a free one; the guide's 8080 is rewritten to it from here on.
    const child = spawn('bash', ['-c', `exec ${command}`], { cwd, env: { ...env(), UHLP_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const port = await waitForValue(
      () => {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${err.slice(-2000)}`);
        return /uhlp is ready at http:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1];
      },
      { timeoutMs: 120_000, intervalMs: 50, what: `${where}: "${command}" to be ready (stderr: ${err.slice(-1000)})` },
    );
    core = { child, exited, port };
    const ready = out.split('\n').find((line) => line.startsWith('uhlp is ready at')) ?? '';
    if (expected.length > 0 && !outputMatches(expected.map(rewrite), ready)) {
      throw new Error(`${where}: "${command}" printed ${JSON.stringify(ready)}, the guide says ${JSON.stringify(expected.join('\n'))}`);
    }
  }

  async function run(step: GuideStep, where: string): Promise<void> {
    if (step.kind === 'file') {
      const file = path.resolve(cwd, step.path);
      mkdirSync(path.dirname(file), { recursive: true });
      // A file that names the running core's address (an app calling another app) gets its real port, as a command does.
      writeFileSync(file, rewrite(step.content));
      return;
    }
    const command = rewrite(step.command);
    if (/^(npx )?uhlp (dev|serve)\b/.test(command)) return startCore(command, step.expected, where);
    // `VAR=$(cmd)` or `export VAR=$(cmd)`: the reader's later commands (and cores) see it.
    const assignment = /^(?:export )?([A-Z_][A-Z0-9_]*)=\$\((.*)\)$/.exec(command);
    if (assignment !== null) {
      const result = shell(assignment[2]!);
      if (result.status !== 0) throw new Error(`${where}: "${step.command}" exited ${result.status}: ${result.stderr}`);
      vars[assignment[1]!] = result.stdout.trim();
      return;
    }
    const expected = step.expected.map(rewrite);
    // A curl waits for the commit to be served and the pool to be warm; anything else answers at once.
    const settle = command.startsWith('curl ') ? (options.settleMs ?? 90_000) : 0;
    let last = { status: null as number | null, stdout: '', stderr: '' };
    try {
      await waitForValue(
        () => {
          last = shell(command);
          return last.status === 0 && (expected.length === 0 || outputMatches(expected, last.stdout));
        },
        { timeoutMs: settle, intervalMs: 500, what: where },
      );
    } catch {
      throw new Error(
        `${where}: "${step.command}" exited ${last.status} and printed ${JSON.stringify(last.stdout)}${last.stderr ? ` (stderr ${JSON.stringify(last.stderr.slice(-1500))})` : ''}; the guide says ${JSON.stringify(step.expected.join('\n'))}`,
      );
    }
  }

  return { home, run, stop };
}
