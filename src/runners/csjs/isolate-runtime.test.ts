/**
 * The isolate engine with the local backends (the same guard and mapping the
 * csjs runner uses): the result contract, every `cs` refusal, the deadline,
 * the memory budget, maxConcurrency, and escape attempts, with the runtime
 * still serving after each failure.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { activationContext, concurrencyKey } from '../../contract/cs-bundle/activation-context.js';
import { buildBundle } from '../../contract/cs-bundle/function-bundle.js';
import type { VerifiedBundle } from '../../contract/cs-bundle/function-bundle.js';
import { IsolateRuntime } from './isolate-runtime.js';
import { memoryKv, runLocal } from '../../cli/fn-run.js';

const runtime = new IsolateRuntime();
afterAll(() => runtime.dispose());

function bundle(functionJs: string, manifest: Record<string, unknown> = {}): VerifiedBundle {
  return buildBundle({
    functionJs,
    manifestJson: JSON.stringify({ schema: 'cs.function.script.v1', runtime: 'cs-js', entry: 'function.js', handler: 'default', ...manifest }),
  });
}

async function run(functionJs: string, manifest: Record<string, unknown> = {}, event: unknown = {}) {
  return runLocal({ bundle: bundle(functionJs, manifest), event, runtime, tenant: 'shop' });
}

const ok = (value: unknown) => ({ resultType: 'httpResponse', data: { statusCode: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(value), bodyEncoding: 'utf8' } });

describe('result contract', () => {
  it.each([
    ['an HTTP response', `return { statusCode: 201, headers: { 'x-a': 1 }, body: 'made' }`, { resultType: 'httpResponse', data: { statusCode: 201, headers: { 'x-a': '1' }, body: 'made', bodyEncoding: 'utf8' } }],
    ['base64', `return { statusCode: 200, body: 'aGk=', isBase64Encoded: true }`, { resultType: 'httpResponse', data: { statusCode: 200, headers: {}, body: 'aGk=', bodyEncoding: 'base64' } }],
    ['a number', `return 42`, ok(42)],
    ['a string', `return 'hi'`, ok('hi')],
    ['undefined', `return undefined`, ok(null)],
    ['an object without statusCode', `return { a: 1 }`, ok({ a: 1 })],
    ['a bad statusCode', `return { statusCode: 99 }`, { resultType: 'error', data: expect.objectContaining({ code: 'UHLP_SCRIPT_BAD_RESULT' }) }],
    ['a BigInt', `return 10n`, { resultType: 'error', data: expect.objectContaining({ code: 'UHLP_SCRIPT_BAD_RESULT' }) }],
    ['a thrown coded error', `const e = new Error('nope'); e.code = 'OUT_OF_STOCK'; e.status = 409; throw e`, { resultType: 'error', data: { code: 'OUT_OF_STOCK', message: 'nope', status: 409 } }],
    ['a thrown plain error', `throw new Error('boom')`, { resultType: 'error', data: expect.objectContaining({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'boom' }) }],
  ])('maps %s', async (_name, body, expected) => {
    expect((await run(`export default async function handle(event, ctx) { ${body} }`)).result).toEqual(expected);
  });

  it("keeps a thrown plain error's frames of function.js (bundle-relative, line and column), and none of the bootstrap's", async () => {
    const { result } = await run(`function helper(n) {\n  return n.missing.deeper;\n}\nexport default async function handle(event) {\n  return helper(event);\n}\n`);
    expect(result).toEqual({
      resultType: 'error',
      data: { code: 'UHLP_SCRIPT_EXCEPTION', message: "Cannot read properties of undefined (reading 'deeper')", status: 500, stack: 'at helper (function.js:2:20)\nat handle (function.js:5:10)' },
    });
  });

  it("ignores a bundle's fake stack but for its own frames, and bounds it", async () => {
    const { result } = await run(
      `export default async function handle() { const e = new Error('\\u001b[2Jfake'); e.stack = 'at /etc/shadow (/etc/shadow:1:1)\\n' + 'at x (cs-js:ffffffffffff/function.js:1:1)\\n' + 'y'.repeat(100000); throw e }`,
    );
    const data = result.data as Record<string, unknown>;
    expect(data).toMatchObject({ code: 'UHLP_SCRIPT_EXCEPTION', message: '\uFFFD[2Jfake' });
    expect(data['stack']).toBeUndefined();
  });

  it('gives ctx exactly the document fields (and the sha256)', async () => {
    const output = await run(`export default async (event, ctx) => ctx`);
    const ctx = JSON.parse((output.result.data as { body: string }).body) as Record<string, unknown>;
    expect(Object.keys(ctx).sort()).toEqual(['activation_id', 'deadline_ms', 'function', 'namespace', 'principal', 'ref', 'sha256', 'tenant', 'trigger', 'version']);
    expect(ctx['tenant']).toBe('shop');
    expect(ctx['activation_id']).toBe(output.activationId);
  });
});

describe('cs host API', () => {
  const kvManifest = { capabilities: { kv: { prefixes: ['ctr:'], ops: ['get', 'set'] } } };

  it('logs JSON and keeps kv values, with ttl', async () => {
    const kv = memoryKv();
    const counter = bundle(
      `export default async () => { const n = (await cs.kv.get('ctr:n')) ?? 0; await cs.kv.set('ctr:n', n + 1, { ttlSeconds: 60 }); cs.log.info({ n }); cs.log.warn('plain'); return n + 1 }`,
      kvManifest,
    );
    await runLocal({ bundle: counter, event: {}, runtime, kv, tenant: 'shop' });
    const second = await runLocal({ bundle: counter, event: {}, runtime, kv, tenant: 'shop' });
    expect(second.result).toEqual(ok(2));
    expect(second.logs.map((line) => [line.level, line.msg])).toEqual([
      ['info', '{"n":1}'],
      ['warn', 'plain'],
    ]);
    expect(await kv.kvGet('app/shop/kv/ctr:n')).toBe('2');
  });

  it('keeps every log line of an activation, those written synchronously just before the handler returns included', async () => {
    const lines = (output: Awaited<ReturnType<typeof run>>): string[][] => output.logs.map((line) => [line.level, line.msg]);
    // No host call at all: the handler is done within the synchronous start.
    expect(lines(await run(`export default async () => { cs.log.info('first'); cs.log.warn({ b: 1 }); return 1 }`))).toEqual([
      ['info', 'first'],
      ['warn', '{"b":1}'],
    ]);
    expect(lines(await run(`export default () => { cs.log.error('sync handler'); return 1 }`))).toEqual([['error', 'sync handler']]);
    // After the last awaited host call, and in a reaction the handler left behind.
    const after = bundle(`export default async () => { await cs.kv.get('ctr:n'); Promise.resolve().then(() => cs.log.info('reaction')); cs.log.info('after'); return 2 }`, kvManifest);
    for (let i = 0; i < 20; i++) {
      const output = await runLocal({ bundle: after, event: {}, runtime, tenant: 'shop' });
      expect(lines(output), `run ${i}`).toEqual([
        ['info', 'after'],
        ['info', 'reaction'],
      ]);
    }
    // And before an endless loop the deadline stops.
    const looped = await run(`export default () => { cs.log.info('before the loop'); for (;;) {} }`, { limits: { timeoutMs: 200 } });
    expect(looped.result.data).toMatchObject({ code: 'UHLP_CS_TIMEOUT' });
    expect(lines(looped)).toEqual([['info', 'before the loop']]);
  });

  it.each([
    ['a key outside the prefixes', `await cs.kv.get('other:n')`, kvManifest, { capability: 'kv', rule: 'prefixes' }],
    ['an op outside the ops', `await cs.kv.del('ctr:n')`, kvManifest, { capability: 'kv', rule: 'ops' }],
    ['kv without the capability', `await cs.kv.get('ctr:n')`, {}, { capability: 'kv', rule: 'absent' }],
    ['a topic outside the patterns', `await cs.codeq.publish('mail.send', {})`, { capabilities: { codeq: { publishTopics: ['jobs.*'] } } }, { capability: 'codeq', rule: 'publishTopics' }],
    ['a host outside the allowlist', `await cs.http.fetch('https://evil.example/')`, { capabilities: { http: { allowHosts: ['api.example.com'] } } }, { capability: 'http', rule: 'allowHosts' }],
    ['any fetch without http (egress blocked)', `await cs.http.fetch('https://api.example.com/')`, {}, { capability: 'http', rule: 'absent' }],
  ])('refuses %s with UHLP_CS_DENIED', async (_name, call, manifest, details) => {
    const output = await run(`export default async () => { ${call}; return 'reached' }`, manifest);
    expect(output.result).toEqual({ resultType: 'error', data: expect.objectContaining({ code: 'UHLP_CS_DENIED', status: 403, details: expect.objectContaining(details) }) });
  });

  it('lets the handler catch a refusal and read its code', async () => {
    const output = await run(`export default async () => { try { await cs.kv.get('x'); } catch (e) { return e.code } }`, kvManifest);
    expect(output.result).toEqual(ok('UHLP_CS_DENIED'));
  });

  it('publishes onto allowed topics', async () => {
    const output = await run(`export default async () => cs.codeq.publish('jobs.reconcile', { id: 7 })`, { capabilities: { codeq: { publishTopics: ['jobs.*'] } } });
    expect(output.published).toEqual([{ topic: 'jobs.reconcile', payload: { id: 7 }, messageId: 'local-1' }]);
  });

  it('refuses an allowed name that resolves to a private address (the SSRF guard, through DNS)', async () => {
    const output = await runLocal({
      bundle: bundle(`export default async () => cs.http.fetch('http://api.example.com/')`, { capabilities: { http: { allowHosts: ['api.example.com'] } } }),
      event: {},
      runtime,
      lookup: async () => [{ address: '10.0.0.7', family: 4 }],
    });
    expect(output.result).toEqual({ resultType: 'error', data: expect.objectContaining({ code: 'UHLP_WEB_ADDRESS_NOT_ALLOWED', status: 403 }) });
  });
});

describe('limits', () => {
  it('stops an endless loop at its deadline, then serves again', async () => {
    const started = Date.now();
    const output = await run(`export default async () => { for (;;) {} }`, { limits: { timeoutMs: 200 } });
    expect(output.result).toEqual({ resultType: 'error', data: expect.objectContaining({ code: 'UHLP_CS_TIMEOUT', status: 504 }) });
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await run(`export default async () => 'alive'`)).result).toEqual(ok('alive'));
  });

  it('stops a promise that never settles at its deadline', async () => {
    const output = await run(`export default () => new Promise(() => {})`, { limits: { timeoutMs: 150 } });
    expect((output.result.data as { code: string }).code).toBe('UHLP_CS_TIMEOUT');
  });

  it('stops a memory bomb at its budget, then serves again', async () => {
    const output = await run(`export default async () => { const a = []; for (;;) a.push(new Array(100000).fill(Math.random())); }`, { limits: { memoryMb: 16, timeoutMs: 20000 } });
    expect(output.result).toEqual({ resultType: 'error', data: expect.objectContaining({ code: 'UHLP_CS_MEMORY_LIMIT' }) });
    expect((await run(`export default async () => 'alive'`)).result).toEqual(ok('alive'));
  });

  it('runs at most maxConcurrency activations of a version at once', async () => {
    const gate = bundle(
      `let running = 0, peak = 0; export default async () => { running++; peak = Math.max(peak, running); await cs.kv.get('k:x'); await cs.kv.get('k:x'); running--; return peak }`,
      { limits: { maxConcurrency: 2, timeoutMs: 5000 }, capabilities: { kv: { prefixes: ['k:'], ops: ['get'] } } },
    );
    const slow = { kvGet: () => new Promise((resolve) => setTimeout(() => resolve(null), 30)), kvSet: async () => {}, kvDel: async () => true, publish: async () => ({}), fetch: async () => { throw new Error('no'); } };
    const target = { tenant: 'shop', namespace: 'p', function: 'gate', version: 1, sha256: gate.sha256 };
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        runtime.run({
          concurrencyKey: concurrencyKey(target),
          bundle: gate,
          eventJson: '{}',
          ctxJson: JSON.stringify(activationContext({ activationId: `a${i}`, deadlineMs: Date.now() + 5000, target, trigger: 'test' })),
          deadlineMs: Date.now() + 5000,
          backend: slow,
        }),
      ),
    );
    // Each isolate runs one activation at a time and the version gets two isolates: the peak any one saw is 1, and at most two were cold.
    expect(outcomes.map((o) => o.result)).toEqual(Array.from({ length: 6 }, () => ({ kind: 'value', value: 1 })));
    expect(outcomes.filter((o) => o.cold).length).toBe(2);
  });

  it('refuses with UHLP_CS_CONCURRENCY_LIMIT when no slot frees before the deadline', async () => {
    const hold = bundle(`export default () => new Promise(() => {})`, { limits: { maxConcurrency: 1, timeoutMs: 300 } });
    const target = { tenant: 'shop', namespace: 'p', function: 'hold', version: 1, sha256: hold.sha256 };
    const backend = memoryBackend();
    const activation = (deadline: number) => ({ concurrencyKey: concurrencyKey(target), bundle: hold, eventJson: '{}', ctxJson: '{}', deadlineMs: deadline, backend });
    const first = runtime.run(activation(Date.now() + 300));
    const second = runtime.run(activation(Date.now() + 100));
    await expect(second).rejects.toMatchObject({ code: 'UHLP_CS_CONCURRENCY_LIMIT' });
    await expect(first).rejects.toMatchObject({ code: 'UHLP_CS_TIMEOUT' });
  });
});

describe('escape attempts are inert', () => {
  it.each([
    ['process', `return typeof process`, 'undefined'],
    ['require', `return typeof require`, 'undefined'],
    ['module and globals of Node', `return [typeof module, typeof Buffer, typeof setTimeout, typeof fetch, typeof WebAssembly === 'object' ? 'wasm' : 'none'].join()`, 'undefined,undefined,undefined,undefined,wasm'],
    ['Function constructor tricks', `return (0, Function)('return typeof process + typeof globalThis.require')()`, 'undefinedundefined'],
    ['constructor chains of host objects', `return cs.kv.get.constructor.constructor('return typeof process')()`, 'undefined'],
    ['the prototype of the cs object', `return Object.getPrototypeOf(cs) === Object.prototype && Object.isFrozen(cs) && Object.isFrozen(cs.kv)`, true],
    ['replacing cs', `try { globalThis.cs = { kv: null } } catch (e) {} try { cs.kv = null } catch (e) {} return typeof cs.kv.get`, 'function'],
    ['globalThis tampering before a host call', `JSON.stringify = () => ({ not: 'a string' }); Object.prototype.toJSON = undefined; await cs.kv.get('ctr:a'); return 'survived'`, 'survived'],
    // isolated-vm reads transfer options with ordinary property lookups: a polluted Object.prototype
    // would turn the host call's arguments into References or ExternalCopies of bundle values.
    ['Object.prototype transfer options before a host call', `Object.prototype.arguments = { reference: true }; Object.prototype.result = { externalCopy: true }; Object.prototype.timeout = 1; return await cs.kv.get('ctr:a')`, null],
    ['Promise.prototype.then tampering', `Promise.prototype.then = function () { return 'hijacked' }; return 'ok'`, 'ok'],
    ['stack walking', `try { null.x } catch (e) { return String(e.stack).includes('/work') }`, false],
  ])('%s', async (_name, body, expected) => {
    const output = await run(`export default async () => { ${body} }`, { capabilities: { kv: { prefixes: ['ctr:'], ops: ['get'] } } });
    expect(output.result).toEqual(ok(expected));
  });

  it('refuses static and dynamic imports', async () => {
    const staticImport = await run(`import fs from 'node:fs'; export default async () => typeof fs`);
    expect((staticImport.result.data as { code: string }).code).toBe('UHLP_SCRIPT_LOAD_FAILED');
    const dynamic = await run(`export default async () => { try { await import('node:fs'); return 'imported' } catch (e) { return 'refused' } }`);
    expect(dynamic.result).toEqual(ok('refused'));
  });

  it('hands nothing with getters or proxies to the host: a hostile return value is copied as JSON inside the isolate', async () => {
    const output = await run(`export default async () => { const p = new Proxy({}, { get() { throw new Error('trap') }, ownKeys() { throw new Error('trap') } }); return { statusCode: 200, body: p } }`);
    expect(output.result).toEqual({ resultType: 'error', data: expect.objectContaining({ code: 'UHLP_SCRIPT_BAD_RESULT' }) });
  });
});

function memoryBackend() {
  return { kvGet: async () => null, kvSet: async () => {}, kvDel: async () => true, publish: async () => ({}), fetch: async () => { throw new Error('no'); } };
}
