import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait-for.js';
import { probeSpineSocket, sendSpineExit } from './spine-control.js';
import { newSpineSecret } from './spine-secret.js';
import { createSpineServer } from './spine-server.js';

const SECRET = newSpineSecret();

describe('spine control', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'uhlp-spine-control-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('probes a listening core and delivers exit to its onExit hook', async () => {
    const socketPath = join(dir, 'core.sock');
    let exited!: () => void;
    const exitCalled = new Promise<void>((resolve) => (exited = resolve));
    const refused: string[] = [];
    let exits = 0;
    const server = createSpineServer({
      socketPath,
      secret: SECRET,
      onExit: () => {
        exits += 1;
        exited();
      },
      onProtocolError: (error) => refused.push(error.code),
    });
    await server.listen();
    try {
      expect(await probeSpineSocket(socketPath)).toBe(true);
      // A wrong secret is delivered too, and refused.
      expect(await sendSpineExit(socketPath, { secret: newSpineSecret() })).toBe(true);
      await waitFor(() => refused.length === 1, { what: 'the refusal' });
      expect(refused).toEqual(['UHLP_SPINE_FORBIDDEN']);
      expect(exits).toBe(0);
      expect(await sendSpineExit(socketPath, { secret: SECRET })).toBe(true);
      await exitCalled;
    } finally {
      await server.close();
    }
    expect(await probeSpineSocket(socketPath)).toBe(false);
  });

  it('answers false for a missing socket and for a stale socket file', async () => {
    expect(await probeSpineSocket(join(dir, 'missing.sock'))).toBe(false);
    expect(await sendSpineExit(join(dir, 'missing.sock'), { secret: SECRET })).toBe(false);
    const stale = join(dir, 'stale.sock');
    await writeFile(stale, '');
    expect(await probeSpineSocket(stale)).toBe(false);
  });
});
