/**
 * Turns a sandbox's validated /execute answer into the HTTP response the client
 * gets: `httpResponse` is proxied exactly (but for hop-by-hop headers and the
 * core's own `x-uhlp-*`), `generic` becomes JSON, `error` becomes
 * the app's own error code with the status it asked for (422 when that is not a
 * 4xx/5xx) and never the script's stack (but in dev with UHLP_DEV_ERROR_STACKS), with a `Retry-After` header when its details say when to retry
 * (`retryAfterSeconds`, as core.llm.generate's budget refusal gives it). A pure
 * function, so the whole mapping is one table-driven test. An
 * httpResponse that cannot be sent as it is (an interim status, a header that
 * could end a line) breaks the contract: UHLP_SANDBOX_BAD_RESPONSE.
 */
import type { ErrorData, ExecuteResponse, HttpResponseData } from '../contract/execute-contract.js';
import { UhlpError } from '../shared/errors.js';
import { boundStack, MAX_ERROR_MESSAGE_CHARS, neutralText } from '../contract/error-stack.js';
import { isHeaderName, isHeaderValue } from '../shared/http1/response-head.js';

export interface FinalResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer | string;
  /** The sandbox's result as it came, when the turn asked to keep it (a workflow step reads it). */
  result?: { readonly resultType: ExecuteResponse['resultType']; readonly data: unknown };
  /**
   * For operators, never sent: an `error` result's code, message and (for a script
   * exception) where it was thrown, bounded again here (the sandbox is not trusted).
   * The turn logs it; a delivery that fails keeps it in its dead letter.
   */
  failure?: TurnFailure;
}

export interface TurnFailure {
  readonly code: string;
  readonly message: string;
  /** The script's frames (contract/error-stack.ts); absent when the runner sent none. */
  readonly stack?: string;
}

export interface InterpretOptions {
  /**
   * Puts a script exception's stack in the client's error body, as `details.stack`
   * (UHLP_DEV_ERROR_STACKS, dev mode only). @defaultValue false: clients never see a stack
   */
  readonly exposeStack?: boolean;
}

/**
 * Headers that describe one hop or the framing of the sandbox's own answer; the
 * core's HTTP server sets them for the client connection itself.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'date',
  'x-request-id',
]);

/**
 * The core's own headers (`x-uhlp-session-id`, `x-uhlp-turn`, `x-uhlp-run-id`,
 * ...): only the core says which session, turn or run an answer belongs to, so a
 * sandbox's are dropped, whatever the turn. The core adds its own afterwards.
 */
const CORE_HEADER_PREFIX = 'x-uhlp-';

export const JSON_TYPE = 'application/json; charset=utf-8';

export function interpretResult(response: ExecuteResponse, requestId: string, options: InterpretOptions = {}): FinalResponse {
  switch (response.resultType) {
    case 'httpResponse':
      return fromHttpResponse(response.data as HttpResponseData);
    case 'error':
      return fromError(response.data as ErrorData, requestId, options);
    case 'generic':
    case 'workflowStep':
      // A workflow step reached over HTTP is the step's record; the workflow
      // runner decides what the final answer of a whole workflow is.
      return { status: 200, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(response.data ?? null) };
  }
}

function fromHttpResponse(data: HttpResponseData): FinalResponse {
  // 1xx answers are interim: a component's answer is the final one.
  if (data.statusCode < 200) throw badResponse(`/data/statusCode: ${data.statusCode} is not a final status`);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(data.headers ?? {})) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || lower.startsWith(CORE_HEADER_PREFIX)) continue;
    if (!isHeaderName(name)) throw badResponse(`/data/headers: "${name}" is not a header name`);
    if (typeof value === 'string' ? !isHeaderValue(value) : !value.every(isHeaderValue)) {
      throw badResponse(`/data/headers/${name}: the value has a line break or control character`);
    }
    headers[lower] = value;
  }
  const raw = data.body ?? '';
  const body = data.bodyEncoding === 'base64' ? Buffer.from(raw, 'base64') : raw;
  return { status: data.statusCode, headers, body };
}

function fromError(data: ErrorData, requestId: string, options: InterpretOptions): FinalResponse {
  const status = typeof data.status === 'number' && data.status >= 400 && data.status <= 599 ? data.status : 422;
  // The stack stays with the core: the client's body is code, message, request id and the app's details.
  const body: Record<string, unknown> = { code: data.code, message: data.message, requestId };
  if (data.details !== undefined) body.details = data.details;
  const stack = boundStack(data.stack);
  if (options.exposeStack === true && stack !== undefined && (data.details === undefined || isPlainObject(data.details))) {
    body.details = { ...(data.details as Record<string, unknown> | undefined), stack };
  }
  const headers: Record<string, string> = { 'content-type': JSON_TYPE };
  const retryAfter = retryAfterSeconds(data.details);
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  const failure: TurnFailure = { code: neutralText(data.code, 128), message: neutralText(data.message, MAX_ERROR_MESSAGE_CHARS), ...(stack !== undefined ? { stack } : {}) };
  return { status, headers, body: JSON.stringify(body), failure };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whole seconds from `details.retryAfterSeconds` (rounded up: never earlier than asked), when it is a number >= 0. */
function retryAfterSeconds(details: unknown): number | undefined {
  if (typeof details !== 'object' || details === null) return undefined;
  const seconds = (details as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) return undefined;
  return Math.ceil(seconds);
}

function badResponse(violation: string): UhlpError {
  return new UhlpError('UHLP_SANDBOX_BAD_RESPONSE', `the sandbox answer breaks the /execute contract: ${violation}`);
}
