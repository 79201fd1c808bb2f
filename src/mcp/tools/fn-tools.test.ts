/**
 * core.fn.* and core.codeq.publish through the tool invoker, with the memory
 * store: the functions capability's namespaces, the tenant taken from the
 * grant (never another app's bundles), versions and aliases, dry runs, and
 * queue publishing with and without a publisher connected.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { CapabilitiesSpec } from '../../apps/schema/app-definition-schema.js';
import { buildBundle } from '../../contract/cs-bundle/function-bundle.js';
import { silentLogger } from '../../logger.js';
import { createMetrics } from '../../metrics.js';
import { MemoryRuntimeStore } from '../../state/memory-runtime-store.js';
import { McpTokenService, type ExecutionGrant } from '../mcp-token-service.js';
import type { ToolServices } from '../tool-definition.js';
import { invokeTool } from '../tool-invoker.js';
import type { CodeqPublisher } from './fn-tools.js';
import { codeqOnQueues } from '../../functions/codeq-on-queues.js';

const metrics = createMetrics({ defaultMetrics: false });
const tokens = new McpTokenService();
const store = new MemoryRuntimeStore();
afterAll(async () => {
  tokens.close();
  await store.close();
});

const published: Array<{ appId: string; topic: string; payload: unknown }> = [];
const publisher: CodeqPublisher = {
  async publish(appId, topic, payload) {
    published.push({ appId, topic, payload });
    return { messageId: `m-${published.length}` };
  },
};

const MANIFEST = JSON.stringify({ schema: 'cs.function.script.v1', runtime: 'cs-js', entry: 'function.js', handler: 'default' });
const FUNCTION_JS = 'export default async () => 1';

let sequence = 0;
function grant(appId: string, capabilities: CapabilitiesSpec): ExecutionGrant {
  return tokens.resolve(tokens.mint({ appId, componentId: 'c', requestId: `req-${++sequence}`, revision: 'r', capabilities, configuration: {} }, 60_000));
}

async function call(g: ExecutionGrant, name: string, args: unknown, codeq?: CodeqPublisher): Promise<any> {
  const services = {
    kv: store.kv,
    revisionsRoot: '/nonexistent',
    scratchDir: async () => '/nonexistent',
    hostEnv: {},
    logger: silentLogger(),
    functions: store.functions,
    ...(codeq !== undefined ? { codeq } : {}),
  } as unknown as ToolServices;
  const result = await invokeTool({ services, metrics, logger: silentLogger() }, g, name, args, new AbortController().signal);
  return { ...(result.structuredContent as object), isError: result.isError === true };
}

const publisherGrant = () => grant('pay', { functions: { namespaces: ['payments'] } });

describe('core.fn.publish, versions, alias.set', () => {
  it('publishes versions in order, keeps one version per newest bundle, and moves aliases', async () => {
    const g = publisherGrant();
    const first = await call(g, 'core.fn.publish', { function: 'payments/sum', functionJs: FUNCTION_JS, manifestJson: MANIFEST, alias: 'prod' });
    expect(first).toMatchObject({ isError: false, version: 1, created: true, alias: 'prod', sha256: buildBundle({ functionJs: FUNCTION_JS, manifestJson: MANIFEST }).sha256 });
    expect(await call(g, 'core.fn.publish', { function: 'payments/sum', functionJs: FUNCTION_JS, manifestJson: MANIFEST })).toMatchObject({ version: 1, created: false });
    const second = await call(g, 'core.fn.publish', { function: 'payments/sum', functionJs: `${FUNCTION_JS} + 1`, manifestJson: MANIFEST });
    expect(second).toMatchObject({ version: 2, created: true });
    expect(await call(g, 'core.fn.alias.set', { function: 'payments/sum', alias: 'prod', version: 2 })).toMatchObject({ isError: false });
    const listed = await call(g, 'core.fn.versions', { function: 'payments/sum' });
    expect(listed.versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
    expect(listed.aliases).toEqual({ prod: 2 });
    expect(await call(g, 'core.fn.alias.set', { function: 'payments/sum', alias: 'prod', version: 9 })).toMatchObject({ isError: true, code: 'UHLP_FN_NOT_FOUND' });
  });

  it('stores nothing on a dry run', async () => {
    const g = publisherGrant();
    const dry = await call(g, 'core.fn.publish', { function: 'payments/dry', functionJs: FUNCTION_JS, manifestJson: MANIFEST, dryRun: true });
    expect(dry).toMatchObject({ isError: false, dryRun: true, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(await call(g, 'core.fn.versions', { function: 'payments/dry' })).toMatchObject({ versions: [] });
  });

  it('refuses namespaces outside the capability, apps without it, and bad manifests, with stable codes', async () => {
    expect(await call(publisherGrant(), 'core.fn.publish', { function: 'billing/sum', functionJs: FUNCTION_JS, manifestJson: MANIFEST })).toMatchObject({
      isError: true,
      code: 'UHLP_CAPABILITY_DENIED',
      details: { capability: 'functions', rule: 'namespaces' },
    });
    expect(await call(publisherGrant(), 'core.fn.versions', { function: 'billing/sum' })).toMatchObject({ isError: true, code: 'UHLP_CAPABILITY_DENIED', details: { rule: 'namespaces' } });
    expect(await call(grant('pay', {}), 'core.fn.publish', { function: 'payments/sum', functionJs: FUNCTION_JS, manifestJson: MANIFEST })).toMatchObject({
      isError: true,
      code: 'UHLP_CAPABILITY_DENIED',
    });
    const bad = await call(publisherGrant(), 'core.fn.publish', { function: 'payments/sum', functionJs: FUNCTION_JS, manifestJson: MANIFEST.replace('"handler":"default"', '"handler":"default","limits":{"memoryMb":1}') });
    expect(bad).toMatchObject({ isError: true, code: 'UHLP_FN_MANIFEST_INVALID', details: { field: 'limits.memoryMb' } });
    expect(await call(publisherGrant(), 'core.fn.publish', { function: 'Payments/Sum', functionJs: FUNCTION_JS, manifestJson: MANIFEST })).toMatchObject({ isError: true, code: 'UHLP_FN_REF_INVALID' });
  });
});

describe('core.fn.bundle and core.fn.log', () => {
  it("answers only the execution's own app's bundles", async () => {
    const { sha256 } = await call(publisherGrant(), 'core.fn.publish', { function: 'payments/own', functionJs: `${FUNCTION_JS} // own`, manifestJson: MANIFEST });
    const own = await call(grant('pay', {}), 'core.fn.bundle', { sha256 });
    expect(Buffer.from(own.bundle, 'base64').equals(buildBundle({ functionJs: `${FUNCTION_JS} // own`, manifestJson: MANIFEST }).bytes)).toBe(true);
    expect(await call(grant('other', {}), 'core.fn.bundle', { sha256 })).toMatchObject({ isError: true, code: 'UHLP_FN_NOT_FOUND' });
  });

  it("keeps log lines under the execution's own request id", async () => {
    const g = grant('pay', {});
    expect(await call(g, 'core.fn.log', { lines: [{ level: 'info', ts: 1, msg: '"hi"' }] })).toMatchObject({ kept: 1, activation: g.requestId });
    const chunks = await store.functions.readLogs(g.requestId);
    expect(chunks?.map((chunk) => JSON.parse(chunk))).toEqual([{ app: 'pay', component: 'c', lines: [{ level: 'info', ts: 1, msg: '"hi"' }] }]);
  });
});

describe('core.codeq.publish', () => {
  const codeq: CapabilitiesSpec = { codeq: { publishTopics: ['orders.*'] } };

  it('hands an allowed topic to the connected publisher, for the grant app', async () => {
    expect(await call(grant('pay', codeq), 'core.codeq.publish', { topic: 'orders.created', payload: { id: 7 } }, publisher)).toMatchObject({ isError: false, messageId: 'm-1' });
    expect(published).toEqual([{ appId: 'pay', topic: 'orders.created', payload: { id: 7 } }]);
  });

  it('refuses a topic outside the patterns, and answers 503 while no publisher is connected', async () => {
    expect(await call(grant('pay', codeq), 'core.codeq.publish', { topic: 'billing.x', payload: 1 }, publisher)).toMatchObject({
      isError: true,
      code: 'UHLP_CAPABILITY_DENIED',
      details: { capability: 'codeq', rule: 'publishTopics' },
    });
    expect(await call(grant('pay', codeq), 'core.codeq.publish', { topic: 'orders.x', payload: 1 })).toMatchObject({ isError: true, code: 'UHLP_CODEQ_UNAVAILABLE', status: 503 });
    expect(published).toHaveLength(1);
  });

  it("publishes onto the app's own queue route named by the topic, through the delivery sources", async () => {
    const calls: unknown[][] = [];
    const queues = codeqOnQueues({
      async publishQueue(appId, name, payloadJson, invocationId) {
        calls.push([appId, name, payloadJson, invocationId]);
        return { messageId: '1-0', invocationId: 'inv' };
      },
    });
    expect(await call(grant('pay', codeq), 'core.codeq.publish', { topic: 'orders.created', payload: { id: 7 } }, queues)).toMatchObject({ isError: false, messageId: '1-0' });
    expect(calls).toEqual([['pay', 'orders.created', '{"id":7}', undefined]]);
  });
});
