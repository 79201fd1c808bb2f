/**
 * The `cs` host API as the invoker serves it: every call a bundle makes is
 * checked here against the manifest's capabilities (kv prefixes and ops, codeq
 * topic patterns, http hosts and the timeout cap) and only then handed to a
 * backend. Two backends exist: in a runner, the core's MCP tools (which check
 * the app's capabilities again, and the SSRF guard's address rules); in
 * `uhlp fn run`, an in-memory or Redis kv and the guarded fetch directly. Both
 * sit behind this one guard, so a bundle is refused the same way on a laptop
 * and in the cluster.
 */
import { UhlpError } from '../../shared/errors.js';
import { bareHost, hostMatches } from '../../shared/host-pattern.js';
import { topicMatches, type FunctionManifest } from '../../contract/cs-bundle/function-manifest.js';

export type KvOp = 'get' | 'set' | 'del';

/** A fetch as `cs.http.fetch` asks for it, after the guard. */
export interface CsFetchRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Already capped by the manifest's `http.timeoutMs`. */
  readonly timeoutMs: number;
  /** The manifest's host allowlist, applied again to every redirect by backends that follow them. */
  readonly allowHosts: readonly string[];
}

/** What `cs.http.fetch` answers (the runtime document's shape). */
export interface CsFetchResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The body, base64. */
  readonly body: string;
  readonly isBase64Encoded: true;
}

/** Where checked calls go. Every method may throw a UhlpError, which the bundle sees as `{code, message}`. */
export interface CsBackend {
  kvGet(key: string): Promise<unknown>;
  kvSet(key: string, value: unknown, ttlSeconds: number | undefined): Promise<void>;
  kvDel(key: string): Promise<boolean>;
  publish(topic: string, payload: unknown): Promise<{ messageId?: string }>;
  fetch(request: CsFetchRequest): Promise<CsFetchResponse>;
}

export interface CsLogLine {
  readonly level: 'info' | 'warn' | 'error';
  /** Epoch ms. */
  readonly ts: number;
  /** The value as JSON text, or the string as given. */
  readonly msg: string;
}

const KEY_MAX = 512;
const TOPIC = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** One `cs` call: the operation and its JSON arguments as the isolate sent them. */
export async function dispatchCsCall(manifest: FunctionManifest, backend: CsBackend, op: string, args: Record<string, unknown>): Promise<unknown> {
  switch (op) {
    case 'kv.get':
      return backend.kvGet(checkKv(manifest, 'get', args['key']));
    case 'kv.set': {
      const key = checkKv(manifest, 'set', args['key']);
      const ttl = args['ttlSeconds'];
      if (ttl !== undefined && ttl !== null && (!Number.isInteger(ttl) || (ttl as number) < 1 || (ttl as number) > 31_536_000)) {
        throw invalidArgument('ttlSeconds must be an integer from 1 to 31536000', 'ttlSeconds');
      }
      await backend.kvSet(key, args['value'] ?? null, (ttl ?? undefined) as number | undefined);
      return { ok: true };
    }
    case 'kv.del':
      return { deleted: await backend.kvDel(checkKv(manifest, 'del', args['key'])) };
    case 'codeq.publish':
      return backend.publish(checkTopic(manifest, args['topic']), args['payload'] ?? null);
    case 'http.fetch':
      return backend.fetch(checkFetch(manifest, args));
    default:
      throw invalidArgument(`unknown host call ${op.slice(0, 40)}`, 'op');
  }
}

export function checkKv(manifest: FunctionManifest, op: KvOp, key: unknown): string {
  const kv = manifest.capabilities.kv;
  if (kv === undefined) throw denied('kv', 'absent', 'the manifest grants no kv capability', { op });
  if (typeof key !== 'string' || key === '' || key.length > KEY_MAX) throw invalidArgument(`key must be a string of 1-${KEY_MAX} characters`, 'key');
  if (!kv.ops.includes(op)) throw denied('kv', 'ops', `kv operation ${op} is not in the manifest's kv.ops`, { op });
  if (!kv.prefixes.some((prefix) => key.startsWith(prefix))) {
    throw denied('kv', 'prefixes', `key "${key.slice(0, 64)}" is outside the manifest's kv.prefixes`, { op, prefixes: kv.prefixes });
  }
  return key;
}

export function checkTopic(manifest: FunctionManifest, topic: unknown): string {
  const codeq = manifest.capabilities.codeq;
  if (codeq === undefined) throw denied('codeq', 'absent', 'the manifest grants no codeq capability');
  if (typeof topic !== 'string' || !TOPIC.test(topic)) throw invalidArgument('topic must be 1-200 letters, digits or ._:- characters', 'topic');
  if (!codeq.publishTopics.some((pattern) => topicMatches(topic, pattern))) {
    throw denied('codeq', 'publishTopics', `topic ${topic} matches none of the manifest's codeq.publishTopics`, { topic });
  }
  return topic;
}

export function checkFetch(manifest: FunctionManifest, args: Record<string, unknown>): CsFetchRequest {
  const http = manifest.capabilities.http;
  if (http === undefined) throw denied('http', 'absent', 'the manifest grants no http capability: network egress is blocked');
  if (typeof args['url'] !== 'string') throw invalidArgument('url must be a string', 'url');
  let url: URL;
  try {
    url = new URL(args['url']);
  } catch {
    throw invalidArgument('url is not an absolute URL', 'url');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidArgument(`scheme ${url.protocol.slice(0, -1)} is not http or https`, 'url');
  const host = bareHost(url.hostname);
  if (!http.allowHosts.some((pattern) => hostMatches(host, pattern))) {
    throw denied('http', 'allowHosts', `host ${host} is not in the manifest's http.allowHosts`, { host });
  }
  const method = args['method'] === undefined || args['method'] === null ? 'GET' : String(args['method']).toUpperCase();
  if (!METHODS.has(method)) throw invalidArgument(`method ${method.slice(0, 16)} is not an HTTP method`, 'method');
  const headers: Record<string, string> = {};
  const given = args['headers'];
  if (given !== undefined && given !== null) {
    if (typeof given !== 'object' || Array.isArray(given)) throw invalidArgument('headers must be an object of strings', 'headers');
    for (const [name, value] of Object.entries(given as Record<string, unknown>)) {
      if (typeof value !== 'string') throw invalidArgument(`header ${name.slice(0, 64)} must be a string`, 'headers');
      headers[name] = value;
    }
  }
  const body = args['body'];
  if (body !== undefined && body !== null && typeof body !== 'string') throw invalidArgument('body must be a string', 'body');
  const asked = args['timeoutMs'];
  if (asked !== undefined && asked !== null && (!Number.isInteger(asked) || (asked as number) < 1)) throw invalidArgument('timeoutMs must be a positive integer', 'timeoutMs');
  return {
    url: url.href,
    method,
    headers,
    ...(typeof body === 'string' ? { body } : {}),
    // The manifest's cap wins over what the call asks for.
    timeoutMs: Math.min((asked as number | undefined) ?? http.timeoutMs, http.timeoutMs),
    allowHosts: http.allowHosts,
  };
}

function denied(capability: 'kv' | 'codeq' | 'http', rule: string, message: string, details: Record<string, unknown> = {}): UhlpError {
  return new UhlpError('UHLP_CS_DENIED', message, { capability, rule, ...details });
}

function invalidArgument(message: string, field: string): UhlpError {
  return new UhlpError('UHLP_CS_INVALID_ARGUMENT', message, { field });
}
