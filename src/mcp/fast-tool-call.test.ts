/**
 * The fast path of a 2026-07-28 tools/call answers what the SDK answers for
 * the same message and the same tool outcome, runs the tool once, and leaves
 * every message of another shape to the SDK.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { waitFor } from '../../test/helpers/wait-for.js';
import { createCoreMcpProtocol, type CoreMcpProtocol, type StandardHeaders } from './core-mcp-protocol.js';
import type { ExecutionGrant } from './mcp-token-service.js';

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'uhlp-runner', version: '0.1.0' },
};
const HEADERS: StandardHeaders = { protocolVersion: '2026-07-28', method: 'tools/call', name: 'core.kv.get' };
const grant = { appId: 'a' } as ExecutionGrant;

/** What the tool does next; each call is recorded with whether it came the fast way (the signal given to serve). */
let outcome: () => Promise<CallToolResult> = async () => ({ content: [{ type: 'text', text: 'x' }] });
const calls: Array<{ name: string; args: unknown; fast: boolean }> = [];
let served: AbortSignal | undefined;
let protocol: CoreMcpProtocol;

beforeAll(async () => {
  protocol = await createCoreMcpProtocol({
    list: async () => [],
    call: async (_grant, name, args, signal) => {
      calls.push({ name, args, fast: signal === served });
      return outcome();
    },
  });
});

afterAll(async () => {
  await protocol.close();
});

function message(params: Record<string, unknown> = {}, id: unknown = 7, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'core.kv.get', arguments: { key: 'k' }, _meta: ENVELOPE, ...params }, ...extra };
}

async function serve(body: unknown, headers: StandardHeaders = HEADERS): Promise<{ answer: unknown; fast: boolean | undefined; runs: number }> {
  const before = calls.length;
  served = new AbortController().signal;
  const answer = await protocol.serve(JSON.parse(JSON.stringify(body)) as unknown, headers, grant, served);
  return { answer, fast: calls.at(-1)?.fast, runs: calls.length - before };
}

describe('the fast path of tools/call', () => {
  beforeAll(async () => {
    // The first call under an envelope is the SDK's, while the SDK is asked about the envelope.
    await serve(message());
    await waitFor(async () => (await serve(message())).fast === true, { what: 'the fast path to serve the envelope' });
  });

  it.each<[string, () => Promise<CallToolResult>]>([
    ['a text result with structured content', async () => ({ content: [{ type: 'text', text: '{"value":1}' }], structuredContent: { value: 1 } })],
    ['a tool error', async () => ({ content: [{ type: 'text', text: 'refused' }], structuredContent: { code: 'UHLP_CAPABILITY_DENIED' }, isError: true })],
    ['no content', async () => ({ content: [] })],
    ['image content (answered by the SDK)', async () => ({ content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] })],
    ['a result the SDK refuses', async () => ({ content: 'not a list' }) as unknown as CallToolResult],
    ['a result with a resultType of its own', async () => ({ content: [], resultType: 'input_required' }) as unknown as CallToolResult],
    ['a thrown error', async () => Promise.reject(new Error('the tool failed'))],
  ])('answers %s as the SDK does, running the tool once', async (_name, next) => {
    outcome = next;
    const fast = await serve(message());
    expect(fast.fast).toBe(true);
    expect(fast.runs).toBe(1);
    // The same message under a progress token is the SDK's from start to end.
    const sdk = await serve(message({ _meta: { ...ENVELOPE, progressToken: 1 } }));
    expect(sdk.fast).toBe(false);
    expect(sdk.runs).toBe(1);
    expect(fast.answer).toEqual(sdk.answer);
  });

  it('answers with the id the client sent, a string or an integer, and passes the name and arguments as sent', async () => {
    outcome = async () => ({ content: [{ type: 'text', text: 'ok' }] });
    expect(await serve(message({}, 'call-1'))).toMatchObject({ fast: true, answer: { status: 200, body: { id: 'call-1', jsonrpc: '2.0' } } });
    expect(await serve(message({ arguments: { key: 'k', nested: { a: [1] } } }, 0))).toMatchObject({ fast: true, answer: { body: { id: 0 } } });
    expect(calls.at(-1)).toEqual({ name: 'core.kv.get', args: { key: 'k', nested: { a: [1] } }, fast: true });
    const none = message();
    delete (none['params'] as Record<string, unknown>)['arguments'];
    expect((await serve(none)).fast).toBe(true);
    expect(calls.at(-1)!.args).toBeUndefined();
  });

  it.each<[string, Record<string, unknown>, StandardHeaders?]>([
    ['a member besides the four of a request', message({}, 7, { extra: 1 })],
    ['an id that is not an integer', message({}, 1.5)],
    ['arguments that are a list', message({ arguments: [1] })],
    ['a params member of another name', message({ task: {} })],
    ['a _meta key besides the envelope', message({ _meta: { ...ENVELOPE, 'io.modelcontextprotocol/logLevel': 'debug' } })],
    ['an envelope of another revision', message({ _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } })],
    ['no envelope', message({ _meta: undefined })],
    ['an Mcp-Name naming another tool', message(), { ...HEADERS, name: 'core.kv.set' }],
    ['no Mcp-Method header', message(), { protocolVersion: '2026-07-28', name: 'core.kv.get' }],
    ['the 2025 revision', { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'core.kv.get', arguments: { key: 'k' } } }, {}],
  ])('leaves %s to the SDK', async (_name, body, headers) => {
    outcome = async () => ({ content: [{ type: 'text', text: 'ok' }] });
    const served = await serve(body, headers ?? HEADERS);
    // Refused by the SDK or the endpoint (no tool run), or run through the SDK.
    expect(served.runs === 0 || served.fast === false).toBe(true);
  });
});
