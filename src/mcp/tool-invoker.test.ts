import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CapabilitiesSpec } from '../apps/schema/app-definition-schema.js';
import { createLlmService } from '../llm/llm-service.js';
import { createScriptedProvider } from '../llm/scripted-provider.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { type ExecutionGrant, McpTokenService } from './mcp-token-service.js';
import { toolsFor } from './tool-catalog.js';
import type { EndpointInvoker, ToolServices } from './tool-definition.js';
import { invokeTool } from './tool-invoker.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-tools-'));
const revision = 'abc1234def';
mkdirSync(path.join(root, 'revisions', 'alpha', revision, 'prompts'), { recursive: true });
writeFileSync(path.join(root, 'revisions', 'alpha', revision, 'prompts', 'p.txt'), 'the prompt');
writeFileSync(path.join(root, 'revisions', 'alpha', revision, 'blob.bin'), Buffer.from([0xff, 0xfe, 0x00]));
mkdirSync(path.join(root, 'revisions', 'beta', revision), { recursive: true });
writeFileSync(path.join(root, 'revisions', 'beta', revision, 'secret.txt'), 'beta only');
afterAll(() => rmSync(root, { recursive: true, force: true }));

const invocations: Array<{ affordance: string; handle: string; payload: any; timeoutMs: number | undefined }> = [];
let nextOutcome: Awaited<ReturnType<EndpointInvoker['invoke']>> = { outcome: 'applied', observation: {} };
const spine: EndpointInvoker = {
  async invoke(affordance, handle, payload, options) {
    invocations.push({ affordance, handle, payload, timeoutMs: options?.timeoutMs });
    return nextOutcome;
  },
};

const metrics = createMetrics({ defaultMetrics: false });
const tokens = new McpTokenService();
afterAll(() => tokens.close());
const store = new MemoryRuntimeStore();
afterAll(() => store.close());
const kv = store.kv;

const llm = createLlmService({
  provider: createScriptedProvider({ entries: [{ match: 'hello', answer: 'hi there' }] }),
  store: store.llm,
  metrics,
  logger: silentLogger(),
});

function services(overrides: Partial<ToolServices> = {}): ToolServices {
  return {
    kv,
    llm,
    spine,
    revisionsRoot: path.join(root, 'revisions'),
    scratchDir: async () => path.join(root, 'scratch'),
    hostEnv: { LANG: 'C.UTF-8', SECRET: 'do-not-pass' },
    logger: silentLogger(),
    ...overrides,
  };
}

const everything: CapabilitiesSpec = {
  shell: { allow: [['echo']], timeoutMs: 1000, maxStdoutBytes: 10, maxStderrBytes: 20, env: ['LANG'] },
  web: { allowHosts: ['example.com'], methods: ['GET'], timeoutMs: 2000, maxBodyBytes: 100, allowPrivate: ['127.0.0.1:9'] },
  kv: { prefixes: ['ctr:'], ops: ['get', 'set', 'del'] },
  llm: { models: ['m1'], maxTokens: 16 },
};

function grant(appId: string, capabilities: CapabilitiesSpec): ExecutionGrant {
  return tokens.resolve(
    tokens.mint({ appId, componentId: 'comp', requestId: `req-${appId}`, revision, capabilities, configuration: { greeting: `hi ${appId}` } }, 60_000),
  );
}

async function call(g: ExecutionGrant, name: string, args: unknown, overrides: Partial<ToolServices> = {}): Promise<any> {
  const result = await invokeTool({ services: services(overrides), metrics, logger: silentLogger() }, g, name, args, new AbortController().signal);
  return { ...(result.structuredContent as object), isError: result.isError === true };
}

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = (metric?.values as Array<{ labels: Record<string, string>; value: number }> | undefined)?.find((v) =>
    Object.entries(labels).every(([key, wanted]) => v.labels[key] === wanted),
  );
  return value?.value ?? 0;
}

describe('tool list per capability set', () => {
  it.each<[string, CapabilitiesSpec, string[]]>([
    ['none', {}, []],
    ['kv get only', { kv: { prefixes: ['a:'], ops: ['get'] } }, ['core.kv.get']],
    ['shell', { shell: everything.shell! }, ['core.linux.executeCommand']],
    ['web', { web: everything.web! }, ['tool.web.fetch']],
    ['llm', { llm: everything.llm! }, ['core.llm.generate', 'core.llm.embed']],
    ['state', { state: { write: ['data/**'], forbidden: [] } }, ['core.state.applyStateDiff']],
    ['codeq', { codeq: { publishTopics: ['orders.*'] } }, ['core.codeq.publish']],
    ['functions', { functions: { namespaces: ['payments'] } }, ['core.fn.publish', 'core.fn.versions', 'core.fn.alias.set']],
    ['queue', { queue: { publish: ['orders'] } }, ['core.queue.publish']],
    ['callback', { callback: { create: ['paid'] } }, ['core.callback.create']],
    ['trigger', { trigger: { emit: ['order.created'] } }, ['core.trigger.emit']],
    ['everything', everything, ['core.llm.generate', 'core.llm.embed', 'core.linux.executeCommand', 'tool.web.fetch', 'core.kv.get', 'core.kv.set', 'core.kv.del']],
  ])('%s', (_name, capabilities, extra) => {
    // core.fn.bundle and core.fn.log serve the csjs runner of every app, only ever for the execution's own app.
    const base = ['core.state.getDefinitionFileContent', 'core.framework.getConfigValue', 'core.log', 'core.fn.bundle', 'core.fn.log'];
    expect(toolsFor(capabilities).map((tool) => tool.name).sort()).toEqual([...base, ...extra].sort());
  });

  it("lists the workflow engine's tools to a run's owner only", () => {
    const engine = ['core.component.invoke', 'core.workflow.checkpoint', 'core.workflow.emit', 'core.workflow.load'];
    expect(toolsFor({}, true).map((tool) => tool.name).filter((name) => engine.includes(name)).sort()).toEqual(engine);
    expect(toolsFor(everything).map((tool) => tool.name).filter((name) => engine.includes(name))).toEqual([]);
  });
});

describe('invokeTool', () => {
  it('refuses a tool the capabilities do not list, counts the refusal, records the call', async () => {
    const g = grant('alpha', {});
    const before = await metricValue('uhlp_capability_refusals_total', { app: 'alpha', capability: 'shell' });
    const result = await call(g, 'core.linux.executeCommand', { argv: ['echo', 'x'] });
    expect(result).toMatchObject({ isError: true, code: 'UHLP_CAPABILITY_DENIED', status: 403, details: { capability: 'shell', rule: 'absent' } });
    expect(await metricValue('uhlp_capability_refusals_total', { app: 'alpha', capability: 'shell' })).toBe(before + 1);
    expect(await metricValue('uhlp_mcp_calls_total', { app: 'alpha', tool: 'core.linux.executeCommand', outcome: 'UHLP_CAPABILITY_DENIED' })).toBe(1);
    expect(g.calls.summary()).toEqual([expect.objectContaining({ tool: 'core.linux.executeCommand', count: 1 })]);
    expect(invocations).toHaveLength(0);
  });

  it('names unknown tools and bad arguments by stable codes', async () => {
    const g = grant('alpha', everything);
    expect(await call(g, 'core.nope', {})).toMatchObject({ isError: true, code: 'UHLP_MCP_TOOL_NOT_FOUND' });
    expect(await call(g, 'core.kv.get', { key: 5 })).toMatchObject({ isError: true, code: 'UHLP_MCP_INVALID_ARGUMENTS', details: { field: 'key' } });
    expect(await call(g, 'core.kv.get', { key: 'ctr:a', extra: 1 })).toMatchObject({ isError: true, code: 'UHLP_MCP_INVALID_ARGUMENTS' });
    expect(await metricValue('uhlp_mcp_calls_total', { app: 'alpha', tool: 'unknown' })).toBe(1);
  });

  it('keeps kv values per app and inside the allowed prefixes', async () => {
    const alpha = grant('alpha', everything);
    const beta = grant('beta', everything);
    expect(await call(alpha, 'core.kv.set', { key: 'ctr:n', value: { n: 1 } })).toEqual({ ok: true, isError: false });
    expect(await call(alpha, 'core.kv.get', { key: 'ctr:n' })).toEqual({ value: { n: 1 }, isError: false });
    // Same key, other app: its own namespace.
    expect(await call(beta, 'core.kv.get', { key: 'ctr:n' })).toEqual({ value: null, isError: false });
    expect(await call(alpha, 'core.kv.get', { key: 'other:n' })).toMatchObject({ isError: true, code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'kv', rule: 'prefixes' } });
    expect(await call(alpha, 'core.kv.del', { key: 'ctr:n' })).toEqual({ deleted: true, isError: false });
    expect(await call(alpha, 'core.kv.del', { key: 'ctr:n' })).toEqual({ deleted: false, isError: false });
    const getOnly = grant('alpha', { kv: { prefixes: ['ctr:'], ops: ['get'] } });
    expect(await call(getOnly, 'core.kv.set', { key: 'ctr:n', value: 1 })).toMatchObject({ isError: true, details: { capability: 'kv', rule: 'absent' } });
  });

  it("reads files of the grant's own app at its revision, and nothing outside it", async () => {
    const g = grant('alpha', {});
    expect(await call(g, 'core.state.getDefinitionFileContent', { path: 'prompts/p.txt' })).toMatchObject({ content: 'the prompt', encoding: 'utf8', revision });
    expect(await call(g, 'core.state.getDefinitionFileContent', { path: 'blob.bin' })).toMatchObject({ content: '//4A', encoding: 'base64' });
    for (const escape of ['../beta/secret.txt', '/etc/passwd', 'prompts/../../beta/secret.txt', '..', '.git/config', 'a\\..\\..\\beta']) {
      expect(await call(g, 'core.state.getDefinitionFileContent', { path: escape })).toMatchObject({ isError: true, code: 'UHLP_DEFINITION_PATH_REFUSED', details: { field: 'path' } });
    }
    expect(await call(g, 'core.state.getDefinitionFileContent', { path: 'missing.txt' })).toMatchObject({ isError: true, code: 'UHLP_DEFINITION_FILE_NOT_FOUND', status: 404 });
    // Without the state capability there is no write tool at all.
    expect(await call(g, 'core.state.applyStateDiff', { diff: 'x', message: 'm' })).toMatchObject({ isError: true, code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'state', rule: 'absent' } });
    // With it, but without a Git state store (apps from Kubernetes), the write tool says so.
    const writer = grant('alpha', { state: { write: ['data/**'], forbidden: [] } });
    expect(await call(writer, 'core.state.applyStateDiff', { diff: 'x', message: 'm' })).toMatchObject({ isError: true, code: 'UHLP_STATE_WRITE_NOT_AVAILABLE', status: 501 });
  });

  it('answers configuration values and logs', async () => {
    const g = grant('alpha', {});
    expect(await call(g, 'core.framework.getConfigValue', { key: 'greeting' })).toEqual({ value: 'hi alpha', found: true, isError: false });
    expect(await call(g, 'core.framework.getConfigValue', { key: 'nope' })).toEqual({ value: null, found: false, isError: false });
    expect(await call(g, 'core.log', { level: 'warn', message: 'm', fields: { a: 1 } })).toEqual({ logged: true, isError: false });
  });

  it('generates through the provider within the llm capability and records token usage', async () => {
    const g = grant('alpha', everything);
    expect(await call(g, 'core.llm.generate', { prompt: 'hello', maxTokens: 1000 })).toMatchObject({ text: 'hi there', model: 'm1', isError: false });
    expect(await call(g, 'core.llm.generate', { prompt: 'hello', model: 'gpt-x' })).toMatchObject({ isError: true, details: { capability: 'llm', rule: 'models' } });
    const llm = g.calls.summary().find((entry) => entry.tool === 'core.llm.generate');
    expect(llm).toMatchObject({ count: 2 });
    expect(llm?.token_usage?.completion).toBeGreaterThan(0);
  });

  it('sends shell calls through the spine with scratch cwd, listed env and clamped limits', async () => {
    const g = grant('alpha', everything);
    invocations.length = 0;
    nextOutcome = { outcome: 'rejected', reason: 'non_zero_exit', observation: { exitCode: 3, stdout: 'o', stderr: 'e', stdoutTruncated: false, stderrTruncated: true } };
    const result = await call(g, 'core.linux.executeCommand', { argv: ['echo', '$(rm -rf /)', ';', '|'], timeoutMs: 999_999 });
    expect(result).toMatchObject({ isError: false, outcome: 'rejected', reason: 'non_zero_exit', exitCode: 3, stdout: 'o', stderr: 'e', stderrTruncated: true });
    expect(invocations).toEqual([
      {
        affordance: 'tool.shell.exec',
        handle: 'cap.std.shell',
        payload: { argv: ['echo', '$(rm -rf /)', ';', '|'], cwd: path.join(root, 'scratch'), env: { LANG: 'C.UTF-8' }, timeoutMs: 1000, maxStdoutBytes: 10, maxStderrBytes: 20 },
        timeoutMs: 6000,
      },
    ]);
    expect(await call(g, 'core.linux.executeCommand', { argv: ['rm', '-rf', '/'] })).toMatchObject({ isError: true, details: { capability: 'shell', rule: 'allow' } });
    expect(invocations).toHaveLength(1);
  });

  it('sends web calls with the policy, and turns the endpoint refusal into a web capability refusal', async () => {
    const g = grant('alpha', everything);
    invocations.length = 0;
    nextOutcome = { outcome: 'applied', observation: { status: 404, headers: { a: 'b' }, body: 'nf', bodyEncoding: 'utf8', truncated: false, url: 'https://example.com/x', redirects: [] } };
    expect(await call(g, 'tool.web.fetch', { url: 'https://example.com/x' })).toMatchObject({ isError: false, outcome: 'applied', status: 404, body: 'nf' });
    expect(invocations[0]).toMatchObject({
      affordance: 'tool.web.fetch',
      handle: 'cap.std.web.fetch',
      payload: { url: 'https://example.com/x', method: 'GET', timeoutMs: 2000, maxBodyBytes: 100, allowHosts: ['example.com'], methods: ['GET'], allowPrivate: ['127.0.0.1:9'] },
    });
    nextOutcome = { outcome: 'rejected', reason: 'refused', observation: { code: 'UHLP_WEB_ADDRESS_NOT_ALLOWED', message: 'loopback', details: { capability: 'web', address: '127.0.0.1' } } };
    expect(await call(g, 'tool.web.fetch', { url: 'https://example.com/r' })).toMatchObject({
      isError: true,
      code: 'UHLP_CAPABILITY_DENIED',
      details: { capability: 'web', rule: 'address', refusal: 'UHLP_WEB_ADDRESS_NOT_ALLOWED', address: '127.0.0.1' },
    });
    nextOutcome = { outcome: 'rejected', reason: 'timeout', observation: { code: 'UHLP_WEB_TIMEOUT', message: 'slow' } };
    expect(await call(g, 'tool.web.fetch', { url: 'https://example.com/t' })).toMatchObject({ isError: false, outcome: 'rejected', reason: 'timeout', status: null });
    expect(await call(g, 'tool.web.fetch', { url: 'https://other.com/' })).toMatchObject({ isError: true, details: { capability: 'web', rule: 'allowHosts' } });
    expect(await call(g, 'tool.web.fetch', { url: 'https://example.com/', method: 'POST' })).toMatchObject({ isError: true, details: { capability: 'web', rule: 'methods' } });
    expect(await call(g, 'tool.web.fetch', { url: 'not a url' })).toMatchObject({ isError: true, code: 'UHLP_MCP_INVALID_ARGUMENTS', details: { field: 'url' } });
    expect(invocations).toHaveLength(3);
  });

  it('narrows a web call to the hosts the caller names, first hop here and every redirect hop at the endpoint, never widening it', async () => {
    const g = grant('alpha', everything);
    invocations.length = 0;
    nextOutcome = { outcome: 'applied', observation: { status: 200, headers: {}, body: 'ok', bodyEncoding: 'utf8', truncated: false, url: 'https://example.com/x', redirects: [] } };
    expect(await call(g, 'tool.web.fetch', { url: 'https://example.com/x', allowHosts: ['example.com'] })).toMatchObject({ isError: false, outcome: 'applied' });
    expect(invocations[0]!.payload).toMatchObject({ allowHosts: ['example.com'], narrowHosts: ['example.com'] });
    expect(await call(g, 'tool.web.fetch', { url: 'https://example.com/x', allowHosts: ['api.example.org'] })).toMatchObject({
      isError: true,
      code: 'UHLP_CAPABILITY_DENIED',
      details: { capability: 'web', rule: 'allowHosts', host: 'example.com', narrowed: true },
    });
    // A list naming more than the capability allows does not widen it.
    expect(await call(g, 'tool.web.fetch', { url: 'https://other.com/', allowHosts: ['other.com', 'example.com'] })).toMatchObject({ isError: true, details: { capability: 'web', rule: 'allowHosts' } });
    expect(invocations).toHaveLength(1);
    // The endpoint's refusal of a redirect hop outside the narrowed list is a web capability refusal.
    nextOutcome = { outcome: 'rejected', reason: 'refused', observation: { code: 'UHLP_WEB_HOST_NOT_ALLOWED', message: 'narrowed', details: { capability: 'web', host: 'localhost', narrowed: true } } };
    expect(await call(g, 'tool.web.fetch', { url: 'https://example.com/r', allowHosts: ['example.com'] })).toMatchObject({
      isError: true,
      code: 'UHLP_CAPABILITY_DENIED',
      details: { capability: 'web', rule: 'allowHosts', refusal: 'UHLP_WEB_HOST_NOT_ALLOWED', host: 'localhost' },
    });
  });

  it('answers UHLP_ENDPOINT_UNAVAILABLE for shell and web when the core has no spine', async () => {
    const g = grant('alpha', everything);
    expect(await call(g, 'core.linux.executeCommand', { argv: ['echo'] }, { spine: undefined })).toMatchObject({ isError: true, code: 'UHLP_ENDPOINT_UNAVAILABLE' });
  });
});
