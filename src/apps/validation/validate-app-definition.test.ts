import { describe, expect, it } from 'vitest';
import { validateAppDefinition } from './validate-app-definition.js';

function doc(spec: Record<string, unknown>, name = 'shop'): unknown {
  return {
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name },
    spec: {
      pools: [{ name: 'node' }],
      components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } }],
      routes: [{ http: { method: 'GET', path: '/greet/:name' }, component: 'greet' }],
      ...spec,
    },
  };
}

const options = { file: 'apps/shop/app.yaml', appDirName: 'shop', fileExists: (p: string) => p === 'scripts/greet.js' };

describe('validateAppDefinition', () => {
  it('applies the documented defaults', () => {
    const result = validateAppDefinition(doc({}), options);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.document.spec.pools[0]).toEqual({
      name: 'node',
      runner: 'jit',
      minWarm: 1,
      maxSize: 4,
      maxUses: 1000,
      concurrency: 1,
      idleTtlSeconds: 300,
      maxQueue: 256,
      acquireTimeoutMs: 5000,
      limits: { memoryMb: 128, cpus: 0.5, timeoutMs: 3000 },
    });
    expect(result.document.spec.components[0]!.jit!.function).toBe('default');
    expect(result.document.spec.ingress).toEqual({ hosts: [] });
    expect(result.document.spec.deploymentMode).toBe('development');
    expect(result.document.spec.ledger).toBeUndefined();
  });

  it('names the nearest allowed property of a misspelt one, whatever its case', () => {
    const components = [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } }];
    const result = validateAppDefinition(
      doc({ pools: [{ name: 'node', idleTTL: 60 }], components, routes: [{ http: { method: 'GET', path: '/greet/:name' }, compnent: 'greet', component: 'greet' }] }),
      options,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual(
      expect.arrayContaining([
        { file: options.file, path: '/spec/pools/0/idleTTL', reason: 'Unexpected property (did you mean idleTtlSeconds?)' },
        { file: options.file, path: '/spec/routes/0/compnent', reason: 'Unexpected property (did you mean component?)' },
      ]),
    );
    // Nothing near: no guess.
    const far = validateAppDefinition(doc({ pools: [{ name: 'node', zzzzzz: 1 }] }), options);
    expect(far).toMatchObject({ ok: false, problems: [{ path: '/spec/pools/0/zzzzzz', reason: 'Unexpected property' }] });
  });

  it('refuses a route path with a {name} segment, with the :name to write', () => {
    const result = validateAppDefinition(doc({ routes: [{ http: { method: 'GET', path: '/l/{code}' }, component: 'greet' }] }), options);
    expect(result).toMatchObject({ ok: false, problems: [{ path: '/spec/routes/0/http/path', reason: expect.stringContaining('write ":code" for a parameter') }] });
  });

  it('takes a ledger spec, with its defaults', () => {
    const result = validateAppDefinition(doc({ ledger: { ambient: 'sampled', retention: { maxAge: '7d', maxSize: '10Gi' } } }), options);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.document.spec.ledger).toEqual({ ambient: 'sampled', sampleRate: 0.01, retention: { maxAge: '7d', maxSize: '10Gi' } });
  });

  it('accepts a cs component on a csjs pool, by function and ref or by sha256', () => {
    const pools = [{ name: 'node' }, { name: 'cs', runner: 'csjs' }];
    const components = [
      { id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } },
      { id: 'reconcile', handler: 'JIT', pool: 'cs', cs: { function: 'payments/reconcile', ref: 'prod' } },
      { id: 'pinned', handler: 'JIT', pool: 'cs', cs: { sha256: 'a'.repeat(64) } },
    ];
    const capabilities = { functions: { namespaces: ['payments'] }, codeq: { publishTopics: ['jobs.*'] } };
    expect(validateAppDefinition(doc({ pools, components, capabilities }), options)).toMatchObject({ ok: true });
  });

  it('accepts a Python script on a python pool, beside a JavaScript one on a jit pool', () => {
    const pools = [{ name: 'node' }, { name: 'py', runner: 'python' }];
    const components = [
      { id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } },
      { id: 'hello', handler: 'JIT', pool: 'py', jit: { script: 'scripts/hello.py', function: 'hello' } },
    ];
    const withPython = { ...options, fileExists: (p: string) => p === 'scripts/greet.js' || p === 'scripts/hello.py' };
    expect(validateAppDefinition(doc({ pools, components }), withPython)).toMatchObject({ ok: true });
  });

  const cases: Array<[string, unknown, string, RegExp]> = [
    ['a Python script on a jit pool', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.py' } }] }), '/spec/components/0/pool', /a JIT component with a Python script runs in a pool with runner: python; pool "node" has runner: jit/],
    ['a JavaScript script on a python pool', doc({ pools: [{ name: 'node', runner: 'python' }] }), '/spec/components/0/pool', /runs in a pool with runner: jit; pool "node" has runner: python/],
    ['an LLM component on a python pool', doc({ pools: [{ name: 'node', runner: 'python' }], components: [{ id: 'greet', handler: 'LLM', pool: 'node', llm: { prompt: 'p.njk' } }] }), '/spec/components/0/pool', /runner: llm/],
    ['a script that is neither JavaScript nor Python', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.rb' } }] }), '/spec/components/0/jit/script', /\.js or \.mjs ES module, or a \.py Python module/],
    ['a pool size that is not an integer', doc({ pools: [{ name: 'node', maxSize: 'four' }] }), '/spec/pools/0/maxSize', /integer/i],
    ['an unknown handler', doc({ components: [{ id: 'greet', handler: 'PYTHON', pool: 'node' }] }), '/spec/components/0/handler', /./],
    ['an unknown field', doc({ colour: 'red' }), '/spec/colour', /./],
    ['a missing pool', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'gpu', jit: { script: 'scripts/greet.js' } }] }), '/spec/components/0/pool', /pool "gpu" is not declared/],
    ['a route to a missing component', doc({ routes: [{ http: { method: 'GET', path: '/x' }, component: 'nope' }] }), '/spec/routes/0/component', /component "nope"/],
    ['a missing script', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/none.js' } }] }), '/spec/components/0/jit/script', /does not exist/],
    ['a script leaving the app', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: '../other/x.js' } }] }), '/spec/components/0/jit/script', /leaves the app directory/],
    ['a JIT component without jit', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'node' }] }), '/spec/components/0/jit', /required for handler JIT/],
    ['duplicate pools', doc({ pools: [{ name: 'node' }, { name: 'node' }] }), '/spec/pools/1/name', /duplicate pool/],
    ['minWarm over maxSize', doc({ pools: [{ name: 'node', minWarm: 5, maxSize: 2 }] }), '/spec/pools/0/minWarm', /over maxSize/],
    ['a bad route pattern', doc({ routes: [{ http: { method: 'GET', path: '/a/*/b' }, component: 'greet' }] }), '/spec/routes/0/http/path', /last segment/],
    ['a reserved prefix', doc({ ingress: { pathPrefix: '/metrics' } }), '/spec/ingress/pathPrefix', /reserved/],
    ['a name that is not the directory', doc({}, 'store'), '/metadata/name', /directory name "shop"/],
    ['an upper-case app name', doc({}, 'Shop'), '/metadata/name', /./],
    ['an upper-case pool name', doc({ pools: [{ name: 'Node' }] }), '/spec/pools/0/name', /./],
    ['a component id with a space', doc({ components: [{ id: 'out of stock', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } }] }), '/spec/components/0/id', /./],
    ['a cs component on a jit pool', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'node', cs: { function: 'payments/reconcile', ref: 'prod' } }] }), '/spec/components/0/pool', /runner: csjs/],
    ['a cs component with both function and sha256', doc({ pools: [{ name: 'node', runner: 'csjs' }], components: [{ id: 'greet', handler: 'JIT', pool: 'node', cs: { function: 'p/f', sha256: 'a'.repeat(64) } }] }), '/spec/components/0/cs', /exactly one/],
    ['a cs component with a bad ref', doc({ pools: [{ name: 'node', runner: 'csjs' }], components: [{ id: 'greet', handler: 'JIT', pool: 'node', cs: { function: 'p/f', ref: 'Prod!' } }] }), '/spec/components/0/cs/ref', /version number/],
    ['a cs function name without a namespace', doc({ pools: [{ name: 'node', runner: 'csjs' }], components: [{ id: 'greet', handler: 'JIT', pool: 'node', cs: { function: 'reconcile' } }] }), '/spec/components/0/cs/function', /./],
    ['a component with both jit and cs', doc({ pools: [{ name: 'node', runner: 'csjs' }], components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' }, cs: { sha256: 'a'.repeat(64) } }] }), '/spec/components/0/jit', /not both/],
    ['a component id ending in a dot', doc({ components: [{ id: 'quote.', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } }] }), '/spec/components/0/id', /./],
    ['an unknown ambient ledger mode', doc({ ledger: { ambient: 'some' } }), '/spec/ledger/ambient', /./],
    ['a sample rate of 0', doc({ ledger: { ambient: 'sampled', sampleRate: 0 } }), '/spec/ledger/sampleRate', /./],
    ['a sample rate over 1', doc({ ledger: { ambient: 'sampled', sampleRate: 2 } }), '/spec/ledger/sampleRate', /./],
    ['a retention age without a unit', doc({ ledger: { retention: { maxAge: '7' } } }), '/spec/ledger/retention/maxAge', /./],
    ['a retention size in words', doc({ ledger: { retention: { maxSize: 'lots' } } }), '/spec/ledger/retention/maxSize', /./],
    ['an unknown ledger field', doc({ ledger: { keep: 'all' } }), '/spec/ledger/keep', /./],
    ['a state write glob of too many alternatives', doc({ capabilities: { state: { write: ['data/**', `data/${'{a,b}'.repeat(7)}`] } } }), '/spec/capabilities/state/write/1', /more than 64 globs/],
    ['a state forbidden glob with an extglob', doc({ capabilities: { state: { write: ['data/**'], forbidden: ['data/+(a|b)'] } } }), '/spec/capabilities/state/forbidden/0', /"data\/\+\(a\|b\)" holds "\(" or "\)"/],
    ['a declared output glob with a brace range', doc({ components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' }, declaredOutputs: [{ path: 'output/{1..3}.json', role: 'report' }] }] }), '/spec/components/0/declaredOutputs/0/path', /brace range/],
  ];
  it.each(cases)('reports %s with its JSON path', (_name, input, path, reason) => {
    const result = validateAppDefinition(input, options);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const problem = result.problems.find((p) => p.path === path);
    expect(problem, JSON.stringify(result.problems)).toBeDefined();
    expect(problem!.file).toBe('apps/shop/app.yaml');
    expect(problem!.reason).toMatch(reason);
  });

  it.each(['outOfStock', 'out_of_stock', 'v1.quote', 'Q', 'a-B_c.9'])('accepts the component id %s (label-value syntax)', (id) => {
    const input = doc({
      components: [{ id, handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } }],
      routes: [{ http: { method: 'GET', path: '/greet/:name' }, component: id }],
    });
    const result = validateAppDefinition(input, options);
    expect(result.ok ? [] : result.problems).toEqual([]);
  });

  describe('LLM components', () => {
    const files: Record<string, string> = {
      'scripts/greet.js': '',
      'prompts/triage.njk': 'Triage {{ body }}',
      'schemas/triage.json': '{"type":"object","properties":{"category":{"type":"string"}},"required":["category"]}',
      'schemas/broken.json': '{"type": "objekt"}',
      'schemas/not-json.json': '{nope',
    };
    const llmOptions = { ...options, fileExists: (p: string) => p in files, readFile: (p: string) => files[p] };
    function llmDoc(llm: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown {
      return doc({
        pools: [{ name: 'node' }, { name: 'brain', runner: 'llm' }],
        components: [
          { id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } },
          { id: 'triage', handler: 'LLM', pool: 'brain', llm: { prompt: 'prompts/triage.njk', ...llm } },
        ],
        capabilities: { llm: { models: ['small', 'large'] }, kv: { prefixes: ['t:'], ops: ['get'] } },
        ...extra,
      });
    }

    it('accepts a component with a schema file, an inline schema, tools the app may use, and applies the defaults', () => {
      for (const outputSchema of ['schemas/triage.json', { type: 'object' }]) {
        const result = validateAppDefinition(llmDoc({ outputSchema, model: 'large', tools: ['core.kv.get'] }), llmOptions);
        expect(result.ok ? [] : result.problems).toEqual([]);
        if (!result.ok) return;
        expect(result.document.spec.components[1]!.llm).toMatchObject({ maxAttempts: 3, maxToolCalls: 8, respond: 'generic', header: false, tools: ['core.kv.get'] });
      }
    });

    const cases: Array<[string, unknown, string, RegExp]> = [
      ['a missing template', llmDoc({ prompt: 'prompts/none.njk' }), '/spec/components/1/llm/prompt', /does not exist/],
      ['a missing system template', llmDoc({ system: 'prompts/sys.njk' }), '/spec/components/1/llm/system', /does not exist/],
      ['a schema file that is not JSON', llmDoc({ outputSchema: 'schemas/not-json.json' }), '/spec/components/1/llm/outputSchema', /is not JSON/],
      ['a schema that does not compile', llmDoc({ outputSchema: 'schemas/broken.json' }), '/spec/components/1/llm/outputSchema', /not a JSON Schema/],
      ['an inline schema that does not compile', llmDoc({ outputSchema: { type: 12 } }), '/spec/components/1/llm/outputSchema', /not a JSON Schema/],
      ['a model the capability does not list', llmDoc({ model: 'huge' }), '/spec/components/1/llm/model', /not one of/],
      ['a tool the capabilities do not allow', llmDoc({ tools: ['core.linux.executeCommand'] }), '/spec/components/1/llm/tools/0', /do not allow/],
      ['a tool that does not exist', llmDoc({ tools: ['core.nope'] }), '/spec/components/1/llm/tools/0', /no tool named/],
      ['httpResponse without a schema', llmDoc({ respond: 'httpResponse' }), '/spec/components/1/llm/respond', /needs an outputSchema/],
      ['no llm capability', llmDoc({}, { capabilities: {} }), '/spec/components/1/handler', /needs the llm capability/],
      ['an LLM component on a jit pool', llmDoc({}, { pools: [{ name: 'node' }, { name: 'brain' }] }), '/spec/components/1/pool', /runner: llm/],
    ];
    it.each(cases)('reports %s with its JSON path', (_name, input, path, reason) => {
      const result = validateAppDefinition(input, llmOptions);
      expect(result.ok).toBe(false);
      if (result.ok) return;
      const problem = result.problems.find((p) => p.path === path);
      expect(problem, JSON.stringify(result.problems)).toBeDefined();
      expect(problem!.reason).toMatch(reason);
    });

    describe('optimize and fallback', () => {
      const optimized = { outputSchema: 'schemas/triage.json', temperature: 0, tools: ['core.kv.get'], optimize: { mode: 'auto' } };

      it('accepts an eligible component and fills the documented defaults', () => {
        const result = validateAppDefinition(llmDoc(optimized), llmOptions);
        expect(result.ok ? [] : result.problems).toEqual([]);
        if (!result.ok) return;
        expect(result.document.spec.components[1]!.llm!.optimize).toEqual({
          mode: 'auto',
          minSamples: 50,
          agreement: 0.99,
          shadowRequests: 200,
          canaryPercent: 10,
          canaryRequests: 200,
          auditPercent: 1,
          minRepeats: 5,
          minRequestsPerMinute: 1,
          maxSamples: 500,
          holdout: 0.3,
          minCoverage: 0.8,
          maxAttempts: 3,
          maxCodegenTokens: 100000,
        });
        // Off (or absent) asks nothing of the component.
        expect(validateAppDefinition(llmDoc({ optimize: { mode: 'off' } }), llmOptions).ok).toBe(true);
      });

      it('accepts a promoted component: JIT on a jit pool with its llm block as the fallback', () => {
        const promoted = doc({
          pools: [{ name: 'node' }, { name: 'brain', runner: 'llm' }],
          components: [{ id: 'triage', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' }, llm: { prompt: 'prompts/triage.njk', ...optimized }, fallback: { pool: 'brain' } }],
          routes: [],
          capabilities: { llm: { models: ['small'] }, kv: { prefixes: ['t:'], ops: ['get'] } },
        });
        const result = validateAppDefinition(promoted, llmOptions);
        expect(result.ok ? [] : result.problems).toEqual([]);
      });

      const optimizeCases: Array<[string, unknown, string, RegExp]> = [
        ['no output schema', llmDoc({ ...optimized, outputSchema: undefined }), '/spec/components/1/llm/outputSchema', /needs an outputSchema/],
        ['a temperature other than 0', llmDoc({ ...optimized, temperature: 0.7 }), '/spec/components/1/llm/temperature', /temperature: 0/],
        ['no temperature', llmDoc({ ...optimized, temperature: undefined }), '/spec/components/1/llm/temperature', /temperature: 0/],
        ['a tool that writes', llmDoc({ ...optimized, tools: ['core.kv.set'] }, { capabilities: { llm: { models: ['small'] }, kv: { prefixes: ['t:'] } } }), '/spec/components/1/llm/tools/0', /only read/],
        ['no jit pool', llmDoc(optimized, { pools: [{ name: 'brain', runner: 'llm' }], components: [{ id: 'triage', handler: 'LLM', pool: 'brain', llm: { prompt: 'prompts/triage.njk', ...optimized } }] }), '/spec/components/0/llm/optimize', /runner: jit/],
        ['a code pool that is not jit', llmDoc({ ...optimized, optimize: { mode: 'auto', pool: 'brain' } }), '/spec/components/1/llm/optimize/pool', /runner: llm/],
        ['an agreement out of range', llmDoc({ ...optimized, optimize: { mode: 'auto', agreement: 1.5 } }), '/spec/components/1/llm/optimize/agreement', /.+/],
        [
          'a minSamples too small for its holdout to hold back 4 samples',
          llmDoc({ ...optimized, optimize: { mode: 'auto', minSamples: 4, holdout: 0.3 } }),
          '/spec/components/1/llm/optimize/minSamples',
          /^minSamples 4 with holdout 0\.3 holds back about 1 of them; a candidate is judged on at least 4 held-back samples: raise minSamples to 14 or more, or holdout$/,
        ],
        ['a minSamples one short at the smallest holdout', llmDoc({ ...optimized, optimize: { mode: 'suggest', minSamples: 39, holdout: 0.1 } }), '/spec/components/1/llm/optimize/minSamples', /minSamples 39 with holdout 0\.1.*raise minSamples to 40/],
        ['a fallback on an LLM component', llmDoc({}, {}), '/spec/components/1/fallback', /only a JIT component/],
      ];
      optimizeCases[optimizeCases.length - 1]![1] = doc({
        pools: [{ name: 'node' }, { name: 'brain', runner: 'llm' }],
        components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } }, { id: 'triage', handler: 'LLM', pool: 'brain', llm: { prompt: 'prompts/triage.njk' }, fallback: { pool: 'brain' } }],
        capabilities: { llm: { models: ['small'] } },
      });
      optimizeCases.push(
        [
          'an llm block on a JIT component without a fallback',
          doc({ pools: [{ name: 'node' }], components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' }, llm: { prompt: 'prompts/triage.njk' } }], capabilities: { llm: { models: ['small'] } } }),
          '/spec/components/0/llm',
          /only as its fallback/,
        ],
        [
          'a fallback pool that is not llm',
          doc({ pools: [{ name: 'node' }], components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' }, llm: { prompt: 'prompts/triage.njk' }, fallback: { pool: 'node' } }], capabilities: { llm: { models: ['small'] } } }),
          '/spec/components/0/fallback/pool',
          /runner: llm/,
        ],
      );
      it.each([
        [14, 0.3],
        [40, 0.1],
        [5, 0.9],
        [8, 0.5],
      ])('takes minSamples %d with holdout %d: at least 4 held back', (minSamples, holdout) => {
        const result = validateAppDefinition(llmDoc({ ...optimized, optimize: { mode: 'auto', minSamples, holdout } }), llmOptions);
        expect(result.ok ? [] : result.problems).toEqual([]);
      });

      it.each(optimizeCases)('reports %s', (_name, input, path, reason) => {
        const result = validateAppDefinition(input, llmOptions);
        expect(result.ok).toBe(false);
        if (result.ok) return;
        const problem = result.problems.find((p) => p.path === path);
        expect(problem, JSON.stringify(result.problems)).toBeDefined();
        expect(problem!.reason).toMatch(reason);
      });
    });
  });
});

describe('delivery routes', () => {
  const route = (extra: Record<string, unknown>): unknown => doc({ routes: [{ component: 'greet', ...extra }] });

  it('applies the delivery defaults to the route shapes of the issue', () => {
    const result = validateAppDefinition(
      doc({
        routes: [
          { cron: { schedule: '0 3 * * *', timezone: 'Europe/Paris', jobId: 'nightly', missed: 'run-once' }, component: 'greet' },
          { queue: { name: 'orders', concurrency: 4, maxAttempts: 5, backoff: { initialMs: 200, maxMs: 30000 }, maxAgeSeconds: 86400, deadLetter: true }, component: 'greet' },
          { callback: { name: 'payment-done', ttlSeconds: 86400 }, component: 'greet' },
          { trigger: { event: 'order.created', from: ['shop'] }, component: 'greet' },
          { trigger: { event: 'order.paid' }, component: 'greet' },
        ],
      }),
      options,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.document.spec.routes[2]!.callback).toEqual({
      name: 'payment-done',
      ttlSeconds: 86400,
      concurrency: 1,
      maxAttempts: 5,
      backoff: { initialMs: 200, maxMs: 30000 },
      deadLetter: true,
    });
    expect(result.document.spec.routes[4]!.trigger?.from).toBeUndefined();
  });

  const cases: Array<[string, unknown, string, RegExp]> = [
    ['a route with no source', route({}), '/spec/routes/0', /must declare one source/],
    ['a route with two sources', route({ http: { method: 'GET', path: '/x' }, queue: { name: 'q' } }), '/spec/routes/0', /declares http and queue/],
    ['a schedule of four fields', route({ cron: { schedule: '0 3 * * *  ', jobId: 'j' } }), '', /./],
    ['a bad cron field', route({ cron: { schedule: '0 25 * * *', jobId: 'j' } }), '/spec/routes/0/cron/schedule', /not a cron schedule/],
    ['an unknown time zone', route({ cron: { schedule: '0 3 * * *', timezone: 'Europe/Atlantis', jobId: 'j' } }), '/spec/routes/0/cron/timezone', /IANA time zone/],
    ['an unknown missed policy', route({ cron: { schedule: '0 3 * * *', jobId: 'j', missed: 'all' } }), '/spec/routes/0/cron/missed', /./],
    ['a backoff ceiling under its start', route({ queue: { name: 'q', backoff: { initialMs: 500, maxMs: 100 } } }), '/spec/routes/0/queue/backoff/maxMs', /under initialMs/],
    ['a lease not past the execution', route({ queue: { name: 'q', leaseSeconds: 8 } }), '/spec/routes/0/queue/leaseSeconds', /does not exceed/],
    ['a queue name with a colon', route({ queue: { name: 'a:b' } }), '/spec/routes/0/queue/name', /./],
    ['zero attempts', route({ queue: { name: 'q', maxAttempts: 0 } }), '/spec/routes/0/queue/maxAttempts', /./],
    ['a trigger from a bad app name', route({ trigger: { event: 'e', from: ['Not An App'] } }), '/spec/routes/0/trigger/from/0', /./],
    ['an unknown route field', route({ queue: { name: 'q', priority: 1 } }), '/spec/routes/0/queue/priority', /./],
  ];
  it.each(cases.filter(([, , at]) => at !== ''))('refuses %s', (_name, input, at, reason) => {
    const result = validateAppDefinition(input, options);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toContainEqual(expect.objectContaining({ path: at, reason: expect.stringMatching(reason) }));
  });

  it('refuses two queue routes of one name and two cron routes of one job', () => {
    const result = validateAppDefinition(
      doc({
        routes: [
          { queue: { name: 'q' }, component: 'greet' },
          { queue: { name: 'q' }, component: 'greet' },
          { cron: { schedule: '* * * * *', jobId: 'j' }, component: 'greet' },
          { cron: { schedule: '0 * * * *', jobId: 'j' }, component: 'greet' },
        ],
      }),
      options,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => [p.path, p.reason])).toEqual([
      ['/spec/routes/1/queue', 'duplicate route queue q'],
      ['/spec/routes/3/cron', 'duplicate route cron j'],
    ]);
  });

  it('refuses capabilities.mcp globs of any syntax but * and ?, which a forbidden glob would otherwise read as plain text', () => {
    const result = validateAppDefinition(doc({ capabilities: { mcp: { allow: ['app.fs.*', 'app.fs.read_?ile'], forbidden: ['app.fs.{write,move}_*'] } } }), options);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.map((problem) => problem.path)).toEqual(['/spec/capabilities/mcp/forbidden/0']);
  });
});
