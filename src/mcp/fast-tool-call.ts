/**
 * The fast path of the one MCP message every sandbox sends on every turn: a
 * `tools/call` of the 2026-07-28 revision, from the runners' own client
 * (src/runners/kit/tools-client.ts). The SDK classifies each POSTed message,
 * parses it with zod, dispatches it through its server and parses the result
 * again; for a message of the exact shape it accepts, under an envelope it was
 * asked about once, all of that comes to the same answer, so the core runs the
 * tool at once and writes that answer itself. What is not of that shape, and
 * every other method, still goes through the SDK (core-mcp-protocol.ts).
 */
import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  classifyInboundRequest,
  type JSONRPCRequest,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server';
import type { ExchangeTransport } from './exchange-transport.js';
import type { StandardHeaders } from './core-mcp-protocol.js';

/** The server's identity, as the SDK stamps it on each result. */
export interface ServerInfo {
  readonly name: string;
  readonly version: string;
}

/** What a tool call the fast path ran came to. */
export type Ran = { readonly result: CallToolResult } | { readonly error: unknown };

/** A tools/call the fast path serves. */
export interface FastToolCall {
  readonly id: string | number;
  readonly name: string;
  readonly args: Record<string, unknown> | undefined;
  readonly message: JSONRPCRequest;
  /** The SDK's classification of the envelope, for an answer the SDK writes. */
  readonly classification: unknown;
}

const ENVELOPE_KEYS = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY]);
const CALL_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const PARAMS_KEYS = new Set(['name', 'arguments', '_meta']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** Own keys all among `allowed`. */
function keysWithin(value: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}

/**
 * The message as a fast tools/call, or undefined for the SDK to serve: the
 * 2026-07-28 headers, exactly the request's four members with an id the SDK
 * accepts, and params of a name (the one Mcp-Name names), arguments as an
 * object or none, and an envelope of the three standard keys only (other
 * `_meta` keys, such as a progress token or request state, change how the SDK
 * serves a request) that the SDK classified as served on this revision.
 */
export function fastToolCall(body: unknown, headers: StandardHeaders, envelopes: EnvelopeVerdicts): FastToolCall | undefined {
  if (headers.protocolVersion !== envelopes.revision || headers.method !== 'tools/call') return undefined;
  if (!isPlainObject(body) || !keysWithin(body, CALL_KEYS) || body['jsonrpc'] !== '2.0' || body['method'] !== 'tools/call') return undefined;
  const id = body['id'];
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  const params = body['params'];
  if (!isPlainObject(params) || !keysWithin(params, PARAMS_KEYS)) return undefined;
  const name = params['name'];
  const args = params['arguments'];
  const meta = params['_meta'];
  if (typeof name !== 'string' || headers.name !== name) return undefined;
  if (args !== undefined && !isPlainObject(args)) return undefined;
  if (!isPlainObject(meta) || !keysWithin(meta, ENVELOPE_KEYS)) return undefined;
  const classification = envelopes.classification(meta);
  if (classification === undefined) return undefined;
  return { id: id as string | number, name, args: args as Record<string, unknown> | undefined, message: body as unknown as JSONRPCRequest, classification };
}

const RESULT_KEYS = new Set(['content', 'structuredContent', 'isError']);
const TEXT_KEYS = new Set(['type', 'text']);

/** A result of text content, structured content and an error flag only: what the core's tools answer. */
export function isPlainToolResult(result: unknown): result is CallToolResult {
  if (!isPlainObject(result) || !keysWithin(result, RESULT_KEYS)) return false;
  const { content, structuredContent, isError } = result;
  if (!Array.isArray(content)) return false;
  for (const item of content) {
    if (!isPlainObject(item) || !keysWithin(item, TEXT_KEYS) || item['type'] !== 'text' || typeof item['text'] !== 'string') return false;
  }
  if (structuredContent !== undefined && !isPlainObject(structuredContent)) return false;
  return isError === undefined || typeof isError === 'boolean';
}

/** A plain result as the SDK answers it on 2026-07-28: `resultType` and the server's identity added. */
export function encodedResult(result: CallToolResult, id: string | number, serverInfo: ServerInfo): Record<string, unknown> {
  return { result: { ...result, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: serverInfo } }, jsonrpc: '2.0', id };
}

/** At most this many envelopes are remembered (a runner sends one, always the same). */
const MAX_ENVELOPES = 32;

/**
 * Which envelopes the fast path may serve, asked of the SDK once per envelope
 * (as JSON): its classification of a tools/call under it must be a 2026-07-28
 * request, and its answer to one (with a plain result the tool is taken to
 * have given) must be the fast path's encoding of that result. Until the SDK
 * has answered, calls under a new envelope go through the SDK.
 */
export class EnvelopeVerdicts {
  private readonly verdicts = new Map<string, unknown>();

  constructor(
    private readonly modern: ExchangeTransport,
    /** The revision served fast (2026-07-28). */
    readonly revision: string,
    private readonly serverInfo: ServerInfo,
  ) {}

  /** The SDK's classification when the envelope is served the fast way; undefined otherwise (or not known yet). */
  classification(meta: Record<string, unknown>): unknown {
    const key = JSON.stringify(meta);
    const verdict = this.verdicts.get(key);
    if (verdict !== undefined) return verdict === null || verdict === 'pending' ? undefined : verdict;
    if (this.verdicts.size >= MAX_ENVELOPES) this.verdicts.delete(this.verdicts.keys().next().value!);
    this.verdicts.set(key, 'pending');
    this.judge(JSON.parse(key) as Record<string, unknown>).then(
      (classification) => this.verdicts.set(key, classification ?? null),
      () => this.verdicts.set(key, null),
    );
    return undefined;
  }

  private async judge(meta: Record<string, unknown>): Promise<unknown> {
    const message = { jsonrpc: '2.0', id: 'probe', method: 'tools/call', params: { name: 'probe', arguments: {}, _meta: meta } };
    const outcome = classifyInboundRequest({ httpMethod: 'POST', protocolVersionHeader: this.revision, mcpMethodHeader: 'tools/call', mcpNameHeader: 'probe', body: message });
    if (outcome.kind !== 'modern' || outcome.messageKind !== 'request' || outcome.classification.revision !== this.revision) return undefined;
    const result: CallToolResult = { content: [{ type: 'text', text: '{"probe":true}' }], structuredContent: { probe: true }, isError: false };
    const ran: Ran = { result };
    const answer = await this.modern.exchange(outcome.message, { authInfo: { token: '', clientId: 'probe', scopes: [], extra: { grant: PROBE_GRANT, ran } }, classification: outcome.classification });
    return JSON.stringify(answer) === JSON.stringify(encodedResult(result, 'probe', this.serverInfo)) ? outcome.classification : undefined;
  }
}

/** The grant of the SDK's probe answers: it reaches no tool (the result is given). */
const PROBE_GRANT = Object.freeze({ appId: 'probe' });

/** The outcome of a call the fast path ran, when the SDK is to answer it. */
export function ranOf(ctx: { http?: { authInfo?: { extra?: Record<string, unknown> } } }): Ran | undefined {
  return ctx.http?.authInfo?.extra?.['ran'] as Ran | undefined;
}

