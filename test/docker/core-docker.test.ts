/**
 * `uhlp dev --driver docker` end to end: requests run in hardened containers
 * with no network, tool calls reach the core through its mounted MCP socket, and
 * a timed-out container is destroyed and replaced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';
import { requireDocker } from './docker-env.js';

let core: UhlpProcess;

beforeAll(async () => {
  await requireDocker();
  core = await startUhlpDev(copyFixture('boxed'), ['--driver', 'docker'], 180_000);
}, 200_000);
afterAll(async () => {
  await core?.stop();
});

describe('core on the Docker driver', () => {
  it('runs the script in a container without network, as a non-root user', async () => {
    const response = await fetch(`${core.url}/boxed/inside`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { uid: number; interfaces: string[] };
    expect(body.uid).not.toBe(0);
    expect(body.interfaces).toEqual(['lo']);
  });

  it('reaches the core tools through the mounted MCP socket, within the capabilities', async () => {
    const first = (await (await fetch(`${core.url}/boxed/count`, { method: 'POST' })).json()) as Record<string, unknown>;
    expect(first).toEqual({ n: 1, unit: 'visits', refused: 'UHLP_CAPABILITY_DENIED' });
    const second = (await (await fetch(`${core.url}/boxed/count`, { method: 'POST' })).json()) as Record<string, unknown>;
    expect(second.n).toBe(2);
  });

  it('answers 504 past timeoutMs, destroys the container and keeps serving', async () => {
    const response = await fetch(`${core.url}/boxed/hang`);
    expect(response.status).toBe(504);
    expect(((await response.json()) as { code: string }).code).toBe('UHLP_SANDBOX_TIMEOUT');
    await waitFor(async () => (await fetch(`${core.url}/boxed/inside`)).status === 200, { timeoutMs: 20_000 });
    // Counted once the driver has seen the container exit.
    const counted = async (): Promise<boolean> =>
      /uhlp_sandbox_destroyed_total\{app="boxed",pool="main",cause="timeout"\} 1/.test(await (await fetch(`${core.url}/metrics`)).text());
    await waitFor(counted, { timeoutMs: 20_000, what: 'the timed-out container counted' });
  });
});
