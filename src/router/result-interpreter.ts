/**
 * Turns a sandbox's validated /execute answer into the HTTP response the client
 * gets: `httpResponse` is proxied exactly, `generic` becomes JSON, `error` becomes
 * the app's own error code with the status it asked for (422 when that is not a
 * 4xx/5xx). A pure function, so the whole mapping is one table-driven test.
 */
import type { ErrorData, ExecuteResponse, HttpResponseData } from '../contract/execute-contract.js';

export interface FinalResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer | string;
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
  'x-request-id',
]);

const JSON_TYPE = 'application/json; charset=utf-8';

export function interpretResult(response: ExecuteResponse, requestId: string): FinalResponse {
  switch (response.resultType) {
    case 'httpResponse':
      return fromHttpResponse(response.data as HttpResponseData);
    case 'error':
      return fromError(response.data as ErrorData, requestId);
    case 'generic':
    case 'workflowStep':
      // A workflow step reached over HTTP is the step's record; the workflow
      // runner decides what the final answer of a whole workflow is.
      return { status: 200, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(response.data ?? null) };
  }
}

function fromHttpResponse(data: HttpResponseData): FinalResponse {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(data.headers ?? {})) {
    if (!HOP_BY_HOP.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
  }
  const raw = data.body ?? '';
  const body = data.bodyEncoding === 'base64' ? Buffer.from(raw, 'base64') : raw;
  return { status: data.statusCode, headers, body };
}

function fromError(data: ErrorData, requestId: string): FinalResponse {
  const status = typeof data.status === 'number' && data.status >= 400 && data.status <= 599 ? data.status : 422;
  const body: Record<string, unknown> = { code: data.code, message: data.message, requestId };
  if (data.details !== undefined) body.details = data.details;
  return { status, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(body) };
}
