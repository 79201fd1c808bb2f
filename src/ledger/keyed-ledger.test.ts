import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonLines as lines, writeJsonLines as rewrite } from '../../test/helpers/json-lines-file.js';
import { loadLedgerKey } from '../config.js';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { computeEntryHash, hashPayload, type LedgerEntry } from './ledger-entry.js';
import { ledgerKeyId, ledgerKeyring, makeLedgerKey, readLedgerKeyFile, type LedgerKey } from './ledger-key.js';
import { replayLedger } from './ledger-replay.js';
import { verifyLedgers } from './ledger-verify.js';
import { runLedgerVerify } from '../cli/ledger-verify-command.js';
import { EXIT_USAGE } from '../cli/exit-codes.js';

const newId = createSessionIdGenerator();
type Entry = Record<string, unknown>;

describe('ledger keys', () => {
  it('seal exactly as createHmac does, for short, block-sized and long keys and any text or bytes', () => {
    const texts = ['', 'plain', 'caf\u00e9 \u{1f600} \u2028', 'x'.repeat(40_000), '\u00e9'.repeat(9000)];
    for (const size of [32, 64, 65, 200]) {
      const secret = randomBytes(size);
      const key = makeLedgerKey(secret, 'test');
      for (const text of texts) {
        const expected = `hmac-sha256:${createHmac('sha256', secret).update(text, 'utf8').digest('hex')}`;
        expect(key.seal(text)).toBe(expected);
        expect(key.seal(Buffer.from(text, 'utf8'))).toBe(expected);
      }
      expect(key.id).toBe(ledgerKeyId(secret));
      expect(key.id).toMatch(/^[0-9a-f]{16}$/);
      expect(secret.toString('hex')).not.toContain(key.id);
    }
  });

  it('refuse a key of fewer than 32 bytes, naming the setting and never the bytes', () => {
    expect(() => makeLedgerKey(Buffer.from('short-secret'), 'UHLP_LEDGER_KEY')).toThrow(
      expect.objectContaining({ code: 'UHLP_CONFIG_INVALID', message: expect.stringMatching(/^UHLP_LEDGER_KEY must hold a ledger key of 32-4096 bytes.*got 12 bytes$/) }) as Error,
    );
    expect(() => loadLedgerKey({ UHLP_LEDGER_KEY: 'short-secret' })).toThrow(/UHLP_LEDGER_KEY must hold/);
    expect(() => loadLedgerKey({ UHLP_LEDGER_KEY: 'k'.repeat(32), UHLP_LEDGER_KEY_FILE: '/x' })).toThrow(/one key source/);
    expect(() => loadLedgerKey({ UHLP_LEDGER_KEY_FILE: '/nonexistent/ledger-key' })).toThrow(/UHLP_LEDGER_KEY_FILE \/nonexistent\/ledger-key cannot be read: ENOENT/);
    expect(loadLedgerKey({})).toBeUndefined();
    // What a configuration holds is safe to log: the secret is behind a method.
    expect(JSON.stringify(loadLedgerKey({ UHLP_LEDGER_KEY: 'k'.repeat(32) }))).not.toContain('kkkk');
  });

  it('read from a file as the bytes less one trailing line break (a mounted Secret, or `openssl rand -hex 32 > key`)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-key-'));
    try {
      const hex = randomBytes(32).toString('hex');
      await writeFile(path.join(dir, 'with-newline'), `${hex}\n`);
      await writeFile(path.join(dir, 'without'), hex);
      const a = readLedgerKeyFile(path.join(dir, 'with-newline'));
      expect(a.id).toBe(readLedgerKeyFile(path.join(dir, 'without')).id);
      expect(a.id).toBe(makeLedgerKey(Buffer.from(hex), 'x').id);
      expect(loadLedgerKey({ UHLP_LEDGER_KEY_FILE: path.join(dir, 'with-newline') })?.id).toBe(a.id);
      await writeFile(path.join(dir, 'short'), 'abc\n');
      expect(() => readLedgerKeyFile(path.join(dir, 'short'))).toThrow(/got 3 bytes/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('keyed ledgers', () => {
  let dataDir: string;
  let keyFile: string;
  let otherKeyFile: string;
  let key: LedgerKey;
  let otherKey: LedgerKey;
  let ledger: FileLedger;
  let sid: string;
  let dir: string;
  let clock: number;

  const execFile = (): string => path.join(dir, 'exec.jsonl');
  const evidenceFile = (): string => path.join(dir, 'evidence.jsonl');
  const checkpointFile = (): string => path.join(dir, 'checkpoints.jsonl');

  async function turns(on: FileLedger, from: number, to: number): Promise<void> {
    for (let n = from; n <= to; n++) {
      await on.recordTurn({ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload({ n }), resultHash: hashPayload(`r${n}`) });
    }
  }

  async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string[]; err: string[] }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runLedgerVerify(argv, { stdout: (l) => out.push(l), stderr: (l) => err.push(l) }, env);
    return { code, out, err };
  }

  /** What an attacker who can write the files does: change entry `at` (0-based) and re-seal the chain from `from` on. */
  function forge(entries: Entry[], at: number, from: number, reseal: (entry: Entry) => Entry): Entry[] {
    const forged: Entry[] = [];
    for (const [i, entry] of entries.entries()) {
      if (i < from) {
        forged.push(entry);
        continue;
      }
      const changed: Entry = i === at ? { ...entry, status: 'forged' } : { ...entry };
      changed.previous_hash = i === 0 ? null : forged[i - 1]!.entry_hash;
      forged.push(reseal(changed));
    }
    return forged;
  }
  const plain = (entry: Entry): Entry => {
    const { hash_alg: _a, key_id: _k, ...rest } = entry;
    return { ...rest, entry_hash: computeEntryHash(rest) };
  };
  const withKey =
    (sealKey: LedgerKey, claimedId = sealKey.id) =>
    (entry: Entry): Entry => {
      const next = { ...entry, hash_alg: 'hmac-sha256', key_id: claimedId };
      return { ...next, entry_hash: computeEntryHash(next, sealKey) };
    };

  const problems = async (options: Parameters<typeof verifyLedgers>[1] = {}): Promise<Array<[string, number, string]>> =>
    (await verifyLedgers(dataDir, options)).problems.map((p) => [path.basename(p.file), p.line, p.code]);

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-keyed-'));
    keyFile = path.join(dataDir, 'ledger.key');
    otherKeyFile = path.join(dataDir, 'other.key');
    await writeFile(keyFile, `${randomBytes(32).toString('hex')}\n`);
    await writeFile(otherKeyFile, `${randomBytes(32).toString('hex')}\n`);
    key = readLedgerKeyFile(keyFile);
    otherKey = readLedgerKeyFile(otherKeyFile);
    clock = Date.UTC(2026, 10, 22, 0, 0, 0);
    ledger = new FileLedger({ dataDir, tier: 'production', key, now: () => new Date((clock += 1000)) });
    sid = newId();
    dir = path.join(dataDir, 'planes', 'production', 'sessions', sid, 'ledger');
    await ledger.startSession(sid);
    await turns(ledger, 1, 5);
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('seal every entry with the key, naming the scheme and the key id, and verify with the key', async () => {
    for (const entry of [...(await lines(execFile())), ...(await lines(evidenceFile()))]) {
      expect(entry).toMatchObject({ hash_alg: 'hmac-sha256', key_id: key.id, entry_hash: expect.stringMatching(/^hmac-sha256:[0-9a-f]{64}$/) });
      expect(entry.entry_hash).toBe(computeEntryHash(entry, key));
    }
    expect(await problems({ keys: ledgerKeyring([key]) })).toEqual([]);
    const byFile = await run(['--data-dir', dataDir, '--key-file', keyFile]);
    expect(byFile).toMatchObject({ code: 0, err: [] });
    expect(byFile.out).toEqual([`ledger verify ok: 1 sessions, 2 files, 10 entries checked, 0 problems, 0 warnings, key ${key.id}`]);
    // The core's own settings work too.
    expect((await run(['--data-dir', dataDir], { UHLP_LEDGER_KEY_FILE: keyFile })).code).toBe(0);
  });

  it('cannot be verified without the key: the error says the key is needed', async () => {
    const { code, out } = await run(['--data-dir', dataDir]);
    expect(code).toBe(1);
    expect(out[0]).toBe(
      `${execFile()}:1: KEY_REQUIRED: entry is sealed with ledger key ${key.id}: verifying it needs that key (--key-file, UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY)`,
    );
    expect(await problems()).toEqual([
      ['exec.jsonl', 1, 'KEY_REQUIRED'],
      ['evidence.jsonl', 1, 'KEY_REQUIRED'],
    ]);
    // A key file too short to be a key is a usage error, not a verdict.
    await writeFile(otherKeyFile, 'short');
    expect((await run(['--data-dir', dataDir, '--key-file', otherKeyFile])).code).toBe(EXIT_USAGE);
  });

  it.each<[string, (e: Entry[], k: { key: LedgerKey; otherKey: LedgerKey }) => Entry[], number, string, RegExp]>([
    ['changed, not re-sealed', (e) => e.map((x, i) => (i === 2 ? { ...x, status: 'forged' } : x)), 3, 'ENTRY_HASH_MISMATCH', /entry was changed/],
    ['changed, the whole chain re-hashed with plain sha256', (e) => forge(e, 2, 0, plain), 1, 'UNKEYED_CHAIN', /no entry from line 1 on is sealed with it/],
    ['changed, re-hashed with plain sha256 from there on', (e) => forge(e, 2, 2, plain), 3, 'HASH_DOWNGRADE', /plain sha256 after the HMAC-sealed entry at line 2/],
    ['changed, the whole chain re-sealed with another key', (e, k) => forge(e, 2, 0, withKey(k.otherKey)), 1, 'KEY_UNKNOWN', /re-sealed with another key/],
    ['changed, re-sealed with another key from there on', (e, k) => forge(e, 2, 2, withKey(k.otherKey)), 3, 'KEY_UNKNOWN', /re-sealed with another key/],
    ['changed, re-sealed with another key claiming the right key id', (e, k) => forge(e, 2, 2, withKey(k.otherKey, k.key.id)), 3, 'ENTRY_HASH_MISMATCH', /entry was changed/],
    ['every hash stripped (all legacy)', (e) => e.map(({ entry_hash: _h, previous_hash: _p, hash_alg: _a, key_id: _k, ...rest }) => rest), 1, 'UNKEYED_CHAIN', /anybody could/],
    ['an unknown hash_alg', (e) => e.map((x, i) => (i === 1 ? { ...x, hash_alg: 'md5' } : x)), 2, 'HASH_ALG_UNKNOWN', /hash_alg "md5"/],
  ])('report a keyed ledger %s at its first bad entry', async (_case, tamper, line, problemCode, message) => {
    await rewrite(execFile(), tamper(await lines(execFile()), { key, otherKey }));
    const report = await verifyLedgers(dataDir, { keys: ledgerKeyring([key]) });
    expect(report.problems.map((p) => [path.basename(p.file), p.line, p.code])).toEqual([['exec.jsonl', line, problemCode]]);
    expect(report.problems[0]!.message).toMatch(message);
    const { code, out } = await run(['--data-dir', dataDir, '--key-file', keyFile, '--full']);
    expect(code).toBe(1);
    expect(out[0]).toBe(`${execFile()}:${line}: ${problemCode}: ${report.problems[0]!.message}`);
  });

  it('verify a chain across a key rotation with both keys, and name the missing one otherwise', async () => {
    const rotated = new FileLedger({ dataDir, tier: 'production', key: otherKey, now: () => new Date((clock += 1000)) });
    await turns(rotated, 6, 7);
    expect((await lines(execFile())).map((e) => e.key_id)).toEqual([key.id, key.id, key.id, key.id, key.id, otherKey.id, otherKey.id]);
    expect(await problems({ keys: ledgerKeyring([key, otherKey]) })).toEqual([]);
    expect((await run(['--data-dir', dataDir, '--key-file', keyFile, `--key-file=${otherKeyFile}`])).code).toBe(0);
    expect(await problems({ keys: ledgerKeyring([otherKey]) })).toEqual([
      ['exec.jsonl', 1, 'KEY_UNKNOWN'],
      ['evidence.jsonl', 1, 'KEY_UNKNOWN'],
    ]);
  });

  it('refuse a session begun before the key and continued after, unless --allow-unkeyed accepts its plain beginning; plain sessions only with --allow-unkeyed', async () => {
    const plainDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-plain-'));
    try {
      // A session begun before the core had a key, continued after.
      const before = new FileLedger({ dataDir: plainDir, tier: 'production' });
      const after = new FileLedger({ dataDir: plainDir, tier: 'production', key });
      await before.startSession(sid);
      await turns(before, 1, 2);
      const plainExec = path.join(plainDir, 'planes', 'production', 'sessions', sid, 'ledger', 'exec.jsonl');
      // Legacy entries pass in a session that was never keyed, with their warning (this one of no turn, to need no twin).
      const legacy = { session_id: sid, query_hash: 'q', result_hash: 'r', status: 'ok' };
      await rewrite(plainExec, [legacy, ...(await lines(plainExec))]);
      const keys = ledgerKeyring([key]);
      const plainOnly = await verifyLedgers(plainDir, { keys });
      expect(plainOnly.problems.map((p) => [path.basename(p.file), p.line, p.code])).toEqual([
        ['exec.jsonl', 1, 'UNKEYED_CHAIN'],
        ['evidence.jsonl', 1, 'UNKEYED_CHAIN'],
      ]);
      const allowed = await run(['--data-dir', plainDir, '--key-file', keyFile, '--allow-unkeyed']);
      expect(allowed.code).toBe(0);
      expect(allowed.err).toEqual([
        `warning: ${plainExec}:1: legacy entry without entry_hash (written before hashing) at line 1; not verifiable`,
        expect.stringMatching(/^warning: .*exec\.jsonl:1: a ledger key is given, but no entry from line 1 on is sealed with it.*accepted as begun before the key/),
        expect.stringMatching(/^warning: .*evidence\.jsonl:1: a ledger key is given, but no entry from line 1 on is sealed with it.*accepted as begun before the key/),
      ]);
      // Without a key, a plain chain is what it always was.
      expect((await verifyLedgers(plainDir)).problems).toEqual([]);

      await rewrite(plainExec, (await lines(plainExec)).slice(1));
      await turns(after, 3, 4);
      const mixed = await lines(plainExec);
      expect(mixed.map((e) => e.hash_alg ?? 'sha256')).toEqual(['sha256', 'sha256', 'hmac-sha256', 'hmac-sha256']);
      // Keyed means keyed: its plain entries are refused by default...
      const report = await verifyLedgers(plainDir, { keys });
      expect(report.problems.map((p) => [path.basename(p.file), p.line, p.code])).toEqual([
        ['exec.jsonl', 1, 'UNKEYED_ENTRY'],
        ['evidence.jsonl', 1, 'UNKEYED_ENTRY'],
      ]);
      expect(report.problems[0]!.message).toMatch(/sealed with plain sha256 in a session sealed with the ledger key.*--allow-unkeyed/);
      // ...and accepted with --allow-unkeyed, the first keyed entry's HMAC covering them through previous_hash.
      const accepted = await verifyLedgers(plainDir, { keys, allowUnkeyed: true });
      expect(accepted.problems).toEqual([]);
      expect(accepted.warnings.map((w) => [path.basename(w.file), w.line])).toEqual([
        ['exec.jsonl', 1],
        ['evidence.jsonl', 1],
      ]);
      expect(accepted.warnings[0]!.message).toMatch(/lines 1-2 .*before the first keyed entry \(line 3\).*--allow-unkeyed/);
      // An unhashed entry is covered by nothing: refused even then.
      await rewrite(plainExec, [legacy, ...mixed]);
      expect((await verifyLedgers(plainDir, { keys, allowUnkeyed: true })).problems.map((p) => [path.basename(p.file), p.line, p.code])).toEqual([['exec.jsonl', 1, 'UNKEYED_ENTRY']]);
    } finally {
      await rm(plainDir, { recursive: true, force: true });
    }
  });

  it('refuse unhashed entries forged before a keyed chain in both ledgers, naming file and line, with any flags and without the key (keyed means keyed)', async () => {
    // What a local writer without the key can write: an unhashed "legacy" entry naming the right session.
    const unhashed = (entry: Entry): Entry => {
      const { entry_hash: _h, previous_hash: _p, hash_alg: _a, key_id: _k, ...rest } = entry;
      return { ...rest, turn_number: 0, status: 'forged' };
    };
    await rewrite(execFile(), [unhashed((await lines(execFile()))[0]!), ...(await lines(execFile()))]);
    await rewrite(evidenceFile(), [unhashed((await lines(evidenceFile()))[0]!), ...(await lines(evidenceFile()))]);
    for (const flags of [['--full'], [], ['--full', '--allow-unkeyed']]) {
      const { code, out } = await run(['--data-dir', dataDir, '--key-file', keyFile, ...flags]);
      expect(code, flags.join(' ')).toBe(1);
      expect(out.slice(0, 2)).toEqual([
        `${execFile()}:1: UNKEYED_ENTRY: entry has no entry_hash (line 1), but this session is sealed with a ledger key: every entry of a keyed session is sealed, so a writer without the key put it there`,
        `${evidenceFile()}:1: UNKEYED_ENTRY: entry has no entry_hash (line 1), but this session is sealed with a ledger key: every entry of a keyed session is sealed, so a writer without the key put it there`,
      ]);
    }
    // Without the key the session still says it was written keyed.
    expect(await problems()).toEqual([
      ['exec.jsonl', 2, 'KEY_REQUIRED'],
      ['exec.jsonl', 1, 'UNKEYED_ENTRY'],
      ['evidence.jsonl', 2, 'KEY_REQUIRED'],
      ['evidence.jsonl', 1, 'UNKEYED_ENTRY'],
    ]);
    // Inside the chain, an unhashed entry is a removed hash.
    const entries = (await lines(execFile())).slice(1);
    await rewrite(execFile(), entries.map((x, i) => (i === 3 ? unhashed(x) : x)));
    expect((await verifyLedgers(dataDir, { keys: ledgerKeyring([key]) })).problems[0]).toMatchObject({ line: 4, code: 'HASH_MISSING' });
  });

  it('refuse a ledger re-hashed whole with plain sha256 beside a keyed one even with --allow-unkeyed: the session was keyed', async () => {
    await rewrite(execFile(), forge(await lines(execFile()), 2, 0, plain));
    const { code, out } = await run(['--data-dir', dataDir, '--key-file', keyFile, '--allow-unkeyed']);
    expect(code).toBe(1);
    expect(out[0]).toMatch(new RegExp(`^${execFile()}:1: UNKEYED_CHAIN: .*evidence\\.jsonl:1 is sealed with it.*--allow-unkeyed does not apply`));
  });

  it('refuse to append plain entries to a keyed ledger when the core has no key', async () => {
    const keyless = new FileLedger({ dataDir, tier: 'production' });
    await expect(keyless.appendExec({ sessionId: sid, turnNumber: 6, status: 'ok', queryHash: 'q', resultHash: null })).rejects.toMatchObject({
      code: 'UHLP_LEDGER_KEY_REQUIRED',
      message: expect.stringContaining(`sealed with ledger key ${key.id}`) as string,
    });
    expect(await lines(execFile())).toHaveLength(5);
    // Nor replay or checkpoint it: the key is missing, which is not the same as a tampered file.
    await expect(keyless.checkpoint(sid, 'exec', {})).rejects.toMatchObject({ code: 'UHLP_LEDGER_KEY_REQUIRED', details: { line: 1, code: 'KEY_REQUIRED' } });
    await expect(replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', initial: 0, reduce: (n: number) => n + 1 })).rejects.toMatchObject({
      code: 'UHLP_LEDGER_KEY_REQUIRED',
    });
  });

  describe('checkpoints', () => {
    const reduce = (state: number[], entry: LedgerEntry): number[] => [...state, entry.turn_number];

    it('are sealed with the key, and verification starts at a sealed one', async () => {
      const checkpoint = await ledger.checkpoint(sid, 'exec', [1, 2, 3, 4, 5]);
      expect(checkpoint).toMatchObject({ hash_alg: 'hmac-sha256', key_id: key.id, checkpoint_hash: expect.stringMatching(/^hmac-sha256:/) });
      const { checkpoint_hash: seal, ...rest } = (await lines(checkpointFile()))[0]!;
      expect(seal).toBe(key.seal(canonicalJson(rest)));
      await turns(ledger, 6, 7);
      const report = await verifyLedgers(dataDir, { keys: ledgerKeyring([key]) });
      expect(report.problems).toEqual([]);
      expect(report.entriesChecked).toBe(3 + 7);
      const replay = await replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', initial: [] as number[], reduce, keys: ledgerKeyring([key]) });
      expect(replay).toMatchObject({ replayed: 2, state: [1, 2, 3, 4, 5, 6, 7] });
      // Without the key, the sealed checkpoint vouches for nothing either.
      expect(await problems()).toEqual([
        ['exec.jsonl', 5, 'KEY_REQUIRED'],
        ['exec.jsonl', 1, 'KEY_REQUIRED'],
        ['evidence.jsonl', 1, 'KEY_REQUIRED'],
      ]);
    });

    it('forged after a plain re-hash of the chain are reported, and the chain is verified from the start', async () => {
      await ledger.checkpoint(sid, 'exec', [1, 2, 3, 4, 5]);
      const forged = forge(await lines(execFile()), 1, 0, plain);
      await rewrite(execFile(), forged);
      // The attacker replaces the checkpoint with one of their own for the re-hashed chain.
      const [real] = await lines(checkpointFile());
      const { hash_alg: _a, key_id: _k, checkpoint_hash: _c, ...unsealed } = real!;
      await rewrite(checkpointFile(), [{ ...unsealed, entry_hash: forged[4]!.entry_hash }]);
      for (const full of [false, true]) {
        const report = await verifyLedgers(dataDir, { keys: ledgerKeyring([key]), full });
        // Full verification holds the forged checkpoint against the chain too.
        expect(report.problems.map((p) => [path.basename(p.file), p.line, p.code]).slice(0, 2)).toEqual([
          ['exec.jsonl', 5, 'CHECKPOINT_MISMATCH'],
          ['exec.jsonl', 1, 'UNKEYED_CHAIN'],
        ]);
        if (!full) expect(report.problems[0]!.message).toMatch(/not sealed with the ledger key.*verified from the start instead/);
      }
      const keys = ledgerKeyring([key]);
      await expect(replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', initial: [] as number[], reduce, keys })).rejects.toMatchObject({
        code: 'UHLP_LEDGER_INTEGRITY',
        message: expect.stringMatching(/is not sealed with the ledger key/) as string,
      });
      await expect(ledger.checkpoint(sid, 'exec', [])).rejects.toMatchObject({ code: 'UHLP_LEDGER_INTEGRITY' });
    });

    it('with a changed state or a seal of another key are not trusted', async () => {
      await ledger.checkpoint(sid, 'exec', [1, 2, 3, 4, 5]);
      const [real] = await lines(checkpointFile());
      await rewrite(checkpointFile(), [{ ...real!, state: [99] }]);
      expect((await verifyLedgers(dataDir, { keys: ledgerKeyring([key]) })).problems.map((p) => [p.line, p.code, p.message])).toEqual([
        [5, 'CHECKPOINT_MISMATCH', 'the checkpoint of line 5 does not match its seal (checkpoint was changed); verified from the start instead'],
      ]);
      const { checkpoint_hash: _c, ...rest } = real!;
      const resealed = { ...rest, key_id: otherKey.id, state: [99] };
      await rewrite(checkpointFile(), [{ ...resealed, checkpoint_hash: otherKey.seal(canonicalJson(resealed)) }]);
      const report = await verifyLedgers(dataDir, { keys: ledgerKeyring([key]), full: true });
      expect(report.problems.map((p) => [p.line, p.code])).toEqual([[5, 'CHECKPOINT_MISMATCH']]);
      expect(report.problems[0]!.message).toMatch(/sealed with key id [0-9a-f]{16}, not with the key given/);
    });
  });
});
