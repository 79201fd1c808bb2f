import { describe, expect, it } from 'vitest';
import { parseManifest, topicMatches } from './function-manifest.js';

const base = { schema: 'cs.function.script.v1', runtime: 'cs-js', entry: 'function.js', handler: 'default' };

describe('parseManifest (publish and execution time)', () => {
  it('applies the defaults and freezes the result', () => {
    const manifest = parseManifest(JSON.stringify(base));
    expect(manifest.limits).toEqual({ timeoutMs: 3000, memoryMb: 64, maxConcurrency: 1 });
    expect(manifest.capabilities).toEqual({});
    expect(Object.isFrozen(manifest.limits)).toBe(true);
  });

  it.each([
    ['not JSON', '{', 'manifest.json'],
    ['an array', '[]', 'manifest.json'],
    ['another schema', JSON.stringify({ ...base, schema: 'cs.function.script.v2' }), 'schema'],
    ['another runtime', JSON.stringify({ ...base, runtime: 'cs-py' }), 'runtime'],
    ['another entry', JSON.stringify({ ...base, entry: 'index.js' }), 'entry'],
    ['a memory budget under 8 MiB', JSON.stringify({ ...base, limits: { memoryMb: 4 } }), 'limits.memoryMb'],
    ['a fractional timeout', JSON.stringify({ ...base, limits: { timeoutMs: 1.5 } }), 'limits.timeoutMs'],
    ['maxConcurrency 0', JSON.stringify({ ...base, limits: { maxConcurrency: 0 } }), 'limits.maxConcurrency'],
    ['an unknown kv op', JSON.stringify({ ...base, capabilities: { kv: { prefixes: ['a:'], ops: ['scan'] } } }), 'capabilities.kv.ops.0'],
    ['kv without prefixes', JSON.stringify({ ...base, capabilities: { kv: { prefixes: [], ops: ['get'] } } }), 'capabilities.kv.prefixes'],
    ['a bad topic pattern', JSON.stringify({ ...base, capabilities: { codeq: { publishTopics: ['jobs/*'] } } }), 'capabilities.codeq.publishTopics.0'],
    ['an unknown capability', JSON.stringify({ ...base, capabilities: { fs: {} } }), 'capabilities.fs'],
    ['an http timeout over 60 s', JSON.stringify({ ...base, capabilities: { http: { allowHosts: ['a.example'], timeoutMs: 60001 } } }), 'capabilities.http.timeoutMs'],
  ])('refuses %s with UHLP_FN_MANIFEST_INVALID naming the field', (_name, text, field) => {
    expect(() => parseManifest(text)).toThrow(expect.objectContaining({ code: 'UHLP_FN_MANIFEST_INVALID', details: { field } }) as Error);
  });
});

describe('topicMatches', () => {
  it.each([
    ['orders.created', 'orders.created', true],
    ['orders.created', 'orders.*', true],
    ['orders.eu.created', 'orders.*', true],
    ['orders', 'orders.*', false],
    ['orders.', 'orders.*', true],
    ['billing.created', 'orders.*', false],
    ['a.b.c', '*', true],
    ['', '*', true],
    ['', 'a', false],
    ['orders.created', '*.created', true],
    ['orders.created.x', '*.created', false],
    ['abcbc', 'a*bc', true],
    ['abcbd', 'a*bc', false],
    ['a.b+c', 'a.b+c', true],
    ['aXb+c', 'a.b+c', false],
    ['a(b)', 'a(*)', true],
    ['abc', 'a**c', true],
  ])('%s against %s: %s', (topic, pattern, expected) => {
    expect(topicMatches(topic, pattern)).toBe(expected);
  });

  it("costs time in proportion to the topic and the pattern, whatever stars an app's pattern has", () => {
    // As a regular expression (^.*a.*a.*a.*a.*a.*b$) this backtracks about 80^6 / 6! times: seconds.
    const started = performance.now();
    expect(topicMatches('a'.repeat(80), '*a*a*a*a*a*b')).toBe(false);
    expect(topicMatches('a'.repeat(200), '*a*a*a*a*a*a*a*a*a*b')).toBe(false);
    expect(performance.now() - started).toBeLessThan(100);
  });
});
