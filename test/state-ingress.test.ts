/**
 * Runtime state at ingress, through `uhlp dev` on real processes and a real Git
 * repository: Idempotency-Key replay, rate limits, sessions and the ledger, and
 * hot reload of committed definitions.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitAll } from './helpers/git-repo.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

let core: UhlpProcess;
let defs: string;

beforeAll(async () => {
  defs = copyFixture('stateful');
  core = await startUhlpDev(defs);
});
afterAll(async () => {
  await core?.stop();
});

async function call(pathname: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; json: any }> {
  const response = await fetch(`${core.url}${pathname}`, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

describe('Idempotency-Key', () => {
  it('replays a completed answer without running the component again', async () => {
    const init = { method: 'POST', body: 'order-1', headers: { 'Idempotency-Key': 'k-replay' } };
    const first = await call('/counter/mint', init);
    const second = await call('/counter/mint', init);
    expect(first.status).toBe(200);
    expect(second.json).toEqual(first.json);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const fresh = await call('/counter/mint', { method: 'POST', body: 'order-1' });
    expect(fresh.json.id).not.toBe(first.json.id);
  });

  it('refuses the same key for a different request', async () => {
    await call('/counter/mint', { method: 'POST', body: 'a', headers: { 'Idempotency-Key': 'k-reuse' } });
    const reused = await call('/counter/mint', { method: 'POST', body: 'b', headers: { 'Idempotency-Key': 'k-reuse' } });
    expect(reused.status).toBe(422);
    expect(reused.json.code).toBe('UHLP_IDEMPOTENCY_KEY_REUSED');
  });

  it('makes a repeat of an in-flight request wait for it and get its answer', async () => {
    const init = { headers: { 'Idempotency-Key': 'k-slow' } };
    const [a, b] = await Promise.all([call('/counter/slow', init), new Promise((r) => setTimeout(r, 100)).then(() => call('/counter/slow', init))]);
    expect(a.status).toBe(200);
    expect(b.json).toEqual(a.json);
    expect([a.headers.get('idempotent-replayed'), b.headers.get('idempotent-replayed')]).toContain('true');
  });

  it('refuses a malformed key with 400 naming the header', async () => {
    const bad = await call('/counter/mint', { method: 'POST', headers: { 'Idempotency-Key': 'x'.repeat(300) } });
    expect(bad.status).toBe(400);
    expect(bad.json.details).toEqual({ field: 'Idempotency-Key' });
  });
});

describe('rate limits', () => {
  it('answers 429 with Retry-After past requestsPerSecond', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => call('/limited/ping')));
    const limited = results.filter((r) => r.status === 429);
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(2);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.json.code).toBe('UHLP_RATE_LIMITED');
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});

describe('sessions and the ledger', () => {
  it('counts turns of a session, writes both ledgers for each turn (failures too), and verifies', async () => {
    const first = await call('/counter/version', { headers: { 'X-UHLP-Session': 'new' } });
    const sessionId = first.headers.get('x-uhlp-session-id')!;
    expect(sessionId).toMatch(/^SES-/);
    expect(first.headers.get('x-uhlp-turn')).toBe('1');
    const second = await call('/counter/fail', { headers: { 'X-UHLP-Session-ID': sessionId } });
    expect(second.status).toBe(500);
    expect(second.headers.get('x-uhlp-turn')).toBe('2');
    const unknown = await call('/counter/version', { headers: { 'X-UHLP-Session-ID': 'SES-1-nope' } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe('UHLP_SESSION_NOT_FOUND');

    const dir = path.join(core.dataDir, 'planes/development/sessions', sessionId, 'ledger');
    const read = (name: string): any[] => readFileSync(path.join(dir, name), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    await waitFor(() => {
      try {
        return read('exec.jsonl').length === 2 && read('evidence.jsonl').length === 2;
      } catch {
        return false;
      }
    });
    expect(read('exec.jsonl').map((e) => [e.turn_number, e.status])).toEqual([
      [1, 'ok'],
      [2, 'error'],
    ]);
    expect(read('exec.jsonl')[1].previous_hash).toBe(read('exec.jsonl')[0].entry_hash);

    const verify = (): { code: number; out: string } => {
      try {
        return { code: 0, out: execFileSync(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', core.dataDir, '--full'], { encoding: 'utf8' }) };
      } catch (error) {
        const e = error as { status: number; stdout: string; stderr: string };
        return { code: e.status, out: e.stdout + e.stderr };
      }
    };
    expect(verify().code).toBe(0);
    const file = path.join(dir, 'exec.jsonl');
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, original.replace('"status":"error"', '"status":"ok"'));
    const tampered = verify();
    expect(tampered.code).not.toBe(0);
    expect(tampered.out).toContain(sessionId);
    writeFileSync(file, original);
  });
});

describe('ambient sessions', () => {
  it('records requests that name no session as turns of one ambient session per app, not a directory per request', async () => {
    const sessions = path.join(core.dataDir, 'planes/development/sessions');
    const before = new Set(readdirSync(sessions));
    const answers = await Promise.all(Array.from({ length: 5 }, () => call('/counter/version')));
    expect(answers.every((a) => a.status === 200 && a.headers.get('x-uhlp-session-id') === null)).toBe(true);
    // The default durability answers first and writes the turn after: the entries follow the answers by a moment.
    const hasFiveTurns = (s: string): boolean => {
      try {
        return readFileSync(path.join(sessions, s, 'ledger/exec.jsonl'), 'utf8').trim().split('\n').length >= 5;
      } catch {
        return false;
      }
    };
    await waitFor(() => readdirSync(sessions).some(hasFiveTurns), { timeoutMs: 10_000, what: 'the five turns in one ambient ledger' });
    expect(readdirSync(sessions).filter((s) => !before.has(s)).length).toBeLessThanOrEqual(1);
  });
});

describe('hot reload of committed definitions', () => {
  const script = (): string => path.join(defs, 'apps/counter/scripts/app.mjs');

  it('serves a new commit, while a request in flight finishes on the revision it started with', async () => {
    expect((await call('/counter/version')).json.version).toBe('v1');
    const inFlight = call('/counter/slow');
    await new Promise((r) => setTimeout(r, 100));
    writeFileSync(script(), readFileSync(script(), 'utf8').replace("VERSION = 'v1'", "VERSION = 'v2'"));
    commitAll(defs, 'v2');
    await waitFor(async () => (await call('/counter/version')).json.version === 'v2', { timeoutMs: 10_000, what: 'v2 served' });
    expect((await inFlight).json.version).toBe('v1');
  });

  it('keeps an app that a new commit breaks at its last valid revision, saying so in /readyz and metrics', async () => {
    const appYaml = path.join(defs, 'apps/counter/app.yaml');
    writeFileSync(appYaml, readFileSync(appYaml, 'utf8').replace('maxSize: 4', 'maxSize: many'));
    const bad = commitAll(defs, 'break the app');
    await waitFor(async () => (await call('/readyz')).json.revision === bad, { timeoutMs: 10_000, what: 'the new revision loaded' });
    const ready = await call('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json.heldBack).toEqual([
      {
        app: 'counter',
        servingRevision: expect.not.stringMatching(bad),
        problems: [expect.objectContaining({ file: 'apps/counter/app.yaml', path: '/spec/pools/0/maxSize' })],
      },
    ]);
    expect((await call('/counter/version')).json.version).toBe('v2');
    const metrics = await (await fetch(`${core.url}/metrics`)).text();
    expect(metrics).toMatch(/uhlp_definition_reloads_total\{outcome="held-back"\} 1/);
    expect(metrics).toMatch(/uhlp_definition_apps_held_back 1/);
  });
});
