/**
 * The newcomer's path, replayed from a fresh clone of this repository (its
 * committed HEAD): the README's quick start (build, the example apps, each curl
 * of the quick start with the answer its comment promises), `--help` of every
 * command and subcommand, and the app guide's snippets (docs/apps.md). It fails
 * at the first line a newcomer would find stale. The clone borrows this tree's
 * node_modules through a symlink, so nothing is downloaded.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/uhlp-process.js';
import { replayGuide } from './helpers/apps-guide-replay.js';

let clone: string;
let work: string;

function run(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(command, args, { cwd: options.cwd ?? clone, env: { ...(options.env ?? process.env), PATH: `${path.dirname(process.execPath)}:${(options.env ?? process.env).PATH ?? ''}` }, encoding: 'utf8', timeout: options.timeoutMs ?? 60_000 });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

function uhlp(args: readonly string[], env?: NodeJS.ProcessEnv): { status: number | null; stdout: string; stderr: string } {
  return run(process.execPath, [path.join(clone, 'bin', 'uhlp.js'), ...args], { env });
}

/** The quick start's curls: each command (continuation lines joined) with the status its comment promises. */
function quickStartCurls(readme: string): Array<{ readonly curl: string; readonly status: number; readonly promise: string }> {
  const start = readme.indexOf('## Quick start');
  const block = /```sh\n(curl [\s\S]*?)```/.exec(readme.slice(start, readme.indexOf('\n## ', start + 1)));
  if (block === null) throw new Error('README: the quick start has no block of curls');
  const joined = block[1]!.replace(/\\\n\s*/g, '');
  const curls: Array<{ curl: string; status: number; promise: string }> = [];
  for (const line of joined.split('\n')) {
    const [command, promise = ''] = line.split(/\s+#\s+/);
    for (const curl of (command ?? '').split(/\s*;\s*/)) {
      if (!curl.startsWith('curl ')) continue;
      const status = /->\s*(\d{3})/.exec(promise)?.[1];
      curls.push({ curl, status: status === undefined ? 200 : Number(status), promise: promise.trim() });
    }
  }
  return curls;
}

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'uhlp-newcomer-'));
  clone = path.join(work, 'uhlp');
  const cloned = run('git', ['clone', '-q', REPO_ROOT, clone], { cwd: work });
  if (cloned.status !== 0) throw new Error(`git clone failed: ${cloned.stderr}`);
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(clone, 'node_modules'));
  // The quick start's `npm run dev` builds first; so does the newcomer.
  const built = run('npm', ['run', '-s', 'build'], { timeoutMs: 600_000 });
  if (built.status !== 0) throw new Error(`npm run build in the clone failed: ${built.stdout}${built.stderr}`);
}, 660_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the newcomer path from a fresh clone', () => {
  it("reads the README quick start's curls and the status each comment promises", () => {
    const curls = quickStartCurls(readFileSync(path.join(clone, 'README.md'), 'utf8'));
    expect(curls.map((c) => c.status)).toContain(422);
    expect(curls.find((c) => c.curl.includes('/support/triage'))?.curl).toContain("-d '{\"text\":\"My invoice is wrong\"}'");
    expect(curls.some((c) => c.curl.endsWith('/metrics'))).toBe(true);
  });

  it('uhlp start examples answers every curl of the README quick start as promised, LLM routes included, then stops', async () => {
    const curls = quickStartCurls(readFileSync(path.join(clone, 'README.md'), 'utf8'));
    expect(curls.length).toBeGreaterThanOrEqual(7);
    // npx uhlp is how the README says to run it inside the clone; no UHLP_LLM_SCRIPT_FILE: examples/llm-answers.yaml is found by itself.
    const dataDir = path.join(work, 'data');
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !['UHLP_LLM_SCRIPT_FILE', 'UHLP_LLM_BASE_URL', 'UHLP_URL', 'UHLP_PORT'].includes(name)));
    const started = run('npx', ['--offline', 'uhlp', 'start', 'examples', '--port', '0', '--data-dir', dataDir], { env, timeoutMs: 180_000 });
    expect(started.status, started.stdout + started.stderr).toBe(0);
    const url = /uhlp started at (http:\/\/\S+)/.exec(started.stdout)?.[1];
    expect(url, started.stdout).toBeDefined();
    try {
      for (const { curl, status, promise } of curls) {
        const command = `${curl.replace(/http:\/\/127\.0\.0\.1:8080/g, url!.replace(/\/$/, ''))} -s -o /dev/stderr -w '%{http_code}'`;
        const answered = run('bash', ['-c', command]);
        expect(Number(answered.stdout), `README quick start: "${curl}" (${promise}) answered ${answered.stdout}: ${answered.stderr.slice(0, 500)}`).toBe(status);
      }
      const status = uhlp(['status', '--data-dir', dataDir]);
      expect(status.status, status.stdout + status.stderr).toBe(0);
    } finally {
      const stopped = uhlp(['stop', '--data-dir', dataDir]);
      expect(stopped.status, stopped.stdout + stopped.stderr).toBe(0);
    }
    const after = uhlp(['status', '--data-dir', dataDir]);
    expect(after.status).toBe(3);
  }, 300_000);

  it('every command and subcommand answers --help with exit 0 and an example; --version answers', () => {
    const version = uhlp(['--version']);
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^uhlp \d+\.\d+\.\d+/);
    const top = uhlp(['--help']);
    expect(top.status).toBe(0);
    const commandsOf = (help: string): string[] => {
      const section = /\ncommands:\n([\s\S]*?)\n\n/.exec(help)?.[1] ?? '';
      return section.split('\n').map((line) => line.trim().split(/\s+/)[0]!).filter((name) => name !== '');
    };
    const commands = commandsOf(top.stdout);
    expect(commands).toContain('runs');
    const checked: string[] = [];
    const check = (words: string[]): void => {
      const help = uhlp([...words, '--help']);
      const what = `uhlp ${words.join(' ')} --help`;
      expect(help.status, `${what}: ${help.stderr}`).toBe(0);
      expect(help.stdout, what).toMatch(/\nexamples:\n {2}uhlp /);
      checked.push(words.join(' '));
      for (const sub of commandsOf(help.stdout)) check([...words, sub]);
    };
    for (const command of commands) check([command]);
    // Groups and their subcommands: the CLI has far more than its top-level commands.
    expect(checked.length).toBeGreaterThan(commands.length + 10);
  }, 300_000);

  it('npm link puts uhlp on PATH, as the README says', () => {
    const prefix = path.join(work, 'npm-prefix');
    const linked = run('npm', ['link', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { env: { ...process.env, npm_config_prefix: prefix }, timeoutMs: 120_000 });
    expect(linked.status, linked.stdout + linked.stderr).toBe(0);
    const onPath = run('uhlp', ['--version'], { cwd: work, env: { ...process.env, PATH: `${path.join(prefix, 'bin')}:${process.env.PATH ?? ''}` } });
    expect(onPath.status, onPath.stderr).toBe(0);
    expect(onPath.stdout).toMatch(/^uhlp \d/);
  }, 180_000);

  it("the app guide's snippets hold in the clone", async () => {
    await replayGuide(clone);
  }, 600_000);
});
