import { describe, expect, it } from 'vitest';
import type { LlmGenerateRequest, LlmProvider } from './llm-provider.js';
import { parseModelMap, withModelMap } from './model-map.js';

describe('model map', () => {
  it("sends the server's name of a mapped model, and others as they are", async () => {
    const sent: Array<string | undefined> = [];
    const provider: LlmProvider = {
      kind: 'fake',
      defaultModel: 'small',
      generate: async (request: LlmGenerateRequest) => {
        sent.push(request.model);
        return { text: 'ok', toolCalls: [], finishReason: 'stop', model: request.model ?? '', usage: { prompt: 1, completion: 1 } };
      },
    };
    const mapped = withModelMap(provider, { small: 'llama3.2:3b' });
    await mapped.generate({ model: 'small', prompt: 'x', maxTokens: 5 });
    await mapped.generate({ model: 'other', prompt: 'x', maxTokens: 5 });
    await mapped.generate({ prompt: 'x', maxTokens: 5 });
    expect(sent).toEqual(['llama3.2:3b', 'other', 'llama3.2:3b']);
    expect(withModelMap(provider, {})).toBe(provider);
  });

  it('parses name=model pairs and refuses anything else', () => {
    expect(parseModelMap('a=b, c=d:1')).toEqual({ a: 'b', c: 'd:1' });
    expect(parseModelMap('a')).toBeUndefined();
    expect(parseModelMap('a=b=c')).toBeUndefined();
  });
});
