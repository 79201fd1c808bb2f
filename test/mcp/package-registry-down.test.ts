/**
 * A core whose npm registry cannot be reached (a closed loopback port as the
 * registry, an empty package cache): it listens and is ready within seconds,
 * serves the app without servers, and shows the other app's server pool as
 * failed in /readyz with npm's reason; the app's calls to that server say
 * why, and the log has the failure's code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';

describe('a core whose npm registry is unreachable', () => {
  let core: UhlpProcess;
  let packageCache: string;
  let startedIn: number;

  beforeAll(async () => {
    packageCache = mkdtempSync(path.join(os.tmpdir(), 'uhlp-registry-down-'));
    const started = performance.now();
    core = await startUhlpDev(copyFixture('registry-down'), [], 60_000, undefined, {
      UHLP_LOG_LEVEL: 'info',
      UHLP_MCP_PACKAGE_CACHE: packageCache,
      npm_config_registry: `http://127.0.0.1:${await freePort()}/`,
    });
    startedIn = performance.now() - started;
  }, 90_000);

  afterAll(async () => {
    await core?.stop();
    rmSync(packageCache, { recursive: true, force: true });
  });

  it('is ready within seconds, serves the app without servers, and reports the failed pool', async () => {
    // npm's own retries would take over a minute; the install fails fast and holds nothing.
    expect(startedIn).toBeLessThan(30_000);
    const readyz = await fetch(`${core.url}/readyz`);
    expect(readyz.status).toBe(200);
    const body = (await readyz.json()) as { status: string; pools: Array<Record<string, any>> };
    expect(body.status).toBe('degraded');
    expect(body.pools).toContainEqual(expect.objectContaining({ app: 'plain', pool: 'main', ready: true }));
    const failed = body.pools.find((pool) => pool.app === 'fed' && pool.pool === 'memory');
    expect(failed).toMatchObject({ ready: false, state: 'failed', error: { code: 'UHLP_MCP_PACKAGE_FAILED' } });
    expect(failed!.error.message).toContain('@modelcontextprotocol/server-memory@2026.8.31');
    expect(failed!.error.message).toMatch(/ECONNREFUSED/);

    const hello = await fetch(`${core.url}/plain/hello`);
    expect(hello.status).toBe(200);
    expect(await hello.json()).toEqual({ hello: 'world' });
  });

  it("answers the app's calls to the server with the reason, and logs the failure's code", async () => {
    const answer = (await (await fetch(`${core.url}/fed/graph`)).json()) as { error?: { code: string; message: string; details: Record<string, unknown> } };
    expect(answer.error).toMatchObject({ code: 'UHLP_MCP_SERVER_UNAVAILABLE', details: { server: 'app.memory', cause: 'UHLP_MCP_PACKAGE_FAILED' } });
    expect(answer.error!.message).toContain('@modelcontextprotocol/server-memory@2026.8.31');
    const failures = core
      .stderr()
      .split('\n')
      .filter((line) => line.includes('"code":"UHLP_MCP_PACKAGE_FAILED"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(failures[0]).toMatchObject({ app: 'fed', pool: 'memory', details: { package: '@modelcontextprotocol/server-memory@2026.8.31' } });
  });
});
