/**
 * Text embeddings behind `core.llm.embed`: an OpenAI-compatible
 * `POST <baseUrl>/embeddings` endpoint when one is configured
 * (`UHLP_EMBEDDINGS_MODEL`, at `UHLP_EMBEDDINGS_BASE_URL` or the LLM base URL),
 * else the deterministic local embedding (local-embedding.ts), which names
 * itself as such (`uhlp-local-hash-256`). Vectors are compared by cosine
 * similarity, so their length does not matter.
 */
import { request as undiciRequest } from 'undici';
import { deadlineSignal } from '../shared/deadline.js';
import { UhlpError } from '../shared/errors.js';
import { LOCAL_EMBEDDING_MODEL, localEmbedding } from '../shared/local-embedding.js';

export interface Embeddings {
  readonly vectors: number[][];
  /** The model that made them; `uhlp-local-hash-256` for the local embedding. */
  readonly model: string;
  readonly source: 'openai-compatible' | 'local';
  /** Tokens the endpoint counted, when it says. */
  readonly tokens?: number;
}

export interface Embedder {
  readonly source: 'openai-compatible' | 'local';
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Embeddings>;
}

export const localEmbedder: Embedder = {
  source: 'local',
  embed: async (texts) => ({ vectors: texts.map(localEmbedding), model: LOCAL_EMBEDDING_MODEL, source: 'local' }),
};

export interface OpenAiEmbedderOptions {
  /** Base URL up to the API version; `/embeddings` is appended. */
  readonly baseUrl: string;
  readonly model: string;
  /** @defaultValue no Authorization header */
  readonly apiKey?: string;
  /** @defaultValue 30000 */
  readonly timeoutMs?: number;
}

/** Largest answer read: 64 texts of a few thousand dimensions fit with room to spare. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export function openAiEmbedder(options: OpenAiEmbedderOptions): Embedder {
  const endpoint = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
  const redact = (text: string): string => (options.apiKey ? text.replaceAll(options.apiKey, '[redacted]') : text);
  return {
    source: 'openai-compatible',
    async embed(texts, signal) {
      const deadline = deadlineSignal(options.timeoutMs ?? 30_000, signal);
      let status: number;
      let text: string;
      try {
        const response = await undiciRequest(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(options.apiKey !== undefined ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: JSON.stringify({ model: options.model, input: texts }),
          signal: deadline,
        });
        status = response.statusCode;
        const chunks: Buffer[] = [];
        let bytes = 0;
        for await (const chunk of response.body as AsyncIterable<Buffer>) {
          bytes += chunk.length;
          if (bytes > MAX_ANSWER_BYTES) throw new UhlpError('UHLP_LLM_BAD_RESPONSE', `the embeddings answer is over ${MAX_ANSWER_BYTES} bytes`);
          chunks.push(chunk);
        }
        text = Buffer.concat(chunks).toString('utf8');
      } catch (error) {
        if (error instanceof UhlpError) throw error;
        if (deadline.aborted && signal?.aborted !== true) throw new UhlpError('UHLP_LLM_TIMEOUT', `the embeddings endpoint did not answer within ${options.timeoutMs ?? 30_000} ms`);
        throw new UhlpError('UHLP_LLM_UPSTREAM_ERROR', `the embeddings endpoint is unreachable: ${(error as { code?: string }).code ?? 'error'}`);
      }
      if (status === 401 || status === 403) throw new UhlpError('UHLP_LLM_AUTH_FAILED', `the embeddings endpoint refused the API key (${status})`, { upstreamStatus: status });
      if (status === 429) throw new UhlpError('UHLP_LLM_RATE_LIMITED', 'the embeddings endpoint rate limit', { upstreamStatus: status });
      if (status >= 500) throw new UhlpError('UHLP_LLM_UPSTREAM_ERROR', `the embeddings endpoint failed with ${status}`, { upstreamStatus: status, upstreamMessage: redact(text.slice(0, 500)) });
      if (status < 200 || status >= 300) throw new UhlpError('UHLP_LLM_REQUEST_REJECTED', `the embeddings endpoint rejected the request (${status})`, { upstreamStatus: status, upstreamMessage: redact(text.slice(0, 500)) });
      return parseEmbeddings(text, texts.length, options.model);
    },
  };
}

function parseEmbeddings(text: string, count: number, model: string): Embeddings {
  const bad = (why: string): never => {
    throw new UhlpError('UHLP_LLM_BAD_RESPONSE', `the embeddings answer ${why}`);
  };
  let body: { data?: unknown; model?: unknown; usage?: { total_tokens?: unknown; prompt_tokens?: unknown } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return bad('is not JSON');
  }
  if (!Array.isArray(body.data) || body.data.length !== count) return bad(`does not hold ${count} embeddings`);
  const vectors = new Array<number[]>(count);
  body.data.forEach((item: unknown, position) => {
    const entry = item as { index?: unknown; embedding?: unknown };
    const index = typeof entry.index === 'number' ? entry.index : position;
    if (!Number.isInteger(index) || index < 0 || index >= count) bad('has an embedding with a bad index');
    if (!Array.isArray(entry.embedding) || !entry.embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) bad('has an embedding that is not a list of numbers');
    vectors[index] = entry.embedding as number[];
  });
  if (vectors.some((vector) => vector === undefined)) bad('misses an embedding');
  const tokens = body.usage?.total_tokens ?? body.usage?.prompt_tokens;
  return { vectors, model: typeof body.model === 'string' ? body.model : model, source: 'openai-compatible', ...(typeof tokens === 'number' ? { tokens } : {}) };
}
