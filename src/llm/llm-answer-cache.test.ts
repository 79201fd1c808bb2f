import { describe, expect, it } from 'vitest';
import { answerCacheKey } from './llm-answer-cache.js';
import { normalizeRequest } from './llm-provider.js';

describe('the answer cache key', () => {
  const request = normalizeRequest({ prompt: 'What is 2 + 2?', model: 'small', maxTokens: 16 }, undefined);

  it('is the same for the same request to the same server', () => {
    const server = { kind: 'openai-compatible', endpoint: 'http://127.0.0.1:8000/v1/chat/completions' };
    expect(answerCacheKey(server, request)).toBe(answerCacheKey({ ...server }, request));
  });

  it("differs between servers, so an app that moves to its own endpoint never gets another server's answers", () => {
    const operators = answerCacheKey({ kind: 'openai-compatible', endpoint: 'http://127.0.0.1:8000/v1/chat/completions' }, request);
    const apps = answerCacheKey({ kind: 'openai-compatible', endpoint: 'https://models.example.com/v1/chat/completions' }, request);
    expect(apps).not.toBe(operators);
    expect(answerCacheKey({ kind: 'scripted' }, request)).not.toBe(operators);
  });

  it('differs between requests', () => {
    const server = { kind: 'scripted' };
    expect(answerCacheKey(server, normalizeRequest({ prompt: 'What is 2 + 3?', model: 'small', maxTokens: 16 }, undefined))).not.toBe(answerCacheKey(server, request));
  });
});
