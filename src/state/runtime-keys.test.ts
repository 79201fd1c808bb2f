import { describe, expect, it } from 'vitest';
import { escapeGlob, RuntimeKeys } from './runtime-keys.js';

describe('RuntimeKeys', () => {
  const keys = new RuntimeKeys('t1:');

  it('puts every key under the prefix', () => {
    const all = [keys.session('SES-x'), keys.kv('a'), keys.lease('sb'), keys.idempotency('app', 'k'), keys.rateLimit('app'), keys.oracleCounters('app', 'c'), keys.llmTokens('app', '2026-01-01'), keys.llmCache('app', 'h'), keys.fnChanges()];
    expect(all.every((k) => k.startsWith('t1:'))).toBe(true);
    expect(new RuntimeKeys().kv('a')).toBe('uhlp:kv:a');
  });

  it('keeps tuples apart even when a segment holds the separator', () => {
    expect(keys.idempotency('a:b', 'c')).not.toBe(keys.idempotency('a', 'b:c'));
    expect(keys.oracleCounters('a%3A', 'b')).not.toBe(keys.oracleCounters('a:', 'b'));
    expect(keys.llmTokens('a:b', 'c')).not.toBe(keys.llmTokens('a', 'b:c'));
    expect(keys.llmCache('a:b', 'c')).not.toBe(keys.llmCache('a', 'b:c'));
  });

  it('escapes glob characters for SCAN MATCH', () => {
    expect(escapeGlob('a*b?[c]\\')).toBe('a\\*b\\?\\[c\\]\\\\');
    expect(keys.everything()).toBe('t1:*');
  });
});
