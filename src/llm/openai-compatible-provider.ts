/**
 * An LLM provider for any server speaking OpenAI's chat-completions API
 * (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM, ...): messages with tool calls and
 * tool results, function tools, structured output (openai-chat-wire.ts), and
 * optionally streaming (openai-chat-stream.ts), which yields the same result.
 * Transient failures (429, 5xx, connection errors) are retried with
 * exponential backoff and jitter, honouring the server's Retry-After;
 * everything else fails at once with a stable code. The API key never appears
 * in an error.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Dispatcher, getGlobalDispatcher } from 'undici';
import { backoffDelay } from '../shared/backoff.js';
import { withDeadline } from '../shared/deadline.js';
import { UhlpError } from '../shared/errors.js';
import { type LlmGenerateRequest, type LlmGenerateResult, type LlmProvider, type NormalizedLlmRequest, normalizeRequest } from './llm-provider.js';
import { ChatCompletionStream } from './openai-chat-stream.js';
import { type StructuredOutputMode, chatRequestBody, parseChatCompletion, upstreamMessage } from './openai-chat-wire.js';

export interface OpenAiCompatibleProviderOptions {
  /** Base URL up to the API version, e.g. `https://api.openai.com/v1`; `/chat/completions` is appended. */
  readonly baseUrl: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>`. A function is read on every
   * attempt (an app's secret, which rotates); what it throws fails the call
   * before anything is sent. @defaultValue no Authorization header
   */
  readonly apiKey?: string | (() => string);
  /** Model used when a request names none. @defaultValue none: requests must name one */
  readonly model?: string;
  /**
   * Ask for a streamed answer (`stream: true`, `stream_options.include_usage`)
   * and assemble it. The result is the same; what changes is that a server
   * behind a proxy with a short idle timeout keeps the connection busy.
   * @defaultValue false
   */
  readonly stream?: boolean;
  /**
   * How a request's `responseSchema` is sent (see StructuredOutputMode).
   * @defaultValue 'json_schema'
   */
  readonly structuredOutput?: StructuredOutputMode;
  /**
   * Time one attempt may take, the whole body (or stream) included.
   * @defaultValue 60000
   */
  readonly timeoutMs?: number;
  /**
   * Retries after the first attempt, for 429, 5xx and connection errors.
   * @defaultValue 3
   */
  readonly maxRetries?: number;
  /**
   * Backoff before the first retry; doubles per retry, with jitter (half fixed, half random).
   * @defaultValue 500
   */
  readonly initialBackoffMs?: number;
  /**
   * Ceiling of the computed backoff.
   * @defaultValue 10000
   */
  readonly maxBackoffMs?: number;
  /**
   * Longest Retry-After the provider waits; a server asking for more fails the call at once.
   * @defaultValue 30000
   */
  readonly maxRetryAfterMs?: number;
  /**
   * Largest answer body read, bytes; a larger one is UHLP_LLM_BAD_RESPONSE (a
   * broken or hostile server must not fill the core's memory).
   * @defaultValue 16777216
   */
  readonly maxResponseBytes?: number;
  /** undici dispatcher (connection pool). @defaultValue undici's global dispatcher */
  readonly dispatcher?: Dispatcher;
  /** Waits between attempts; tests record the delays instead of sleeping. @defaultValue timers/promises setTimeout */
  readonly delay?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Random source for jitter, in [0, 1). @defaultValue Math.random */
  readonly random?: () => number;
}

/** Bytes of an error answer kept for its message. */
const ERROR_BODY_BYTES = 64 * 1024;
/** What an attempt's deadline rejects with. */
const ATTEMPT_TIMED_OUT = Symbol('the attempt timed out');

export function createOpenAiCompatibleProvider(options: OpenAiCompatibleProviderOptions): LlmProvider {
  let endpoint: URL;
  try {
    endpoint = new URL(`${options.baseUrl.replace(/\/+$/, '')}/chat/completions`);
  } catch {
    throw new UhlpError('UHLP_CONFIG_INVALID', `LLM base URL must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`, { field: 'baseUrl' });
  }
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') {
    throw new UhlpError('UHLP_CONFIG_INVALID', `LLM base URL must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`, { field: 'baseUrl' });
  }
  const stream = options.stream ?? false;
  const structuredOutput = options.structuredOutput ?? 'json_schema';
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxRetries = options.maxRetries ?? 3;
  const initialBackoffMs = options.initialBackoffMs ?? 500;
  const maxBackoffMs = options.maxBackoffMs ?? 10_000;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
  const maxResponseBytes = options.maxResponseBytes ?? 16 * 1024 * 1024;
  const delay = options.delay ?? ((ms: number, signal?: AbortSignal) => sleep(ms, undefined, signal === undefined ? {} : { signal }));
  const random = options.random ?? Math.random;

  // Some servers echo the key they refused; it must not reach error details.
  const apiKey = (): string | undefined => (typeof options.apiKey === 'function' ? options.apiKey() : options.apiKey);
  const redact = (text: string): string => {
    let key: string | undefined;
    try {
      key = apiKey();
    } catch {
      return text;
    }
    return key ? text.replaceAll(key, '[redacted]') : text;
  };

  const backoff = (retry: number): number => backoffDelay(retry, { initialMs: initialBackoffMs, maxMs: maxBackoffMs, random });

  const dispatcher = (): Dispatcher => options.dispatcher ?? getGlobalDispatcher();
  const path = `${endpoint.pathname}${endpoint.search}`;

  async function attempt(body: string, request: NormalizedLlmRequest, signal: AbortSignal | undefined, onDelta: ((text: string) => void) | undefined): Promise<Attempt> {
    try {
      return await withDeadline((deadline) => exchange(body, request, signal, deadline, onDelta), timeoutMs, () => ATTEMPT_TIMED_OUT);
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason;
      if (error === ATTEMPT_TIMED_OUT) return { kind: 'timeout' };
      if (error instanceof UhlpError) throw error;
      const code = (error as { code?: unknown }).code;
      return { kind: 'network', code: typeof code === 'string' ? code : 'UNKNOWN' };
    }
  }

  /**
   * One request and its answer, read as undici hands the bytes over (its
   * dispatch handler): no body stream, no composite abort signal per call, as
   * `request()` would build for every turn. Stopped when the caller's signal or
   * the attempt's deadline aborts.
   */
  function exchange(
    body: string,
    request: NormalizedLlmRequest,
    signal: AbortSignal | undefined,
    deadline: AbortSignal,
    onDelta: ((text: string) => void) | undefined,
  ): Promise<Attempt> {
    const streaming = stream || onDelta !== undefined;
    return new Promise<Attempt>((resolve, reject) => {
      let controller: Dispatcher.DispatchController | undefined;
      let settled = false;
      const stop = (reason: unknown): void => {
        const error = reason instanceof Error ? reason : new Error('aborted');
        if (controller !== undefined) controller.abort(error);
        else finish(undefined, error);
      };
      const onAbort = (): void => stop(signal?.aborted === true ? signal.reason : deadline.reason);
      const finish = (outcome: Attempt | undefined, error?: unknown): void => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        deadline.removeEventListener('abort', onAbort);
        if (outcome !== undefined) resolve(outcome);
        else reject(error);
      };
      if (signal?.aborted === true || deadline.aborted) return reject(signal?.reason ?? deadline.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      deadline.addEventListener('abort', onAbort, { once: true });

      let status = 0;
      let headers: Record<string, string | string[] | undefined> = {};
      let assembler: ChatCompletionStream | undefined;
      let limit = maxResponseBytes;
      const chunks: Buffer[] = [];
      let bytes = 0;
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(started) {
          controller = started;
          if (settled) started.abort(new Error('aborted'));
        },
        onResponseStart(_controller, statusCode, responseHeaders) {
          status = statusCode;
          headers = responseHeaders as Record<string, string | string[] | undefined>;
          const ok = status >= 200 && status < 300;
          // A server that ignores `stream` answers plain JSON: read it as such.
          if (ok && streaming && String(headers['content-type'] ?? '').includes('text/event-stream')) assembler = new ChatCompletionStream(request, redact, onDelta);
          // An error body is only quoted (its first 500 characters): past a little of it, the rest is dropped.
          limit = ok ? maxResponseBytes : ERROR_BODY_BYTES;
        },
        onResponseData(dataController, chunk) {
          if (settled) return;
          bytes += chunk.length;
          try {
            if (bytes > limit) {
              if (status >= 200 && status < 300) throw tooLarge(maxResponseBytes);
              chunks.push(chunk.subarray(0, chunk.length - (bytes - limit)));
              finish({ kind: 'response', status, headers, text: Buffer.concat(chunks).toString('utf8') });
              dataController.abort(new Error('the rest of an error answer is not read'));
              return;
            }
            if (assembler !== undefined) assembler.push(chunk);
            else chunks.push(chunk);
          } catch (error) {
            finish(undefined, error);
            dataController.abort(error as Error);
          }
        },
        onResponseEnd() {
          if (settled) return;
          try {
            if (assembler !== undefined) return finish({ kind: 'result', result: assembler.end() });
            const text = Buffer.concat(chunks, Math.min(bytes, limit)).toString('utf8');
            if (status < 200 || status >= 300) return finish({ kind: 'response', status, headers, text });
            const result = parseChatCompletion(text, request, redact);
            // A server that answered whole to a streamed request: its text is one piece.
            if (onDelta !== undefined && result.text !== null && result.text !== '') onDelta(result.text);
            finish({ kind: 'result', result });
          } catch (error) {
            finish(undefined, error);
          }
        },
        onResponseError(_controller, error) {
          finish(undefined, error);
        },
      };
      try {
        const key = apiKey();
        dispatcher().dispatch(
          {
            origin: endpoint.origin,
            path,
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: streaming ? 'text/event-stream, application/json' : 'application/json',
              ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
            },
            body,
          },
          handler,
        );
      } catch (error) {
        finish(undefined, error);
      }
    });
  }

  return {
    kind: 'openai-compatible',
    endpoint: endpoint.href,
    ...(options.model !== undefined ? { defaultModel: options.model } : {}),

    async generate(request: LlmGenerateRequest): Promise<LlmGenerateResult> {
      const normalized = normalizeRequest(request, options.model);
      // A key that cannot be read now fails the call before anything is sent.
      apiKey();
      const body = chatRequestBody(normalized, { stream: stream || request.onDelta !== undefined, structuredOutput });
      for (let retry = 0; ; retry++) {
        const outcome = await attempt(body, normalized, request.signal, request.onDelta);
        const attempts = retry + 1;
        if (outcome.kind === 'result') return outcome.result;
        if (outcome.kind === 'timeout') {
          // Not retried: a slow model stays slow, and each attempt already had the full budget.
          throw new UhlpError('UHLP_LLM_TIMEOUT', `LLM provider did not answer within ${timeoutMs} ms`, { timeoutMs, attempts });
        }
        const failure = classify(outcome, attempts, redact);
        if (failure.retryable && retry < maxRetries) {
          const wait = outcome.kind === 'response' ? retryAfterMs(outcome.headers) : undefined;
          if (wait !== undefined && wait > maxRetryAfterMs) throw failure.error;
          try {
            await delay(wait ?? backoff(retry), request.signal);
          } catch (error) {
            throw request.signal?.aborted === true ? request.signal.reason : error;
          }
          continue;
        }
        throw failure.error;
      }
    },
  };
}

function tooLarge(limit: number): UhlpError {
  return new UhlpError('UHLP_LLM_BAD_RESPONSE', `LLM provider answer is over ${limit} bytes`, { maxResponseBytes: limit });
}

type Attempt =
  | { readonly kind: 'result'; readonly result: LlmGenerateResult }
  | { readonly kind: 'response'; readonly status: number; readonly headers: Record<string, string | string[] | undefined>; readonly text: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'network'; readonly code: string };

function classify(
  outcome: Exclude<Attempt, { kind: 'timeout' } | { kind: 'result' }>,
  attempts: number,
  redact: (text: string) => string,
): { retryable: boolean; error: UhlpError } {
  if (outcome.kind === 'network') {
    return {
      retryable: true,
      error: new UhlpError('UHLP_LLM_UPSTREAM_ERROR', `LLM provider unreachable: ${outcome.code}`, { cause: outcome.code, attempts }),
    };
  }
  const details = { upstreamStatus: outcome.status, upstreamMessage: redact(upstreamMessage(outcome.text)), attempts };
  if (outcome.status === 429) {
    return { retryable: true, error: new UhlpError('UHLP_LLM_RATE_LIMITED', 'LLM provider rate limit', details) };
  }
  if (outcome.status >= 500) {
    return { retryable: true, error: new UhlpError('UHLP_LLM_UPSTREAM_ERROR', `LLM provider failed with ${outcome.status}`, details) };
  }
  if (outcome.status === 401 || outcome.status === 403) {
    return { retryable: false, error: new UhlpError('UHLP_LLM_AUTH_FAILED', `LLM provider refused the API key (${outcome.status})`, details) };
  }
  return { retryable: false, error: new UhlpError('UHLP_LLM_REQUEST_REJECTED', `LLM provider rejected the request (${outcome.status})`, details) };
}

/**
 * Retry-After in milliseconds: OpenAI's `retry-after-ms`, else the standard
 * header as seconds or an HTTP date. Undefined when absent or unreadable.
 */
export function retryAfterMs(headers: Record<string, string | string[] | undefined>, now: number = Date.now()): number | undefined {
  const precise = single(headers['retry-after-ms']);
  if (precise !== undefined && /^\d+(\.\d+)?$/.test(precise.trim())) return Math.ceil(Number(precise));
  const value = single(headers['retry-after'])?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
