/**
 * The code that runs first in every cs-js isolate, before the bundle's module:
 * it defines the one host object `cs` and the `run` entry the invoker calls.
 *
 * Only strings cross the isolate boundary. Whatever the handler passes to `cs`
 * or returns is turned into JSON text here, inside the isolate, with the
 * JSON functions captured before any bundle code ran, and the result checked
 * to be a primitive string; the host never copies an object the bundle built
 * (copying one while its getters or proxies can run is how isolate escapes
 * through the copy machinery have worked), and the transfer options are
 * prototype-less objects the bundle cannot reach. The host callbacks live only in
 * this closure: bundle code cannot reach them, nor replace what `cs` calls.
 */

/**
 * Source of the bootstrap closure, run with `context.evalClosure`: `$0` is a
 * Reference to the host call (`(op, json) => Promise<json>`), `$1` the log sink
 * (synchronous: `(level, text) => void`, the line recorded when it returns). It answers an object with `install`
 * (takes the handler, once), `start` (eventJson, ctxJson), `collect` (the
 * result text when the activation is done) and `wait` (a promise of it).
 */
export const ISOLATE_BOOTSTRAP = String.raw`'use strict';
const hostCall = $0;
const hostLog = $1;
const stringify = JSON.stringify;
const parse = JSON.parse;
const freeze = Object.freeze;
const defineProperty = Object.defineProperty;
const ErrorCtor = Error;
const StringCtor = String;
const PromiseCtor = Promise;
const promiseThen = Promise.prototype.then;
const reflectApply = Reflect.apply;
const MAX_LOG_CHARS = 16384;
const MAX_STACK_CHARS = 65536;
// isolated-vm reads these options with ordinary property lookups, so an
// options literal would inherit whatever the bundle put on Object.prototype
// (arguments: { reference: true } turns the strings into References). Frozen,
// with no prototype, and made before any bundle code runs.
const CALL_OPTIONS = freeze({
  __proto__: null,
  arguments: freeze({ __proto__: null }),
  result: freeze({ __proto__: null, promise: true, copy: true }),
});
let handler;
let current;

function json(value, what) {
  let text;
  try {
    text = stringify(value === undefined ? null : value);
  } catch (error) {
    throw failure('UHLP_CS_INVALID_ARGUMENT', what + ' is not JSON-serializable');
  }
  if (typeof text !== 'string') throw failure('UHLP_CS_INVALID_ARGUMENT', what + ' is not JSON-serializable');
  return text;
}

function failure(code, message, details, status) {
  const error = new ErrorCtor(message);
  error.code = code;
  if (status !== undefined) error.status = status;
  if (details !== undefined) error.details = details;
  return error;
}

async function call(op, args) {
  const reply = await hostCall.apply(undefined, [op, json(args, 'the arguments')], CALL_OPTIONS);
  if (typeof reply !== 'string') throw failure('UHLP_INTERNAL', 'the host answered no text');
  const answer = parse(reply);
  if (answer.ok === true) return answer.value;
  throw failure(answer.code, answer.message, answer.details, answer.status);
}

function log(level) {
  return (value) => {
    let text;
    if (typeof value === 'string') text = value;
    else {
      try {
        text = stringify(value);
      } catch (error) {
        text = undefined;
      }
      if (typeof text !== 'string') text = '[unserializable ' + typeof value + ']';
    }
    if (text.length > MAX_LOG_CHARS) text = text.slice(0, MAX_LOG_CHARS) + '…';
    hostLog(level, text);
  };
}

const cs = freeze({
  log: freeze({ info: log('info'), warn: log('warn'), error: log('error') }),
  kv: freeze({
    get: (key) => call('kv.get', { key }),
    set: (key, value, options) => call('kv.set', { key, value, ttlSeconds: options == null ? undefined : options.ttlSeconds }),
    del: (key) => call('kv.del', { key }),
  }),
  codeq: freeze({ publish: (topic, payload) => call('codeq.publish', { topic, payload }) }),
  http: freeze({
    fetch: (url, init) => {
      const options = init == null ? {} : init;
      return call('http.fetch', { url, method: options.method, headers: options.headers, body: options.body, timeoutMs: options.timeoutMs });
    },
  }),
});
defineProperty(globalThis, 'cs', { value: cs, writable: false, enumerable: false, configurable: false });

function describeThrown(thrown) {
  const out = { message: 'the handler threw' };
  try {
    if (typeof thrown === 'object' && thrown !== null) {
      const message = thrown.message;
      out.message = typeof message === 'string' ? message : StringCtor(thrown);
      if (typeof thrown.code === 'string' && thrown.code.length > 0) out.code = thrown.code;
      const status = thrown.status !== undefined ? thrown.status : thrown.statusCode;
      if (typeof status === 'number') out.status = status;
      if (thrown.details !== undefined) out.details = parse(json(thrown.details, 'details'));
      // Where it was thrown, for the host to keep the bundle's own frames of (cs-result.ts); only a string, and only its start.
      const stack = thrown.stack;
      if (typeof stack === 'string') out.stack = stack.slice(0, MAX_STACK_CHARS);
    } else {
      out.message = 'the handler threw ' + (typeof thrown === 'string' ? stringify(thrown) : StringCtor(thrown));
    }
  } catch (error) {
    // A throwing getter or toString: keep what was read.
  }
  return out;
}

async function run(eventJson, ctxJson) {
  if (typeof handler !== 'function') return stringify({ thrown: { code: 'UHLP_FUNCTION_NOT_FOUND', message: 'the handler is not installed' } });
  let value;
  try {
    value = await handler(parse(eventJson), parse(ctxJson));
  } catch (thrown) {
    return stringify({ thrown: describeThrown(thrown) });
  }
  let text;
  try {
    text = stringify({ value: value === undefined ? null : value });
  } catch (error) {
    text = undefined;
  }
  return typeof text === 'string' ? text : stringify({ unserializable: true });
}

// One activation at a time per isolate. The invoker calls start, then
// collect: a handler that settles without waiting on the host (no cs call
// pending) is done by then, with no thread hop. Otherwise it awaits wait(),
// whose promise settles with the same text. The intrinsic then is used: the
// bundle may have replaced Promise.prototype.then.
function start(eventJson, ctxJson) {
  const activation = { done: false, text: undefined, resolve: undefined };
  current = activation;
  reflectApply(promiseThen, run(eventJson, ctxJson), [
    (text) => {
      activation.done = true;
      activation.text = text;
      if (activation.resolve !== undefined) activation.resolve(text);
    },
  ]);
}

function collect() {
  const activation = current;
  return activation !== undefined && activation.done ? activation.text : undefined;
}

function wait() {
  const activation = current;
  if (activation.done) return activation.text;
  return new PromiseCtor((resolve) => {
    activation.resolve = resolve;
  });
}

return freeze({
  install(fn) {
    if (handler !== undefined) throw new ErrorCtor('the handler is installed once');
    handler = fn;
  },
  start,
  collect,
  wait,
});
`;
