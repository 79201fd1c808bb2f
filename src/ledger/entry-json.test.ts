import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../shared/canonical-json.js';
import { evidenceEntryJson, execEntryJson } from './entry-json.js';
import type { EvidenceEntry, ExecEntry } from './ledger-entry.js';

const chain = { schema_version: 1, session_id: 'SES-20261122T000000000Z-ABCDEFGHJKMNPQRSTVWX', turn_number: 7, timestamp: '2026-11-22T00:00:00.000Z' };

describe('ledger entry JSON', () => {
  const execs: Array<[string, Omit<ExecEntry, 'entry_hash'>]> = [
    ['first entry, failed turn', { ...chain, entry_type: 'L-EXEC', query_hash: 'sha256:q', result_hash: null, status: 'UHLP_SANDBOX_TIMEOUT', previous_hash: null }],
    ['chained, with a result', { ...chain, entry_type: 'L-EXEC', query_hash: 'sha256:q', result_hash: 'sha256:r', status: 'ok', previous_hash: 'sha256:p' }],
    ['with its request id', { ...chain, entry_type: 'L-EXEC', query_hash: 'sha256:q', request_id: 'w3-17', result_hash: 'sha256:r', status: 'ok', previous_hash: 'sha256:p' }],
    ['a request id JSON escapes', { ...chain, entry_type: 'L-EXEC', query_hash: 'sha256:q', request_id: 'a"b\\c\u2028', result_hash: null, status: 'ok', previous_hash: null }],
    ['a status JSON escapes', { ...chain, entry_type: 'L-EXEC', query_hash: 'sha256:q', result_hash: null, status: 'odd "status"\n\u2028', previous_hash: 'sha256:p' }],
    [
      'sealed with a ledger key',
      { ...chain, entry_type: 'L-EXEC', hash_alg: 'hmac-sha256', key_id: '0123456789abcdef', query_hash: 'sha256:q', result_hash: null, status: 'ok', previous_hash: 'hmac-sha256:p' },
    ],
  ];
  it.each(execs)('writes an exec entry as canonicalJson does: %s', (_name, entry) => {
    expect(execEntryJson(entry)).toBe(canonicalJson(entry));
  });

  const evidence: Array<[string, Omit<EvidenceEntry, 'entry_hash'>]> = [
    [
      'empty lists',
      { ...chain, entry_type: 'L-EVIDENCE', status: 'ok', declared_reads: [], declared_writes: [], external_calls: [], capability_violations: [], previous_hash: null },
    ],
    [
      'every list filled, a work order',
      {
        ...chain,
        entry_type: 'L-EVIDENCE',
        status: 'error',
        work_order_id: 'WO-7',
        declared_reads: [{ path: 'a.txt', hash: 'sha256:a' }],
        declared_writes: [{ role: 'out', path: 'b.txt' }],
        realized_writes: [
          { path: 'output/b.txt', hash: 'sha256:b', size: 3, kind: 'file' },
          { path: 'tmp/link', size: 0, kind: 'symlink' },
        ],
        external_calls: [
          {
            kind: 'llm',
            target: 'openai-compatible',
            status: 'ok',
            duration_ms: 812.25,
            model: 'small',
            prompt_hash: 'sha256:p',
            answer_hash: 'sha256:a',
            tokens: { prompt: 120, completion: 17 },
            cached: false,
          },
          { target: 'core.llm.generate', kind: 'mcp', duration_ms: 813, status: 'ok' },
          { kind: 'llm', target: 'scripted', status: 'UHLP_LLM_TIMEOUT', model: 'small', prompt_hash: 'sha256:p', tokens: { prompt: 0, completion: 0 } },
          { target: 'core.kv.get', kind: 'mcp', duration_ms: 1.5, status: 'ok' },
        ],
        capability_violations: [{ operation: 'shell rm', capability: 'capabilities.shell', timestamp: 't', detail: 'no "rm"' }],
        previous_hash: 'sha256:p',
      },
    ],
    [
      'sealed with a ledger key',
      {
        ...chain,
        entry_type: 'L-EVIDENCE',
        hash_alg: 'hmac-sha256',
        key_id: '0123456789abcdef',
        status: 'ok',
        declared_reads: [],
        declared_writes: [],
        external_calls: [{ target: 't', kind: 'mcp' }],
        capability_violations: [],
        previous_hash: null,
      },
    ],
  ];
  it.each(evidence)('writes an evidence entry as canonicalJson does: %s', (_name, entry) => {
    expect(evidenceEntryJson(entry)).toBe(canonicalJson(entry));
  });
});
