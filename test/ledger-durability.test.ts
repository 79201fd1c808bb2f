/**
 * `--ledger-durability sync` through a real `uhlp dev` on process sandboxes: a
 * load of concurrent requests on loopback records the request ids it saw
 * acknowledged (a 200 with its X-Request-ID), the core is killed with SIGKILL in
 * the middle of it, and after a restart on the same data directory every one of
 * those ids is in an exec entry of the ledger, which verifies (a torn tail the
 * kill left is reported as such and repaired, and takes no acknowledged turn).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { descendants, isAlive, startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

const CONNECTIONS = 16;
/** Acknowledged requests to see before the kill: enough that turns are in flight in every stage. */
const ACKED_BEFORE_KILL = 400;

function writeApp(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-durability-'));
  const appDir = path.join(dir, 'apps', 'bench');
  mkdirSync(path.join(appDir, 'scripts'), { recursive: true });
  writeFileSync(
    path.join(appDir, 'app.yaml'),
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools: [{ name: p, minWarm: 2, maxSize: 2, concurrency: 8, maxUses: 100000000, limits: { timeoutMs: 5000 } }]
  components: [{ id: hello, handler: JIT, pool: p, jit: { script: scripts/behaviours.mjs, function: hello } }]
  routes: [{ http: { method: GET, path: /hello/:name }, component: hello }]
`,
  );
  writeFileSync(path.join(appDir, 'scripts', 'behaviours.mjs'), 'export const hello = (event) => ({ hello: event.httpDetails.pathParameters.name });\n');
  return dir;
}

/** Every request_id in the exec entries of every segment of every session. */
function ledgeredRequestIds(dataDir: string): Set<string> {
  const ids = new Set<string>();
  const planes = path.join(dataDir, 'planes');
  for (const tier of readdirSync(planes)) {
    const sessions = path.join(planes, tier, 'sessions');
    for (const sid of readdirSync(sessions)) {
      const dir = path.join(sessions, sid, 'ledger');
      for (const name of readdirSync(dir).filter((n) => /^exec(\.\d+)?\.jsonl$/.test(n))) {
        for (const line of readFileSync(path.join(dir, name), 'utf8').split('\n')) {
          // A torn last line does not parse: it was never acknowledged.
          try {
            const entry = JSON.parse(line) as { request_id?: string };
            if (entry.request_id) ids.add(entry.request_id);
          } catch {
            // not a whole line
          }
        }
      }
    }
  }
  return ids;
}

function verify(dataDir: string, ...args: string[]): { code: number; out: string } {
  try {
    return { code: 0, out: execFileSync(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', dataDir, '--full', '--quiet', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (error) {
    const e = error as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: e.stdout + e.stderr };
  }
}

describe('sync ledger durability', () => {
  const started: UhlpProcess[] = [];
  const orphans: number[] = [];
  afterEach(async () => {
    for (const core of started) await core.stop();
    // The sandboxes of a core killed with SIGKILL outlive it: they were ours.
    for (const pid of orphans) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });

  it('has every request acknowledged before a SIGKILL under load in the ledger after a restart', async () => {
    const definitions = writeApp();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-durability-data-'));
    const core = await startUhlpDev(definitions, ['--ledger-durability', 'sync', '--log-level', 'error'], 30_000, dataDir);
    started.push(core);

    const acked: string[] = [];
    let failures = 0;
    let killed = false;
    let sequence = 0;
    const worker = async (): Promise<void> => {
      while (!killed) {
        const name = `n${sequence++}`;
        try {
          const response = await fetch(`${core.url}/bench/hello/${name}`);
          const id = response.headers.get('x-request-id');
          const body = await response.text();
          // Acknowledged: the answer came, whole, with its id.
          if (response.status === 200 && id && body.includes(name)) acked.push(id);
          else if (!killed) failures += 1;
        } catch {
          if (!killed) failures += 1;
        }
      }
    };
    const load = Promise.all(Array.from({ length: CONNECTIONS }, worker));
    await waitFor(() => acked.length >= ACKED_BEFORE_KILL || failures > 0, { what: `${ACKED_BEFORE_KILL} acknowledged requests`, timeoutMs: 40_000 });
    expect(failures).toBe(0);
    orphans.push(...descendants(core.child.pid!));
    // In the middle of the load: requests are queued, executing, and waiting for their entries.
    killed = true;
    expect(await core.stop('SIGKILL')).toBeNull();
    expect(core.child.signalCode).toBe('SIGKILL');
    await load;
    const ackedAtKill = [...acked];
    expect(ackedAtKill.length).toBeGreaterThanOrEqual(ACKED_BEFORE_KILL);

    // Before anything touches the data directory: every acknowledged id is there.
    const written = ledgeredRequestIds(dataDir);
    expect(ackedAtKill.filter((id) => !written.has(id))).toEqual([]);

    // A restart on the same data directory goes on from what the kill left.
    const restarted = await startUhlpDev(definitions, ['--ledger-durability', 'sync', '--log-level', 'error'], 30_000, dataDir);
    started.push(restarted);
    const after = await fetch(`${restarted.url}/bench/hello/after`);
    expect(after.status).toBe(200);
    const afterId = after.headers.get('x-request-id')!;
    await restarted.stop();

    const first = verify(dataDir);
    // A torn tail (a turn cut short by the kill, never acknowledged) is reported as such, never as tampering.
    expect([0, 3], first.out).toContain(first.code);
    if (first.code === 3) {
      expect(first.out).toContain('TORN_TAIL');
      expect(verify(dataDir, '--repair').code).toBe(0);
    }
    expect(verify(dataDir)).toMatchObject({ code: 0 });
    const ledgered = ledgeredRequestIds(dataDir);
    expect(ackedAtKill.filter((id) => !ledgered.has(id))).toEqual([]);
    expect(ledgered.has(afterId)).toBe(true);
  });
});
