import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { probeSpineSocket, sendSpineExit } from './spine-control.js';
import { createSpineServer } from './spine-server.js';

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
    const server = createSpineServer({ socketPath, onExit: () => exited() });
    await server.listen();
    try {
      expect(await probeSpineSocket(socketPath)).toBe(true);
      expect(await sendSpineExit(socketPath)).toBe(true);
      await exitCalled;
    } finally {
      await server.close();
    }
    expect(await probeSpineSocket(socketPath)).toBe(false);
  });

  it('answers false for a missing socket and for a stale socket file', async () => {
    expect(await probeSpineSocket(join(dir, 'missing.sock'))).toBe(false);
    expect(await sendSpineExit(join(dir, 'missing.sock'))).toBe(false);
    const stale = join(dir, 'stale.sock');
    await writeFile(stale, '');
    expect(await probeSpineSocket(stale)).toBe(false);
  });
});
