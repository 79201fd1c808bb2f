/**
 * The endpoint spine's messages (docs/endpoint-spine.md). Field names on the
 * wire are snake_case as in the body-endpoints document; the TypeScript API
 * around them is camelCase. Parsing is strict about what it needs and ignores
 * unknown fields, so that a newer host can talk to an older core.
 */

/** `applied` when the endpoint did the action; `rejected` with a reason when it did not. */
export type EndpointOutcomeKind = 'applied' | 'rejected';

/** What an endpoint handler answers for one invocation. */
export interface EndpointOutcome {
  readonly outcome: EndpointOutcomeKind;
  /** Short machine-readable reason, present on `rejected` (`timeout`, `non_zero_exit`, ...). */
  readonly reason?: string;
  /** Identifier of the applied action, for evidence and logs. */
  readonly referenceId?: string;
  /** Endpoint-specific JSON detail (exit code and output, HTTP status and body, ...). */
  readonly observation?: unknown;
}

/** An outcome as the core receives it, tied to its invocation. */
export interface EndpointResult extends EndpointOutcome {
  readonly invocationId: string;
}

export interface RegisterMessage {
  readonly type: 'endpoint_register';
  readonly affordance_key: string;
  readonly capability_handle: string;
  /** The core's secret (spine-secret.ts); required for protected routes only. */
  readonly secret?: string;
}

export interface RegisteredMessage {
  readonly type: 'endpoint_registered';
  readonly affordance_key: string;
  readonly capability_handle: string;
}

export interface InvokeMessage {
  readonly type: 'endpoint_invoke';
  readonly invocation_id: string;
  readonly affordance_key: string;
  readonly capability_handle: string;
  readonly action: { readonly normalized_payload: unknown };
}

export interface ResultMessage {
  readonly type: 'endpoint_result';
  readonly invocation_id: string;
  readonly outcome: EndpointOutcomeKind;
  readonly reason?: string;
  readonly reference_id?: string;
  readonly observation?: unknown;
}

export interface ExitMessage {
  readonly type: 'exit';
  /** The core's secret; an exit without it is refused. */
  readonly secret?: string;
}

export interface ErrorMessage {
  readonly type: 'error';
  readonly code: string;
  readonly message: string;
  /** The invocation the error is about, when there is one. */
  readonly invocation_id?: string;
  /** The route a refused registration named. */
  readonly affordance_key?: string;
  readonly capability_handle?: string;
}

/** Messages an endpoint host (or the lifecycle CLI) sends to the core. */
export type ToCoreMessage = RegisterMessage | ResultMessage | ExitMessage;
/** Messages the core sends to an endpoint host. */
export type ToHostMessage = RegisteredMessage | InvokeMessage | ErrorMessage;

/** A parse failure: the message to answer with, and the field at fault. */
export interface ParseFailure {
  readonly ok: false;
  readonly message: string;
  readonly field?: string;
  readonly invocationId?: string;
}

export type ParseResult<T> = { readonly ok: true; readonly message: T } | ParseFailure;

/** Longest affordance key or capability handle accepted; they are identifiers, not data. */
const MAX_KEY_LENGTH = 256;
/** Longest secret accepted; the core issues 64 characters. */
const MAX_SECRET_LENGTH = 1024;

/** The key a route is registered and looked up under. */
export function routeKey(affordanceKey: string, capabilityHandle: string): string {
  return `${affordanceKey}/${capabilityHandle}`;
}

export function parseToCoreMessage(line: string): ParseResult<ToCoreMessage> {
  const object = parseObject(line);
  if (!object.ok) return object;
  const value = object.message;
  switch (value['type']) {
    case 'endpoint_register': {
      const keys = readRouteKeys(value);
      if (!keys.ok) return keys;
      const secret = readSecret(value);
      if (!secret.ok) return secret;
      return { ok: true, message: { type: 'endpoint_register', ...keys.message, ...secret.message } };
    }
    case 'endpoint_result':
      return parseResult(value);
    case 'exit': {
      const secret = readSecret(value);
      if (!secret.ok) return secret;
      return { ok: true, message: { type: 'exit', ...secret.message } };
    }
    default:
      return unknownType(value['type']);
  }
}

export function parseToHostMessage(line: string): ParseResult<ToHostMessage> {
  const object = parseObject(line);
  if (!object.ok) return object;
  const value = object.message;
  switch (value['type']) {
    case 'endpoint_registered': {
      const keys = readRouteKeys(value);
      if (!keys.ok) return keys;
      return { ok: true, message: { type: 'endpoint_registered', ...keys.message } };
    }
    case 'endpoint_invoke': {
      const id = value['invocation_id'];
      if (!isId(id)) return fail('invocation_id must be a non-empty string', 'invocation_id');
      const keys = readRouteKeys(value);
      if (!keys.ok) return { ...keys, invocationId: id };
      const action = value['action'];
      if (!isPlainObject(action) || !('normalized_payload' in action)) {
        return { ...fail('action must be an object with normalized_payload', 'action'), invocationId: id };
      }
      return {
        ok: true,
        message: { type: 'endpoint_invoke', invocation_id: id, ...keys.message, action: { normalized_payload: action['normalized_payload'] } },
      };
    }
    case 'error': {
      const code = value['code'];
      const message = value['message'];
      if (typeof code !== 'string' || typeof message !== 'string') return fail('error needs string code and message', 'code');
      const id = value['invocation_id'];
      const affordanceKey = value['affordance_key'];
      const capabilityHandle = value['capability_handle'];
      return {
        ok: true,
        message: {
          type: 'error',
          code,
          message,
          ...(isId(id) ? { invocation_id: id } : {}),
          ...(isKey(affordanceKey) ? { affordance_key: affordanceKey } : {}),
          ...(isKey(capabilityHandle) ? { capability_handle: capabilityHandle } : {}),
        },
      };
    }
    default:
      return unknownType(value['type']);
  }
}

export function resultToWire(invocationId: string, outcome: EndpointOutcome): ResultMessage {
  return {
    type: 'endpoint_result',
    invocation_id: invocationId,
    outcome: outcome.outcome,
    ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}),
    ...(outcome.referenceId !== undefined ? { reference_id: outcome.referenceId } : {}),
    ...(outcome.observation !== undefined ? { observation: outcome.observation } : {}),
  };
}

export function resultFromWire(message: ResultMessage): EndpointResult {
  return {
    invocationId: message.invocation_id,
    outcome: message.outcome,
    ...(message.reason !== undefined ? { reason: message.reason } : {}),
    ...(message.reference_id !== undefined ? { referenceId: message.reference_id } : {}),
    ...(message.observation !== undefined ? { observation: message.observation } : {}),
  };
}

function parseResult(value: Record<string, unknown>): ParseResult<ResultMessage> {
  const id = value['invocation_id'];
  if (!isId(id)) return fail('invocation_id must be a non-empty string', 'invocation_id');
  const outcome = value['outcome'];
  if (outcome !== 'applied' && outcome !== 'rejected') {
    return { ...fail('outcome must be "applied" or "rejected"', 'outcome'), invocationId: id };
  }
  const reason = value['reason'];
  if (reason !== undefined && typeof reason !== 'string') return { ...fail('reason must be a string', 'reason'), invocationId: id };
  if (outcome === 'rejected' && (reason === undefined || reason === '')) {
    return { ...fail('a rejected result needs a reason', 'reason'), invocationId: id };
  }
  const referenceId = value['reference_id'];
  if (referenceId !== undefined && typeof referenceId !== 'string') {
    return { ...fail('reference_id must be a string', 'reference_id'), invocationId: id };
  }
  return {
    ok: true,
    message: {
      type: 'endpoint_result',
      invocation_id: id,
      outcome,
      ...(reason !== undefined ? { reason } : {}),
      ...(referenceId !== undefined ? { reference_id: referenceId } : {}),
      ...(value['observation'] !== undefined ? { observation: value['observation'] } : {}),
    },
  };
}

function parseObject(line: string): ParseResult<Record<string, unknown>> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return fail('line is not valid JSON');
  }
  if (!isPlainObject(value)) return fail('message must be a JSON object');
  if (typeof value['type'] !== 'string') return fail('message needs a string "type"', 'type');
  return { ok: true, message: value };
}

function readRouteKeys(value: Record<string, unknown>): ParseResult<{ affordance_key: string; capability_handle: string }> {
  const affordanceKey = value['affordance_key'];
  const capabilityHandle = value['capability_handle'];
  if (!isKey(affordanceKey)) return fail(`affordance_key must be a string of 1-${MAX_KEY_LENGTH} characters without "/"`, 'affordance_key');
  if (!isKey(capabilityHandle)) {
    return fail(`capability_handle must be a string of 1-${MAX_KEY_LENGTH} characters without "/"`, 'capability_handle');
  }
  return { ok: true, message: { affordance_key: affordanceKey, capability_handle: capabilityHandle } };
}

/** An optional `secret`: absent, or a non-empty string of at most MAX_SECRET_LENGTH characters. */
function readSecret(value: Record<string, unknown>): ParseResult<{ secret?: string }> {
  const secret = value['secret'];
  if (secret === undefined) return { ok: true, message: {} };
  if (typeof secret !== 'string' || secret.length === 0 || secret.length > MAX_SECRET_LENGTH) {
    return fail(`secret must be a string of 1-${MAX_SECRET_LENGTH} characters`, 'secret');
  }
  return { ok: true, message: { secret } };
}

function unknownType(type: unknown): ParseFailure {
  return fail(`unknown message type ${JSON.stringify(type)}`, 'type');
}

function fail(message: string, field?: string): ParseFailure {
  return field === undefined ? { ok: false, message } : { ok: false, message, field };
}

// "/" joins the two halves of a route key, so it may not appear inside either.
function isKey(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_KEY_LENGTH && !value.includes('/');
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_KEY_LENGTH;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
