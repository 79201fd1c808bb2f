// The real std-body host process against a real spine server, both on a Unix
// socket in a temp dir: registration with the secret read from the file beside
// the socket, invocation, reconnect after the core restarts (with a new secret),
// and unavailability once the host is gone.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSpineSecret, spineSecretPath } from '../src/spine/spine-secret.js';
import { type SpineServer, createSpineServer } from '../src/spine/spine-server.js';
import { REPO_ROOT } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

// The built entry, as `uhlp start` runs it (scripts/test.sh builds first).
const MAIN = join(REPO_ROOT, 'dist', 'std-body', 'main.js');

describe('std-body host process', () => {
  let dir: string;
  let socketPath: string;
  let server: SpineServer;
  let host: ChildProcess;
  let hostLog = '';

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
    dir = await mkdtemp(join(tmpdir(), 'uhlp-std-body-'));
    socketPath = join(dir, 'core.sock');
    // The host starts first and must wait for the core's socket to appear.
    host = spawn(process.execPath, [MAIN, '--socket', socketPath], { stdio: ['ignore', 'ignore', 'pipe'] });
    host.stderr?.on('data', (chunk: Buffer) => (hostLog += chunk.toString()));
    server = createSpineServer({ socketPath, secret: newSpineSecret(), secretFile: spineSecretPath(socketPath) });
    await server.listen();
    await server.waitForRoute('tool.shell.exec', 'cap.std.shell', 20_000);
    await server.waitForRoute('tool.web.fetch', 'cap.std.web.fetch', 5_000);
  });

  afterAll(async () => {
    if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL');
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a shell command through the spine, argv kept inert', async () => {
    const result = await server.invoke('tool.shell.exec', 'cap.std.shell', { argv: ['printf', '%s', '$(id) ; ls | wc'], cwd: dir }, { timeoutMs: 10_000 });
    expect(result).toMatchObject({ outcome: 'applied', observation: { exitCode: 0, stdout: '$(id) ; ls | wc' } });
  });

  it('reports a command past its timeout as rejected timeout', async () => {
    const result = await server.invoke('tool.shell.exec', 'cap.std.shell', { argv: ['sleep', '30'], timeoutMs: 200 }, { timeoutMs: 10_000 });
    expect(result).toMatchObject({ outcome: 'rejected', reason: 'timeout' });
  });

  it('refuses a loopback fetch that the payload does not allow', async () => {
    const result = await server.invoke('tool.web.fetch', 'cap.std.web.fetch', { url: 'http://127.0.0.1:9/' }, { timeoutMs: 10_000 });
    expect(result).toMatchObject({ outcome: 'rejected', reason: 'refused', observation: { code: 'UHLP_WEB_ADDRESS_NOT_ALLOWED' } });
  });

  it('registers again after the core restarts, with the new core\'s secret', async () => {
    await server.close();
    server = createSpineServer({ socketPath, secret: newSpineSecret(), secretFile: spineSecretPath(socketPath) });
    await server.listen();
    await server.waitForRoute('tool.shell.exec', 'cap.std.shell', 10_000);
    await server.waitForRoute('tool.web.fetch', 'cap.std.web.fetch', 5_000);
    const result = await server.invoke('tool.shell.exec', 'cap.std.shell', { argv: ['echo', 'back'] }, { timeoutMs: 10_000 });
    expect(result.observation).toMatchObject({ stdout: 'back\n' });
    expect(hostLog).toContain('"event":"disconnected"');
  });

  it('answers UHLP_ENDPOINT_UNAVAILABLE once the host has exited on SIGTERM', async () => {
    const exited = new Promise<number | null>((done) => host.once('exit', (code) => done(code)));
    host.kill('SIGTERM');
    expect(await exited).toBe(0);
    await waitFor(() => !server.isAvailable('tool.shell.exec', 'cap.std.shell'), { what: 'the shell route to go away' });
    await expect(server.invoke('tool.shell.exec', 'cap.std.shell', { argv: ['true'] })).rejects.toMatchObject({
      code: 'UHLP_ENDPOINT_UNAVAILABLE',
      statusCode: 503,
    });
  });
});
