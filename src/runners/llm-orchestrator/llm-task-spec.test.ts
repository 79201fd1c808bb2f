import { describe, expect, it } from 'vitest';
import { readLlmTaskSpec } from './llm-task-spec.js';

describe('readLlmTaskSpec', () => {
  it("fills in the schema's defaults", () => {
    expect(readLlmTaskSpec({ prompt: 'p.njk' })).toEqual({
      spec: { prompt: 'p.njk', maxAttempts: 3, tools: [], maxToolCalls: 8, respond: 'generic', header: false },
    });
  });

  it('keeps what the component says', () => {
    const llm = { prompt: 'p.njk', system: 's.njk', model: 'm', temperature: 0, maxTokens: 9, outputSchema: { type: 'object' }, maxAttempts: 1, tools: ['core.kv.get'], maxToolCalls: 0, respond: 'httpResponse', cache: { ttlSeconds: 5 }, header: true };
    expect(readLlmTaskSpec(llm)).toEqual({ spec: llm });
  });

  it.each([
    [undefined, /must be an object/],
    [{}, /prompt/],
    [{ prompt: 'p', maxAttempts: 0 }, /maxAttempts/],
    [{ prompt: 'p', respond: 'html' }, /respond/],
    [{ prompt: 'p', tools: 'core.kv.get' }, /tools/],
    [{ prompt: 'p', surprise: 1 }, /taskDetails\.llm/],
  ])('refuses %j', (raw, problem) => {
    expect(readLlmTaskSpec(raw)).toEqual({ problem: expect.stringMatching(problem) });
  });

  it('reads the same block once: a later turn gets the same frozen spec, and a changed block is read again', () => {
    const first = readLlmTaskSpec({ prompt: 'memo.njk', maxTokens: 7 });
    const again = readLlmTaskSpec({ prompt: 'memo.njk', maxTokens: 7 });
    expect(again).toBe(first);
    expect(Object.isFrozen((first as { spec: object }).spec)).toBe(true);
    expect(Object.isFrozen((first as { spec: { tools: unknown[] } }).spec.tools)).toBe(true);
    expect(readLlmTaskSpec({ prompt: 'memo.njk', maxTokens: 8 })).toMatchObject({ spec: { maxTokens: 8 } });
    expect(readLlmTaskSpec({ prompt: 'memo.njk', maxAttempts: 0 })).toBe(readLlmTaskSpec({ prompt: 'memo.njk', maxAttempts: 0 }));
  });
});
