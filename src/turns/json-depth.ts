/**
 * How deep the JSON a turn is given may nest. V8 parses JSON of any depth,
 * but nearly everything done with the value afterwards recurses: serializing
 * it (JSON.stringify, canonical JSON for the ledger), cloning it, validating
 * it, rendering it into a prompt, freezing it. A few thousand levels overflow
 * the stack, in the core (a WORKFLOW component answered 500 UHLP_INTERNAL) or
 * in a runner, depending on which part meets the value first. So the depth is
 * bounded once, before any of them: in the turn pipeline, for every source
 * and every handler, where a turn's input is whole (its request data, the
 * payload of a queue message or an internal event inside it, and the body of
 * an HTTP request or a callback that says it is JSON); and at the MCP
 * endpoint, for tool arguments, which no turn carries.
 *
 * The check reads the text once, without parsing it: brackets outside strings.
 */
import type { RequestData } from '../contract/execute-contract.js';
import { isJsonContentType } from '../contract/json-content-type.js';
import { UhlpError } from '../shared/errors.js';

/** Levels a JSON body or payload may nest: far past any real document, far short of a stack overflow. */
export const MAX_JSON_DEPTH = 512;
/**
 * Levels a carrier may add around a body or payload: the request data's own
 * (`{"queueDetails": {"payload": ...}}`, a repeated query parameter's list), or
 * a JSON-RPC request's (`{"params": {"arguments": {"payload": ...}}}`).
 */
export const CARRIER_LEVELS = 4;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_SQUARE = 0x5b;
const OPEN_CURLY = 0x7b;
const CLOSE_SQUARE = 0x5d;
const CLOSE_CURLY = 0x7d;

/**
 * Whether JSON text nests deeper than `limit` arrays and objects. Text that is
 * not JSON gets an answer too (its brackets outside quotes are counted); it is
 * for the parser to refuse it.
 */
export function nestsDeeper(text: string, limit: number): boolean {
  const length = text.length;
  // Each level takes a character at least: most inputs are too short to be read at all.
  if (length <= limit) return false;
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      // A string: skipped to its closing quote, escapes and all.
      for (i++; i < length; i++) {
        const inner = text.charCodeAt(i);
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
    } else if (code === OPEN_SQUARE || code === OPEN_CURLY) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_SQUARE || code === CLOSE_CURLY) depth--;
  }
  return false;
}

/** 400 UHLP_JSON_TOO_DEEP for `field`. */
export function jsonTooDeep(field: string): UhlpError {
  return new UhlpError('UHLP_JSON_TOO_DEEP', `the ${field} is JSON nested deeper than ${MAX_JSON_DEPTH} levels`, { field, maxDepth: MAX_JSON_DEPTH });
}

/**
 * Refuses a turn whose input nests too deep (see the module comment): its
 * request data, with the payloads in it, and a JSON body of an HTTP request or
 * a callback, which the request data carries as text.
 */
export function checkTurnInputDepth(requestDataJson: string): void {
  if (nestsDeeper(requestDataJson, MAX_JSON_DEPTH + CARRIER_LEVELS)) throw jsonTooDeep('payload');
  const body = jsonBodyOf(requestDataJson);
  if (body !== undefined && nestsDeeper(body, MAX_JSON_DEPTH)) throw jsonTooDeep('body');
}

/** The text of the request's body when its content-type says JSON; undefined otherwise. */
function jsonBodyOf(requestDataJson: string): string | undefined {
  // Request data is the core's own canonical JSON, in which a quote inside a string is always escaped: this key is
  // found only where it is a key. Most turns have no JSON body, and are not parsed here at all.
  if (!requestDataJson.includes('"content-type":"')) return undefined;
  const data = JSON.parse(requestDataJson) as RequestData;
  const carrier = data.httpDetails ?? data.callbackDetails;
  if (carrier === undefined || !isJsonContentType(carrier.headers['content-type'])) return undefined;
  return carrier.bodyEncoding === 'base64' ? Buffer.from(carrier.body, 'base64').toString('utf8') : carrier.body;
}
