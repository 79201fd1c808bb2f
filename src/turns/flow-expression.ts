/**
 * The expressions a flow declaration reads its key and priority with: a root
 * naming a part of the event and a path of plain names under it,
 *
 *   params.<name>            an HTTP route's path parameter
 *   headers.<name>           a request header (matched lower-case)
 *   query.<name>             a query parameter (its first value when repeated)
 *   body.<a>.<b>...          a field of the JSON body, or of a delivery's payload
 *   payload.<a>.<b>...       the same as body
 *
 * and nothing else: no calls, operators, brackets or quotes, so an expression is
 * read by a parser of a few lines and never evaluated. A name is 1 to 64
 * letters, digits, `_` or `-`, never one that names a prototype (`__proto__`,
 * `constructor`, `prototype`), and lookups read own properties only.
 */
import { MAX_FLOW_PRIORITY } from '../state/flow-store.js';

export const FLOW_EXPRESSION_ROOTS = ['params', 'headers', 'query', 'body', 'payload'] as const;
export type FlowExpressionRoot = (typeof FLOW_EXPRESSION_ROOTS)[number];

/** The longest expression text. */
export const MAX_FLOW_EXPRESSION_CHARS = 256;
/** The most names under the root. */
export const MAX_FLOW_EXPRESSION_DEPTH = 8;
/** Key values longer than this are replaced by a digest-like tail, so a key name stays bounded. */
export const MAX_FLOW_KEY_CHARS = 200;

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const FORBIDDEN_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

export interface FlowExpression {
  readonly text: string;
  readonly root: FlowExpressionRoot;
  readonly path: readonly string[];
}

/** Why an expression was refused (thrown by parseFlowExpression). */
export class FlowExpressionError extends Error {
  override readonly name = 'FlowExpressionError';
}

export function parseFlowExpression(text: string): FlowExpression {
  if (text.length === 0) throw new FlowExpressionError('an empty expression');
  if (text.length > MAX_FLOW_EXPRESSION_CHARS) throw new FlowExpressionError(`longer than ${MAX_FLOW_EXPRESSION_CHARS} characters`);
  const [root, ...path] = text.split('.');
  if (!(FLOW_EXPRESSION_ROOTS as readonly string[]).includes(root!)) {
    throw new FlowExpressionError(`"${clip(text)}" must start with one of ${FLOW_EXPRESSION_ROOTS.join(', ')} and a dot`);
  }
  if (path.length === 0) throw new FlowExpressionError(`"${clip(text)}" names no field under ${root}`);
  if (path.length > MAX_FLOW_EXPRESSION_DEPTH) throw new FlowExpressionError(`"${clip(text)}" goes deeper than ${MAX_FLOW_EXPRESSION_DEPTH} names`);
  for (const name of path) {
    if (!NAME.test(name)) throw new FlowExpressionError(`"${clip(text)}": "${clip(name)}" is not a name (1 to 64 letters, digits, _ or -)`);
    if (FORBIDDEN_NAMES.has(name)) throw new FlowExpressionError(`"${clip(text)}": "${name}" is not allowed`);
  }
  return { text, root: root as FlowExpressionRoot, path: root === 'headers' ? path.map((n) => n.toLowerCase()) : path };
}

/** The parts of an event an expression reads. */
export interface FlowEventView {
  readonly params?: unknown;
  readonly headers?: unknown;
  readonly query?: unknown;
  /** The JSON body of an HTTP request, or a delivery's payload. */
  readonly body?: unknown;
}

/** The value at the expression's path, or undefined when any step is missing or not an object. */
export function readFlowExpression(expression: FlowExpression, event: FlowEventView): unknown {
  let value: unknown = expression.root === 'payload' ? event.body : event[expression.root];
  for (const name of expression.path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  // A repeated query parameter: its first value.
  if (expression.root === 'query' && Array.isArray(value)) return value[0];
  return value;
}

/**
 * The key an expression gives an event: a string, number or boolean as text;
 * anything else (missing, an object) is the empty key, which every such event
 * shares.
 */
export function flowKeyOf(expression: FlowExpression | undefined, event: FlowEventView): string {
  if (expression === undefined) return '';
  const value = readFlowExpression(expression, event);
  const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
  return text.length <= MAX_FLOW_KEY_CHARS ? text : `${text.slice(0, MAX_FLOW_KEY_CHARS - 17)}~${fnv64(text)}`;
}

/** The priority an expression gives an event: its number (or numeric text), rounded and bounded; 0 otherwise. */
export function flowPriorityOf(expression: FlowExpression | undefined, event: FlowEventView): number {
  if (expression === undefined) return 0;
  const value = readFlowExpression(expression, event);
  const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(number)) return 0;
  return Math.max(-MAX_FLOW_PRIORITY, Math.min(MAX_FLOW_PRIORITY, Math.round(number)));
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** FNV-1a 64-bit as 16 hex digits: a long key's tail, so two long keys sharing a head stay apart. */
function fnv64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0');
}
