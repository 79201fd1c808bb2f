/**
 * The prompt header (seed 001, FR-RT-005), prepended to the user message of a
 * component with `header: true`: what the turn is, what it was given, what it
 * must produce, and as of when.
 *
 * ```text
 * [uhlp prompt header]
 * session_id: "SES-..."
 * turn_number: 3
 * declared_inputs:
 *   - name: "body"
 *     hash: "sha256:..."
 * declared_outputs:
 *   - path: "output/report.md"
 *     role: "report"
 * context_as_of: "2026-11-22T21:57:08.000Z"
 * work_order_id: "WO-7"
 * [end of prompt header]
 * ```
 *
 * The declared inputs are what the request gave the turn, each with the sha256
 * a client can compute itself: `body` (the body's bytes as received, for HTTP
 * requests and callbacks; the canonical JSON of the payload for queue messages
 * and triggers), `query` and `params` (canonical JSON of the query and path
 * parameters, HTTP only). Cron and internal events declare none. The declared
 * outputs are the turn's (`taskDetails.declaredOutputs`). `work_order_id` is
 * the request's `X-UHLP-Work-Order` header, when it has one. Values are JSON
 * strings: a header value cannot break a line of the block. The block makes
 * every prompt different (session, time), so the answer cache never hits for
 * a component that has it.
 */
import { createHash } from 'node:crypto';
import type { ExecuteRequest } from '../../contract/execute-contract.js';
import { canonicalJson } from '../../shared/canonical-json.js';
import { bodyBytes } from '../../contract/template-variables.js';

export const WORK_ORDER_HEADER = 'x-uhlp-work-order';

export interface DeclaredInput {
  readonly name: string;
  /** `sha256:<hex>`. */
  readonly hash: string;
}

/** The inputs a request declares to the turn, with their hashes (see above). */
export function declaredInputs(request: ExecuteRequest): DeclaredInput[] {
  const data = request.requestData;
  const inputs: DeclaredInput[] = [];
  const add = (name: string, bytes: Buffer | string): void => void inputs.push({ name, hash: `sha256:${createHash('sha256').update(bytes).digest('hex')}` });
  if (data.httpDetails) {
    add('body', bodyBytes(data.httpDetails));
    add('query', canonicalJson(data.httpDetails.queryParameters));
    add('params', canonicalJson(data.httpDetails.pathParameters ?? {}));
  } else if (data.callbackDetails) {
    add('body', bodyBytes(data.callbackDetails));
  } else if (data.queueDetails || data.triggerDetails) {
    add('body', canonicalJson((data.queueDetails ?? data.triggerDetails)!.payload ?? null));
  }
  return inputs;
}

/** The header block, ending with a line break. `now` is context_as_of. */
export function promptHeader(request: ExecuteRequest, now: Date): string {
  const { context } = request;
  const quote = (value: string): string => JSON.stringify(value);
  const lines = ['[uhlp prompt header]'];
  lines.push(`session_id: ${context.sessionId !== undefined ? quote(context.sessionId) : 'null'}`);
  lines.push(`turn_number: ${context.turnNumber ?? 'null'}`);
  const inputs = declaredInputs(request);
  lines.push(`declared_inputs:${inputs.length === 0 ? ' []' : ''}`);
  for (const input of inputs) lines.push(`  - name: ${quote(input.name)}`, `    hash: ${quote(input.hash)}`);
  const outputs = context.taskDetails?.declaredOutputs ?? [];
  lines.push(`declared_outputs:${outputs.length === 0 ? ' []' : ''}`);
  for (const output of outputs) lines.push(`  - path: ${quote(output.path)}`, `    role: ${quote(output.role)}`);
  lines.push(`context_as_of: ${quote(now.toISOString())}`);
  const workOrder = headerValue(request, WORK_ORDER_HEADER);
  if (workOrder !== undefined) lines.push(`work_order_id: ${quote(workOrder)}`);
  lines.push('[end of prompt header]');
  return `${lines.join('\n')}\n`;
}

function headerValue(request: ExecuteRequest, name: string): string | undefined {
  const headers = request.requestData.httpDetails?.headers ?? request.requestData.callbackDetails?.headers;
  if (!headers) return undefined;
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name);
  return key === undefined ? undefined : headers[key];
}
