/**
 * A core with a ledger key (`UHLP_LEDGER_KEY_FILE`), through `uhlp dev` on real
 * processes: the ledger thread seals every entry with HMAC-SHA256, and
 * `uhlp ledger verify` needs the key, and catches a changed entry even when the
 * whole file was re-hashed with plain sha256 or re-sealed with another key,
 * and an unhashed entry put before a session's keyed chain.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeEntryHash } from '../src/ledger/ledger-entry.js';
import { readLedgerKeyFile } from '../src/ledger/ledger-key.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

type Entry = Record<string, unknown>;

let core: UhlpProcess;
let keyFile: string;
let otherKeyFile: string;

beforeAll(async () => {
  const secrets = mkdtempSync(path.join(os.tmpdir(), 'uhlp-ledger-key-'));
  keyFile = path.join(secrets, 'ledger-key');
  otherKeyFile = path.join(secrets, 'other-key');
  // As `openssl rand -hex 32 > key` writes it, or a Kubernetes Secret is mounted.
  writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  writeFileSync(otherKeyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  core = await startUhlpDev(copyFixture('stateful'), [], 30_000, undefined, { UHLP_LEDGER_KEY_FILE: keyFile });
});
afterAll(async () => {
  await core?.stop();
});

function verify(args: string[], env: Record<string, string> = {}): { code: number; out: string } {
  const clean = { ...process.env, UHLP_LEDGER_KEY_FILE: '', UHLP_LEDGER_KEY: '', ...env };
  try {
    return { code: 0, out: execFileSync(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', core.dataDir, ...args], { encoding: 'utf8', env: clean, stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (error) {
    const e = error as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: e.stdout + e.stderr };
  }
}

describe('a core with a ledger key', () => {
  it('seals its ledgers with HMAC-SHA256; verify needs the key and names the first forged entry', async () => {
    const key = readLedgerKeyFile(keyFile);
    const first = await fetch(`${core.url}/counter/version`, { headers: { 'X-UHLP-Session': 'new' } });
    const sessionId = first.headers.get('x-uhlp-session-id')!;
    for (let i = 0; i < 3; i++) await fetch(`${core.url}/counter/version`, { headers: { 'X-UHLP-Session-ID': sessionId } });
    const file = path.join(core.dataDir, 'planes/development/sessions', sessionId, 'ledger', 'exec.jsonl');
    const read = (): Entry[] => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Entry);
    await waitFor(() => read().length === 4, { what: 'four exec entries', timeoutMs: 10_000 });
    for (const entry of read()) expect(entry).toMatchObject({ hash_alg: 'hmac-sha256', key_id: key.id, entry_hash: expect.stringMatching(/^hmac-sha256:/) });
    // Only sessions of this test are keyed: the ambient ones too, so the whole data directory verifies.
    expect(verify(['--full'], { UHLP_LEDGER_KEY_FILE: keyFile })).toMatchObject({ code: 0 });
    expect(verify(['--key-file', keyFile]).code).toBe(0);
    const keyless = verify([]);
    expect(keyless.code).toBe(1);
    expect(keyless.out).toContain(`${file}:1: KEY_REQUIRED: entry is sealed with ledger key ${key.id}: verifying it needs that key`);

    const original = readFileSync(file, 'utf8');
    // Change turn 2 and re-hash the whole chain with plain sha256, as a local writer without the key can.
    const forged: Entry[] = [];
    for (const [i, entry] of read().entries()) {
      const { hash_alg: _a, key_id: _k, entry_hash: _h, ...rest } = entry;
      const changed: Entry = { ...rest, ...(i === 1 ? { status: 'error' } : {}), previous_hash: i === 0 ? null : forged[i - 1]!.entry_hash };
      forged.push({ ...changed, entry_hash: computeEntryHash(changed) });
    }
    writeFileSync(file, forged.map((e) => `${JSON.stringify(e)}\n`).join(''));
    const downgraded = verify(['--key-file', keyFile]);
    expect(downgraded.code).toBe(1);
    expect(downgraded.out).toContain(`${file}:1: UNKEYED_CHAIN:`);

    // The same, re-sealed with a key of the attacker's own.
    const other = readLedgerKeyFile(otherKeyFile);
    const resealed: Entry[] = [];
    for (const [i, entry] of forged.entries()) {
      const { entry_hash: _h, ...rest } = entry;
      const changed: Entry = { ...rest, hash_alg: 'hmac-sha256', key_id: other.id, previous_hash: i === 0 ? null : resealed[i - 1]!.entry_hash };
      resealed.push({ ...changed, entry_hash: computeEntryHash(changed, other) });
    }
    writeFileSync(file, resealed.map((e) => `${JSON.stringify(e)}\n`).join(''));
    const otherKey = verify(['--key-file', keyFile]);
    expect(otherKey.code).toBe(1);
    expect(otherKey.out).toContain(`${file}:1: KEY_UNKNOWN: entry is sealed with key id ${other.id}`);
    writeFileSync(file, original);
    expect(verify(['--key-file', keyFile]).code).toBe(0);
  });

  it('refuses an unhashed entry a writer without the key put before the keyed chain of a session, naming file and line', async () => {
    const first = await fetch(`${core.url}/counter/version`, { headers: { 'X-UHLP-Session': 'new' } });
    const sessionId = first.headers.get('x-uhlp-session-id')!;
    await fetch(`${core.url}/counter/version`, { headers: { 'X-UHLP-Session-ID': sessionId } });
    const dir = path.join(core.dataDir, 'planes/development/sessions', sessionId, 'ledger');
    const files = ['exec.jsonl', 'evidence.jsonl'].map((name) => path.join(dir, name));
    const entries = (file: string): Entry[] => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Entry);
    await waitFor(() => files.every((file) => entries(file).length === 2), { what: 'two entries in each ledger', timeoutMs: 10_000 });
    expect(verify(['--key-file', keyFile, '--full']).code).toBe(0);
    const originals = files.map((file) => readFileSync(file, 'utf8'));
    for (const file of files) {
      // A "legacy" entry: no entry_hash, the right session_id.
      const { entry_hash: _h, previous_hash: _p, hash_alg: _a, key_id: _k, ...rest } = entries(file)[0]!;
      writeFileSync(file, `${JSON.stringify({ ...rest, turn_number: 0, status: 'ok' })}\n${readFileSync(file, 'utf8')}`);
    }
    for (const flags of [['--full'], ['--full', '--allow-unkeyed']]) {
      const forged = verify(['--key-file', keyFile, ...flags]);
      expect(forged.code).toBe(1);
      for (const file of files) expect(forged.out).toContain(`${file}:1: UNKEYED_ENTRY: entry has no entry_hash (line 1), but this session is sealed with a ledger key`);
    }
    files.forEach((file, i) => writeFileSync(file, originals[i]!));
    expect(verify(['--key-file', keyFile, '--full']).code).toBe(0);
  });

  it('refuses to start with a key that is too short, naming the setting', async () => {
    const short = path.join(path.dirname(keyFile), 'short-key');
    writeFileSync(short, 'too-short\n');
    await expect(startUhlpDev(copyFixture('stateful'), [], 15_000, undefined, { UHLP_LEDGER_KEY_FILE: short })).rejects.toThrow(
      /UHLP_LEDGER_KEY_FILE .*short-key must hold a ledger key of 32-4096 bytes/,
    );
  });
});
