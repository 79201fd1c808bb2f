/**
 * Process sandboxes are contained by bubblewrap, or run only when the operator
 * accepted running them without it: `uhlp dev` says so loudly and serves,
 * `uhlp serve` refuses to start unless --unsafe-process-sandboxes is given.
 * A host without bubblewrap is simulated with UHLP_BWRAP pointing nowhere.
 */
import { describe, expect, it } from 'vitest';
import { copyFixture, startUhlpCore, type UhlpProcess } from './helpers/uhlp-process.js';

const NO_BWRAP = { UHLP_BWRAP: '/nonexistent/bwrap' };

async function readiness(core: UhlpProcess): Promise<{ driver: string; isolation: string }> {
  return (await (await fetch(`${core.url}/readyz`)).json()) as { driver: string; isolation: string };
}

async function withCore(core: Promise<UhlpProcess>, use: (core: UhlpProcess) => Promise<void>): Promise<void> {
  const started = await core;
  try {
    await use(started);
  } finally {
    await started.stop();
  }
}

describe('process sandbox isolation', () => {
  it('contains runners in namespaces where bubblewrap runs', async () => {
    await withCore(startUhlpCore('serve', copyFixture('journey')), async (core) => {
      expect(await readiness(core)).toMatchObject({ driver: 'process', isolation: 'namespaces' });
      expect(core.stderr()).not.toMatch(/UNSAFE/);
    });
  });

  it('refuses to serve unisolated sandboxes unless told to, naming the flag', async () => {
    await expect(startUhlpCore('serve', copyFixture('journey'), [], 30_000, undefined, NO_BWRAP)).rejects.toThrow(
      /process sandboxes cannot be isolated on this host: bubblewrap is not at \/nonexistent\/bwrap.*--unsafe-process-sandboxes/s,
    );
  });

  it('serves them with --unsafe-process-sandboxes, and in dev mode, saying so loudly', async () => {
    await withCore(startUhlpCore('serve', copyFixture('journey'), ['--unsafe-process-sandboxes'], 30_000, undefined, NO_BWRAP), async (core) => {
      expect(await readiness(core)).toMatchObject({ isolation: 'none' });
      expect((await fetch(`${core.url}/j/greet/ada`)).status).toBe(201);
    });
    await withCore(startUhlpCore('dev', copyFixture('journey'), [], 30_000, undefined, { ...NO_BWRAP, UHLP_LOG_LEVEL: 'error' }), async (core) => {
      expect(await readiness(core)).toMatchObject({ isolation: 'none' });
      expect(core.stderr()).toMatch(/UNSAFE: sandboxes are NOT isolated/);
      expect(core.stdout() + core.stderr()).toMatch(/UNSAFE: process sandboxes are NOT isolated/);
    });
  });
});
