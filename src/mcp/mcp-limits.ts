/**
 * How large a request the core's MCP endpoint reads. It is not the ingress
 * limit (UHLP_BODY_LIMIT_BYTES, for what clients send to apps): it is sized for
 * what the endpoint's tools accept, so that every argument a tool would take
 * reaches the tool, and every argument it would refuse is refused by the tool
 * with its own documented answer (a queue payload over 1 MiB: `413
 * UHLP_BODY_TOO_LARGE`; a checkpoint over the run cap: the run fails with
 * `UHLP_WORKFLOW_STATE_TOO_LARGE`), never cut off by the HTTP layer first.
 *
 * - The largest single value a tool keeps is 1 MiB of JSON (a queue, trigger
 *   or codeq payload, a kv value, a cs-js bundle's function.js), or a run
 *   record's worth for the workflow tools (UHLP_RUN_MAX_BYTES, 1 MiB by
 *   default): a checkpoint's state and steps end up in the record.
 * - A request may carry two of them: `core.component.invoke` carries the
 *   checkpoint of the nodes before it and the step's input, taken from the
 *   same blackboard; a run's last checkpoint carries its state and its result.
 * - Around them: the JSON-RPC envelope, the stream packets a checkpoint
 *   carries (at most 64 KiB of a JIT node's result each), JSON escapes.
 *
 * So at the defaults the endpoint reads 3 MiB. A larger body is read to its
 * end and dropped, then answered `413 UHLP_BODY_TOO_LARGE` (mcp-body.ts).
 */
import { MAX_PAYLOAD_BYTES } from '../sources/delivery-sources.js';
import { MAX_KV_VALUE_BYTES } from './tools/kv-tools.js';

/** Room for the envelope, a checkpoint's stream packets and escapes, bytes. */
const ENVELOPE_BYTES = 1024 * 1024;

/** The MCP endpoint's body limit for a core whose run cap is `runMaxBytes` (UHLP_RUN_MAX_BYTES). */
export function mcpBodyLimitBytes(runMaxBytes: number): number {
  return 2 * Math.max(runMaxBytes, MAX_PAYLOAD_BYTES, MAX_KV_VALUE_BYTES) + ENVELOPE_BYTES;
}
