import { describe, expect, it } from 'vitest';
import { deliveryOnceKey, escapeGlob, hashTag, RuntimeKeys } from './runtime-keys.js';

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

  // Stored data must stay readable across versions: these names are what earlier cores wrote.
  it.each([
    ['session', keys.session('SES-x'), 't1:session:SES-x'],
    ['kv', keys.kv('app/a:b'), 't1:kv:app/a:b'],
    ['lease', keys.lease('run:1'), 't1:lease:run%3A1'],
    ['idempotency', keys.idempotency('shop', 'k'), 't1:idem:shop:k'],
    ['rate limit', keys.rateLimit('shop'), 't1:rate:shop'],
    ['oracle counters', keys.oracleCounters('shop', 'c'), 't1:oracle:shop:c'],
    ['oracle samples', keys.oracleSamples('shop', 'c', 'r1'), 't1:oracle-samples:shop:c:r1'],
    ['oracle record', keys.oracleRecord('shop', 'c'), 't1:oracle-record:shop:c'],
    ['oracle candidates', keys.oracleCandidates('shop', 'c'), 't1:oracle-candidates:shop:c'],
    ['LLM tokens', keys.llmTokens('shop', '2026-01-01'), 't1:llm:tokens:shop:2026-01-01'],
    ['LLM cache', keys.llmCache('shop', 'h'), 't1:llm:cache:shop:h'],
    ['function bundle', keys.fnBundle('shop', 'abc'), 't1:fn:bundle:shop:abc'],
    ['function versions', keys.fnVersions('shop', 'ns', 'fn'), 't1:fn:versions:shop:ns:fn'],
    ['function aliases', keys.fnAliases('shop', 'ns', 'fn'), 't1:fn:aliases:shop:ns:fn'],
    ['activation logs', keys.fnLogs('act'), 't1:fn:logs:act'],
    ['run (before the Cluster layout)', keys.legacyRun('RUN-1'), 't1:run:RUN-1'],
    ['queue stream', keys.deliveryStream('queue', 'shop', 'orders'), 't1:queue:shop:orders'],
    ['queue retries (before the Cluster layout)', keys.legacyDeliveryCompanion('queue', 'shop', 'orders', 'retry'), 't1:queue:shop:orders:retry'],
    ['queue dead letters (before the Cluster layout)', keys.legacyDeliveryCompanion('queue', 'shop', 'orders', 'dead'), 't1:queue:shop:orders:dead'],
    ['cron last slot (before the Cluster layout)', keys.legacyCronLast('shop', 'nightly'), 't1:cronlast:shop:nightly'],
    ['active runs', keys.activeRuns(), 't1:runs:active'],
  ])('names the %s key as earlier versions did', (_, key, expected) => {
    expect(key).toBe(expected);
  });

  // The names of the Cluster layout (docs/runtime-state.md): companions carry their anchor as hash tag.
  it.each([
    ['run', keys.run('RUN-1'), '{t1:runs:active}:run:RUN-1'],
    ['queue retries', keys.deliveryRetries('queue', 'shop', 'orders'), '{t1:queue:shop:orders}:retry'],
    ['queue dead letters', keys.deliveryDead('queue', 'shop', 'orders'), '{t1:queue:shop:orders}:dead'],
    ['delivery once-only record', keys.idempotency('shop', deliveryOnceKey('queue', 'orders', 'inv:1')), '{t1:queue:shop:orders}:once:inv%3A1'],
    ['cron slot claim', keys.cronSlot('shop', 'nightly', 1000), '{t1:cron:shop:nightly}:slot:1000'],
    ['cron last slot', keys.cronLast('shop', 'nightly'), '{t1:cron:shop:nightly}:last'],
    ['run summaries', keys.runSummaries(), '{t1:runs:index}:summaries'],
    ['turn journal', keys.turnJournal('shop', 'core:1'), '{t1:turns-cores:shop}:core%3A1'],
  ])('names the %s key of the Cluster layout', (_, key, expected) => {
    expect(key).toBe(expected);
  });

  it('keeps braces out of the hash tags: in segments they are encoded, in the prefix refused', () => {
    expect(keys.deliveryStream('queue', 'a{b}', 'c')).toBe('t1:queue:a%7Bb%7D:c');
    expect(() => new RuntimeKeys('{t1}:')).toThrow(/must not hold/);
  });

  it.each([
    ['uhlp:queue:a:b', 'uhlp:queue:a:b'],
    ['{uhlp:queue:a:b}:retry', 'uhlp:queue:a:b'],
    ['a{}b{c}', 'a{}b{c}'],
    ['a{b}{c}', 'b'],
    ['a{b', 'a{b'],
  ])('reads the hash tag of %s as Redis Cluster does', (key, tag) => {
    expect(hashTag(key)).toBe(tag);
  });

  it('escapes glob characters for SCAN MATCH', () => {
    expect(escapeGlob('a*b?[c]\\')).toBe('a\\*b\\?\\[c\\]\\\\');
    expect(keys.everything()).toBe('t1:*');
  });
});
