/**
 * core.llm.embed's OpenAI-compatible embedder against a real HTTP server (the
 * test server's /v1/embeddings): the request it sends, the vectors it reads,
 * and the errors of an endpoint that fails.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiEmbedder } from '../src/llm/embedder.js';
import { cosineSimilarity } from '../src/shared/local-embedding.js';
import { startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';

describe('the OpenAI-compatible embedder', () => {
  let llm: OpenAiTestServer;
  beforeAll(async () => {
    llm = await startOpenAiTestServer();
  });
  afterAll(() => llm.close());

  it('sends the texts and the model, with the key, and reads one vector per text in order', async () => {
    const embedder = openAiEmbedder({ baseUrl: llm.baseUrl, model: 'embed-small', apiKey: 'sk-test' });
    const answer = await embedder.embed(['refund or chargeback of a payment', 'I want a refund of my payment', 'opening hours']);
    expect(answer).toMatchObject({ model: 'embed-small', source: 'openai-compatible' });
    expect(answer.vectors).toHaveLength(3);
    expect(cosineSimilarity(answer.vectors[0]!, answer.vectors[1]!)).toBeGreaterThan(cosineSimilarity(answer.vectors[0]!, answer.vectors[2]!));
    const sent = llm.requests.at(-1)!;
    expect(sent.path).toBe('/v1/embeddings');
    expect(sent.headers.authorization).toBe('Bearer sk-test');
    expect(sent.body).toMatchObject({ model: 'embed-small', input: ['refund or chargeback of a payment', 'I want a refund of my payment', 'opening hours'] });
  });

  it('maps a failing or malformed endpoint to the LLM error codes, without the key', async () => {
    const answers = [
      { status: 500, body: 'boom sk-secret' },
      { status: 200, body: 'not json' },
      { status: 200, body: JSON.stringify({ data: [{ embedding: ['x'] }] }) },
      { status: 401, body: '{}' },
    ];
    const server = http.createServer((_req, res) => {
      const next = answers.shift()!;
      res.writeHead(next.status, { 'content-type': 'application/json' }).end(next.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const embedder = openAiEmbedder({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, model: 'm', apiKey: 'sk-secret' });
    try {
      const failed = await embedder.embed(['a']).catch((error: unknown) => error);
      expect(failed).toMatchObject({ code: 'UHLP_LLM_UPSTREAM_ERROR' });
      expect(JSON.stringify((failed as { details: unknown }).details)).not.toContain('sk-secret');
      await expect(embedder.embed(['a'])).rejects.toMatchObject({ code: 'UHLP_LLM_BAD_RESPONSE' });
      await expect(embedder.embed(['a'])).rejects.toMatchObject({ code: 'UHLP_LLM_BAD_RESPONSE' });
      await expect(embedder.embed(['a'])).rejects.toMatchObject({ code: 'UHLP_LLM_AUTH_FAILED' });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
