import { describe, expect, it } from 'vitest';
import { FakeTools } from '../../../test/helpers/fake-tools.js';
import { GENERATE_TOOL, mcpGenerate, readAnswer } from './generate-client.js';

describe('core.llm.generate from the orchestrator', () => {
  it('sends only the fields that are set', async () => {
    const tools = new FakeTools({ tools: { [GENERATE_TOOL]: () => ({ text: 'hi', model: 'm', usage: { prompt: 3, completion: 1 } }) } });
    const generate = mcpGenerate(tools);
    await generate({ messages: [{ role: 'user', content: 'x' }] });
    await generate({
      messages: [{ role: 'user', content: 'x' }],
      model: 'm',
      maxTokens: 5,
      temperature: 0,
      tools: [{ name: 'core_kv_get', parameters: { type: 'object' } }],
      responseSchema: { name: 'c', schema: { type: 'object' } },
      cacheTtlSeconds: 60,
    });
    await generate({ messages: [{ role: 'user', content: 'x' }], tools: [] });
    expect(tools.callsOf(GENERATE_TOOL)).toEqual([
      { messages: [{ role: 'user', content: 'x' }] },
      {
        messages: [{ role: 'user', content: 'x' }],
        model: 'm',
        maxTokens: 5,
        temperature: 0,
        tools: [{ name: 'core_kv_get', parameters: { type: 'object' } }],
        responseSchema: { name: 'c', schema: { type: 'object' } },
        cacheTtlSeconds: 60,
      },
      { messages: [{ role: 'user', content: 'x' }] },
    ]);
  });

  it('reads an answer of the older shape (text, model, usage) as one without tool calls', () => {
    expect(readAnswer({ text: 'hi', model: 'm', usage: { prompt: 3, completion: 1 } })).toEqual({
      text: 'hi',
      toolCalls: [],
      finishReason: 'stop',
      model: 'm',
      usage: { prompt: 3, completion: 1 },
      cached: false,
    });
  });

  it('reads tool calls, and arguments given as an object', () => {
    const answer = readAnswer({ text: null, toolCalls: [{ id: 'a', name: 'f', arguments: '{"x":1}' }, { name: 'g', arguments: { y: 2 } }], finishReason: 'tool_calls', model: 'm', usage: { prompt: 1, completion: 2 }, cached: true });
    expect(answer.toolCalls).toEqual([
      { id: 'a', name: 'f', arguments: '{"x":1}' },
      { id: 'call_1', name: 'g', arguments: '{"y":2}' },
    ]);
    expect(answer.cached).toBe(true);
  });

  it.each([
    [{ text: 5 }, /text that is not a string/],
    [{ text: null }, /neither text nor tool calls/],
    [{ text: 'x', toolCalls: {} }, /not a list/],
    [{ text: null, toolCalls: [{ arguments: '{}' }] }, /without a name/],
  ])('refuses the malformed answer %j as UHLP_LLM_BAD_RESPONSE', (content, message) => {
    expect(() => readAnswer(content)).toThrow(expect.objectContaining({ code: 'UHLP_LLM_BAD_RESPONSE', status: 502, message: expect.stringMatching(message) }));
  });
});
