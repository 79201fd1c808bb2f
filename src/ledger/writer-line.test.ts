import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../shared/canonical-json.js';
import { evidenceEntryJson, execEntryJson } from './entry-json.js';
import { sha256 } from './ledger-entry.js';
import { emptyWriterLine, scanWriterLine, type WriterLine } from './writer-line.js';

const session = 'SES-20261122T000000000Z-ABCDEFGHJKMNPQRSTVWX';
const chain = { schema_version: 1, session_id: session, turn_number: 7, timestamp: '2026-11-22T00:00:00.000Z' };

/** A line as the writer makes it: the canonical text with the seal in place of its closing brace. */
function writerLine(canonical: string): string {
  return `${canonical.slice(0, -1)},"entry_hash":"${sha256(canonical)}"}`;
}

const exec = execEntryJson({ ...chain, entry_type: 'L-EXEC', query_hash: 'sha256:q', request_id: 'r-1', result_hash: 'sha256:r', status: 'ok', previous_hash: 'sha256:p' });
const evidence = evidenceEntryJson({
  ...chain,
  entry_type: 'L-EVIDENCE',
  status: 'ok',
  declared_reads: [{ path: 'a.txt', hash: 'sha256:a' }],
  declared_writes: [],
  realized_writes: [{ path: 'out/b.txt', hash: 'sha256:b', size: 3, kind: 'file' }],
  external_calls: [{ kind: 'mcp', target: 'core.kv.get', duration_ms: 2, status: 'ok', cached: false, tokens: { prompt: 1, completion: 0 } }],
  capability_violations: [],
  previous_hash: null,
});
const keyed = execEntryJson({ ...chain, entry_type: 'L-EXEC', hash_alg: 'hmac-sha256', key_id: '0123456789abcdef', query_hash: 'sha256:q', result_hash: null, status: 'ok', previous_hash: 'hmac-sha256:p' });

function scan(line: string): WriterLine | undefined {
  const bytes = Buffer.from(`${line}\n`);
  const out = emptyWriterLine();
  return scanWriterLine(bytes, 0, bytes.length - 1, out) ? out : undefined;
}

/** What scanning promises: the sealed bytes are the canonical form of the parsed entry, and the fields are the parsed ones. */
function expectFaithful(line: string, out: WriterLine): void {
  const bytes = Buffer.from(line);
  const sealed = `${bytes.subarray(0, out.sealedEnd).toString('utf8')}}`;
  const entry = JSON.parse(line) as Record<string, unknown>;
  const { entry_hash: _hash, ...rest } = entry;
  expect(canonicalJson(rest)).toBe(sealed);
  expect(out.entryHash).toBe(entry.entry_hash);
  expect(out.previousHash).toBe(entry.previous_hash);
  expect(out.entryType).toBe(entry.entry_type);
  expect(out.sessionId).toBe(entry.session_id);
  expect(out.timestamp).toBe(entry.timestamp);
  expect(out.turnNumber).toBe(entry.turn_number);
  expect(out.hashAlg).toBe(entry.hash_alg);
  expect(out.keyId).toBe(entry.key_id);
}

/** A small seeded generator, so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return state / 4294967296;
  };
}

describe('reading ledger lines in the writer form', () => {
  it.each([
    ['an exec entry', exec],
    ['an evidence entry with nested lists and objects', evidence],
    ['a keyed entry', keyed],
  ])('reads %s as the writer wrote it, sealed bytes and fields', (_name, canonical) => {
    const line = writerLine(canonical);
    const out = scan(line);
    expect(out).toBeDefined();
    expectFaithful(line, out!);
    expect(`${line.slice(0, out!.sealedEnd)}}`).toBe(canonical);
  });

  const session2 = `"session_id":"${session}"`;
  it.each<[string, string]>(
  ([
    ['an escaped string', exec.replace('"status":"ok"', '"status":"o\\"k"')],
    ['a non-ASCII string', exec.replace('"status":"ok"', '"status":"\u00f6k"')],
    ['whitespace between members', exec.replace('"status":"ok",', '"status":"ok", ')],
    ['whitespace after the colon', exec.replace('"status":"ok"', '"status": "ok"')],
    ['a float', exec.replace('"schema_version":1', '"schema_version":1.0')],
    ['an exponent', exec.replace('"turn_number":7', '"turn_number":7e0')],
    ['a leading zero', exec.replace('"turn_number":7', '"turn_number":07')],
    ['negative zero', exec.replace('"turn_number":7', '"turn_number":-0')],
    ['sixteen digits', exec.replace('"turn_number":7', '"turn_number":1234567890123456')],
    ['a turn number of another type', exec.replace('"turn_number":7', '"turn_number":"7"')],
    ['a session of another type', exec.replace(session2, '"session_id":7')],
    ['a previous hash of another type', exec.replace('"previous_hash":"sha256:p"', '"previous_hash":7')],
    ['top-level keys out of order', exec.replace('"query_hash":"sha256:q","request_id":"r-1"', '"request_id":"r-1","query_hash":"sha256:q"')],
    ['a duplicate key', exec.replace('"status":"ok"', '"status":"ok","status":"ok"')],
    ['nested keys out of order', evidence.replace('{"hash":"sha256:a","path":"a.txt"}', '{"path":"a.txt","hash":"sha256:a"}')],
    ['a nested duplicate key', evidence.replace('{"hash":"sha256:a","path":"a.txt"}', '{"hash":"sha256:a","hash":"sha256:a"}')],
    ['a bad literal', evidence.replace('"cached":false', '"cached":fals')],
    ['a trailing comma in a list', evidence.replace('"declared_writes":[]', '"declared_writes":[1,]')],
    ['nesting deeper than the limit', exec.replace('"status":"ok"', `"status":${'['.repeat(40)}${']'.repeat(40)}`)],
  ] as Array<[string, string]>)
    // Sealed as the writer would seal it: only the form is wrong.
    .map(([name, canonical]): [string, string] => [name, writerLine(canonical)])
    .concat([
    ['no entry_hash (a legacy line)', exec],
    ['entry_hash not last', exec.replace('{"entry_type"', '{"entry_hash":"sha256:x","entry_type"')],
    ['only entry_hash', '{"entry_hash":"sha256:x"}'],
    ['bytes after the object', `${writerLine(exec)} `],
    ['a carriage return', `${writerLine(exec)}\r`],
    ['an array', '[1,2]'],
    ['an empty line', ''],
  ]))('leaves to the general parser: %s', (_name, line) => {
    expect(scan(line)).toBeUndefined();
  });

  it('reads a line only when its sealed bytes are the canonical form, across thousands of mutated lines', () => {
    const next = random(20261123);
    const pieces = ['"', '\\', ' ', ',', ':', '{', '}', '[', ']', '0', '-', '1.5', 'e', 'null', 'true', '\u00e9', '\n', '"a":1', '"zz":[]'];
    let accepted = 0;
    for (let n = 0; n < 20_000; n++) {
      const base = writerLine([exec, evidence, keyed][n % 3]!);
      const bytes = [...base];
      const edits = 1 + Math.floor(next() * 3);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(next() * bytes.length);
        const choice = next();
        if (choice < 0.4) bytes.splice(at, 1);
        else if (choice < 0.8) bytes.splice(at, 0, pieces[Math.floor(next() * pieces.length)]!);
        else bytes[at] = String.fromCharCode(0x20 + Math.floor(next() * 95));
      }
      const line = bytes.join('');
      const out = scan(line);
      if (out === undefined) continue;
      accepted += 1;
      expectFaithful(line, out);
    }
    // Many mutants stay in the form (a changed letter in a hash or a status); the check above held for each.
    expect(accepted).toBeGreaterThan(1000);
  });
});
