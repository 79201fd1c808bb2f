/** `uhlp start` / `status` / `stop` end to end, with the real core and std-body host processes. */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { copyFixture, isAlive, UHLP_BIN } from './helpers/uhlp-process.js';

const run = promisify(execFile);

async function uhlp(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [UHLP_BIN, ...args], { env: { ...process.env, UHLP_LOG_LEVEL: 'warn' } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('uhlp start / status / stop', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-lc-'));
  const defs = copyFixture('journey');

  afterAll(async () => {
    await uhlp('stop', '--data-dir', dataDir);
  });

  it('reports not running before start', async () => {
    const status = await uhlp('status', '--data-dir', dataDir, '--json');
    expect(status.code).toBe(3);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: false });
  });

  let pids: { core: number; stdBody: number };

  it('starts the core and the std-body host, and records them', async () => {
    const started = await uhlp('start', defs, '--data-dir', dataDir, '--port', '0');
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(/uhlp started at http:\/\/127\.0\.0\.1:\d+/);
    const status = await uhlp('status', '--data-dir', dataDir, '--json');
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout);
    expect(report).toMatchObject({ running: true, core: { alive: true }, stdBody: { alive: true }, socket: { accepting: true } });
    pids = { core: report.core.pid, stdBody: report.stdBody.pid };
    const response = await fetch(`${report.url}/j/greet/lc`);
    expect(response.status).toBe(201);
    const again = await uhlp('start', defs, '--data-dir', dataDir, '--port', '0');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already running/);
  });

  it('reports a dead host as degraded, with a non-zero exit', async () => {
    process.kill(pids.stdBody, 'SIGTERM');
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (!isAlive(pids.stdBody)) {
          clearInterval(timer);
          resolve();
        }
      }, 20);
    });
    const status = await uhlp('status', '--data-dir', dataDir);
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(/std-body\s+pid \d+\s+DOWN/);
  });

  it('stops the core through its socket and clears the state', async () => {
    const stopped = await uhlp('stop', '--data-dir', dataDir);
    expect(stopped.code, stopped.stdout).toBe(0);
    expect(stopped.stdout).toMatch(/core exited/);
    expect(isAlive(pids.core)).toBe(false);
    const status = await uhlp('status', '--data-dir', dataDir, '--json');
    expect(status.code).toBe(3);
  });
});
