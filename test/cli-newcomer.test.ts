/**
 * The command line as a newcomer meets it, through the real `uhlp` (bin/uhlp.js
 * over dist/): misspellings answered with the nearest name, one exit-code
 * convention, start-up failures that name their setting and exit at once, a
 * plain directory refused rather than turned into a repository, and client
 * commands that find a `uhlp dev` on another port.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

const APP_YAML = `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: tiny }
spec:
  pools:
    - { name: node, runner: RUNNER, minWarm: 1, maxSize: 1 }
  components:
    - { id: hi, handler: JIT, pool: node, jit: { script: scripts/hi.mjs } }
  routes:
    - { http: { method: GET, path: /hi }, component: hi }
`;

/** A plain directory holding one app (the core git-inits it on first use). */
function appsDir(runner = 'jit'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-cli-apps-'));
  mkdirSync(path.join(dir, 'apps', 'tiny', 'scripts'), { recursive: true });
  writeFileSync(path.join(dir, 'apps', 'tiny', 'app.yaml'), APP_YAML.replace('RUNNER', runner));
  writeFileSync(path.join(dir, 'apps', 'tiny', 'scripts', 'hi.mjs'), 'export default () => ({ hi: true });\n');
  return dir;
}

function uhlp(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 30_000): { status: number | null; stdout: string; stderr: string; ms: number } {
  const started = Date.now();
  const result = spawnSync(process.execPath, [UHLP_BIN, ...args], { encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, UHLP_LOG_LEVEL: 'warn', ...env } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, ms: Date.now() - started };
}

const dataDir = (): string => mkdtempSync(path.join(os.tmpdir(), 'uhlp-cli-data-'));

describe('uhlp for a newcomer', () => {
  it.each([
    { args: ['stauts'], exit: 64, says: 'did you mean "status"' },
    { args: ['dev', '--prot', '9090'], exit: 64, says: '--port' },
    { args: ['queues', 'lss'], exit: 64, says: 'ls' },
    { args: ['--version'], exit: 0, says: 'uhlp 0.' },
    { args: ['dev', '--help'], exit: 0, says: 'examples:' },
    { args: ['ledger', 'verify', '--help'], exit: 0, says: 'examples:' },
    { args: [], exit: 64, says: 'usage: uhlp <command>' },
  ])('uhlp $args exits $exit and says "$says"', ({ args, exit, says }) => {
    const result = uhlp(args);
    expect(result.status, result.stderr).toBe(exit);
    expect(result.stdout + result.stderr).toContain(says);
  });

  it('refuses a directory without apps/ and leaves it no repository', () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'uhlp-cli-empty-'));
    const result = uhlp(['dev', empty, '--port', '0', '--data-dir', dataDir()]);
    expect(result.status).toBe(64);
    expect(result.stderr).toContain('apps/');
    expect(existsSync(path.join(empty, '.git'))).toBe(false);
  });

  it.each<{ what: string; args: string[]; env: Record<string, string>; names: string }>([
    { what: 'an address that is none', args: [], env: { UHLP_HOST: '999.1.1.1' }, names: 'UHLP_HOST' },
    { what: 'a missing scripted-answers file', args: [], env: { UHLP_LLM_SCRIPT_FILE: '/nonexistent/answers.yaml' }, names: 'UHLP_LLM_SCRIPT_FILE' },
    { what: 'a remote that cannot be pulled', args: ['--pull', 'nosuchremote'], env: {}, names: '--pull' },
  ])('a start-up failure ($what) exits non-zero within seconds, naming $names', ({ args, env, names }) => {
    const result = uhlp(['dev', appsDir(), '--port', '0', '--data-dir', dataDir(), ...args], env);
    expect(result.status, result.stdout + result.stderr).not.toBe(0);
    expect(result.status).not.toBeNull(); // it exited by itself, before the timeout
    expect(result.stderr).toContain(names);
    expect(result.ms).toBeLessThan(15_000);
  });

  it('a port in use is refused with a hint at --port', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const result = uhlp(['dev', appsDir(), '--port', String(port), '--data-dir', dataDir()]);
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain(String(port));
      expect(result.stderr).toContain('--port');
    } finally {
      server.close();
    }
  });

  it('an LLM app with nothing to answer it is named at start, with the settings that would', async () => {
    const dir = appsDir();
    mkdirSync(path.join(dir, 'apps', 'asker', 'prompts'), { recursive: true });
    writeFileSync(path.join(dir, 'apps', 'asker', 'prompts', 'ask.njk'), 'Say hi\n');
    writeFileSync(
      path.join(dir, 'apps', 'asker', 'app.yaml'),
      [
        'apiVersion: uhlp.dev/v1alpha1',
        'kind: AppDefinition',
        'metadata: { name: asker }',
        'spec:',
        '  pools: [{ name: brain, runner: llm, minWarm: 0, maxSize: 1 }]',
        '  components: [{ id: ask, handler: LLM, pool: brain, llm: { prompt: prompts/ask.njk } }]',
        '  routes: [{ http: { method: GET, path: /ask }, component: ask }]',
        '  capabilities: { llm: { models: [small] } }',
        '',
      ].join('\n'),
    );
    // The core inherits this process's environment: neither LLM setting may reach it.
    const saved = { ...process.env };
    delete process.env.UHLP_LLM_SCRIPT_FILE;
    delete process.env.UHLP_LLM_BASE_URL;
    let core: UhlpProcess | undefined;
    try {
      core = await startUhlpDev(dir, [], 60_000, dataDir());
      await waitFor(() => /hint: asker has LLM components and no model answers them \(they answer 500 UHLP_LLM_NO_SCRIPTED_ANSWER\)[^\n]*llm-answers\.yaml/.test(core!.stderr()), { timeoutMs: 10_000, what: 'the hint about asker' });
    } finally {
      process.env = saved;
      await core?.stop();
    }
  }, 90_000);

  describe('a uhlp dev on a free port', () => {
    let core: UhlpProcess;
    let dir: string;
    beforeAll(async () => {
      dir = dataDir();
      core = await startUhlpDev(appsDir('lm'), [], 60_000, dir);
    }, 90_000);
    afterAll(async () => {
      await core?.stop();
    });

    it('says what a misspelt runner should be, with the allowed values', async () => {
      // The hints follow the ready line.
      const hint = /hint: apps\/tiny\/app\.yaml is not served: \/spec\/pools\/0\/runner must be one of jit, llm, [^\n]*; got "lm" \(did you mean llm\?\)/;
      await waitFor(() => hint.test(core.stderr()), { timeoutMs: 10_000, what: 'the hint about runner: lm' });
    });

    it('is found by status and by the client commands through its data directory', () => {
      const status = uhlp(['status', '--data-dir', dir]);
      expect(status.status, status.stdout + status.stderr).toBe(0);
      expect(status.stdout).toContain(core.url.replace(/\/$/, ''));
      const queues = uhlp(['queues', 'ls', '--data-dir', dir]);
      expect(queues.status, queues.stderr).toBe(0);
      const viaEnv = uhlp(['queues', 'ls', '--json'], { UHLP_OPERATOR_URL: core.operatorUrl, UHLP_DATA_DIR: dir });
      expect(viaEnv.status, viaEnv.stderr).toBe(0);
    });

    it('a client command pointed at nothing names the URL it tried and exits 1', () => {
      const result = uhlp(['runs', 'show', 'RUN-20250101T120000000Z-0123456789ABCDEFGHJK', '--url', 'http://127.0.0.1:1']);
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('http://127.0.0.1:1');
    });
  });
});
