import { describe, expect, it } from 'vitest';
import { compileOutputSchema } from '../../contract/output-schema.js';
import { ToolCallError } from '../kit/tools-client.js';
import { feedbackMessage, judgeAnswer } from './answer-judge.js';
import { converse, INVALID_NAME, type ConversationOptions } from './conversation.js';
import type { LlmToolCall } from '../../contract/llm-messages.js';
import type { GenerateAnswer, GenerateRequest } from './generate-client.js';
import { UhlpError } from '../../shared/errors.js';
import { NO_TOOLS, type OfferedTools } from './model-tools.js';
import { ToolNames } from './tool-names.js';

/** A model that gives `answers` in order and records what it was asked. */
function scriptedModel(answers: Array<Partial<GenerateAnswer>>): { generate: ConversationOptions['generate']; asked: GenerateRequest[] } {
  const asked: GenerateRequest[] = [];
  return {
    asked,
    generate: async (request) => {
      // A copy: the conversation keeps appending to its message list.
      asked.push(structuredClone(request));
      const next = answers.shift();
      if (!next) throw new Error('the model was asked more often than scripted');
      return { text: null, toolCalls: [], finishReason: 'stop', model: 'm', usage: { prompt: 1, completion: 1 }, cached: false, ...next };
    },
  };
}

const schema = compileOutputSchema({ type: 'object', properties: { label: { enum: ['bug', 'question'] } }, required: ['label'], additionalProperties: false }).validate!;
const judge = (text: string | null) => judgeAnswer(text, { validate: schema, respond: 'generic' });
const kvTools: OfferedTools = { functions: [{ name: 'core_kv_get', parameters: { type: 'object' } }, { name: 'core_kv_set', parameters: { type: 'object' } }], names: new ToolNames(['core.kv.get', 'core.kv.set']) };
const call = (id: string, name: string, args: unknown): LlmToolCall => ({ id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });

function options(overrides: Partial<ConversationOptions>): ConversationOptions {
  return {
    generate: async () => {
      throw new Error('no model');
    },
    callTool: async () => ({}),
    request: { model: 'm' },
    messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'classify: it crashes' }],
    tools: NO_TOOLS,
    maxToolCalls: 8,
    maxAttempts: 3,
    judge,
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<UhlpError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(UhlpError);
  return error as UhlpError;
}

describe('converse', () => {
  it('answers the output of an answer that passes at once', async () => {
    const model = scriptedModel([{ text: '{"label":"bug"}' }]);
    expect(await converse(options({ generate: model.generate }))).toEqual({ label: 'bug' });
    expect(model.asked).toEqual([{ model: 'm', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'classify: it crashes' }] }]);
  });

  it('re-asks an invalid answer with the answer and the errors appended, and takes a fenced block', async () => {
    const model = scriptedModel([{ text: 'It is a bug.' }, { text: '{"label":"feature"}' }, { text: 'Sure:\n```json\n{"label": "bug"}\n```' }]);
    expect(await converse(options({ generate: model.generate }))).toEqual({ label: 'bug' });
    expect(model.asked).toHaveLength(3);
    const second = model.asked[1]!.messages;
    expect(second.slice(2)).toEqual([
      { role: 'assistant', content: 'It is a bug.' },
      { role: 'user', content: expect.stringMatching(/^Your answer is not valid:\n- the answer is not JSON/) },
    ]);
    const third = model.asked[2]!.messages;
    expect(third.slice(4)).toEqual([
      { role: 'assistant', content: '{"label":"feature"}' },
      { role: 'user', content: feedbackMessage(['/label: must be equal to one of the allowed values ("bug", "question")']) },
    ]);
  });

  it('fails with UHLP_LLM_OUTPUT_INVALID and the last errors after maxAttempts answers', async () => {
    const model = scriptedModel([{ text: '{}' }, { text: '{"label":"bug","extra":1}' }]);
    const error = await failure(converse(options({ generate: model.generate, maxAttempts: 2 })));
    expect(error).toMatchObject({ code: 'UHLP_LLM_OUTPUT_INVALID', status: 502, details: { attempts: 2, errors: ['/: must NOT have additional properties (extra)'] } });
    expect(model.asked).toHaveLength(2);
  });

  it('runs tool calls through MCP, gives a refusal back to the model as the tool result, and goes on', async () => {
    const model = scriptedModel([
      { toolCalls: [call('c1', 'core_kv_get', { key: 'ctr:a' }), call('c2', 'core_kv_get', { key: 'secret:b' })] },
      { text: 'thinking', toolCalls: [call('c3', 'core_kv_set', '{"key":"ctr:a","value":2}'), call('c4', 'shell_exec', {}), call('c5', 'core_kv_get', 'not json')] },
      { text: '{"label":"question"}' },
    ]);
    const called: Array<[string, Record<string, unknown>]> = [];
    const callTool = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
      called.push([name, args]);
      if (String(args['key']).startsWith('secret:')) throw new ToolCallError('UHLP_CAPABILITY_DENIED', 'kv key secret:b is outside the allowed prefixes', 403, { capability: 'kv', rule: 'prefixes' });
      return name === 'core.kv.get' ? { value: 1 } : { ok: true };
    };
    expect(await converse(options({ generate: model.generate, callTool, tools: kvTools }))).toEqual({ label: 'question' });
    // MCP names, not function names; the unknown function and the bad arguments never reached the core.
    expect(called).toEqual([
      ['core.kv.get', { key: 'ctr:a' }],
      ['core.kv.get', { key: 'secret:b' }],
      ['core.kv.set', { key: 'ctr:a', value: 2 }],
    ]);
    expect(model.asked[0]!.tools).toEqual(kvTools.functions);
    const last = model.asked[2]!.messages.slice(2);
    expect(last).toEqual([
      { role: 'assistant', content: null, toolCalls: [call('c1', 'core_kv_get', { key: 'ctr:a' }), call('c2', 'core_kv_get', { key: 'secret:b' })] },
      { role: 'tool', toolCallId: 'c1', content: '{"value":1}' },
      {
        role: 'tool',
        toolCallId: 'c2',
        content: JSON.stringify({ error: { code: 'UHLP_CAPABILITY_DENIED', message: 'kv key secret:b is outside the allowed prefixes', details: { capability: 'kv', rule: 'prefixes' } } }),
      },
      { role: 'assistant', content: 'thinking', toolCalls: expect.any(Array) },
      { role: 'tool', toolCallId: 'c3', content: '{"ok":true}' },
      { role: 'tool', toolCallId: 'c4', content: expect.stringContaining('"code":"UHLP_MCP_TOOL_NOT_FOUND"') },
      { role: 'tool', toolCallId: 'c5', content: expect.stringContaining('"code":"UHLP_MCP_INVALID_ARGUMENTS"') },
    ]);
  });

  it('gives a call whose name is no function name back to the model, sent back under a function name the core takes', async () => {
    const model = scriptedModel([{ toolCalls: [call('c1', 'core.kv.get', { key: 'ctr:a' }), call('c2', 'what ever?', {})] }, { text: '{"label":"question"}' }]);
    const called: string[] = [];
    const callTool = async (name: string): Promise<Record<string, unknown>> => {
      called.push(name);
      return {};
    };
    expect(await converse(options({ generate: model.generate, callTool, tools: kvTools }))).toEqual({ label: 'question' });
    expect(called).toEqual([]);
    const sent = model.asked[1]!.messages.slice(2);
    expect(sent).toEqual([
      { role: 'assistant', content: null, toolCalls: [call('c1', INVALID_NAME, { key: 'ctr:a' }), call('c2', INVALID_NAME, {})] },
      { role: 'tool', toolCallId: 'c1', content: expect.stringContaining('"code":"UHLP_MCP_TOOL_NOT_FOUND"') },
      { role: 'tool', toolCallId: 'c2', content: expect.stringContaining('"code":"UHLP_MCP_TOOL_NOT_FOUND"') },
    ]);
    // The function the model meant, when there is one.
    expect(JSON.parse(String(sent[1]!.content)).error.message).toBe('"core.kv.get" is not the name of a function offered; call the function "core_kv_get"');
    expect(JSON.parse(String(sent[2]!.content)).error.message).toBe('"what ever?" is not the name of a function offered; call the functions offered, by their names');
    // Every name the conversation sends is one the core's core.llm.generate takes.
    for (const message of sent) for (const toolCall of ('toolCalls' in message ? (message.toolCalls ?? []) : [])) expect(toolCall.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('stops at maxToolCalls with UHLP_LLM_TOOL_LOOP_LIMIT, counting the calls of every attempt', async () => {
    const looping = scriptedModel(Array.from({ length: 5 }, (_, i) => ({ toolCalls: [call(`c${i}`, 'core_kv_get', { key: 'ctr:a' })] })));
    let calls = 0;
    const error = await failure(converse(options({ generate: looping.generate, callTool: async () => ({ value: ++calls }), tools: kvTools, maxToolCalls: 3 })));
    expect(error).toMatchObject({ code: 'UHLP_LLM_TOOL_LOOP_LIMIT', status: 502, details: { maxToolCalls: 3, requested: 4 } });
    expect(calls).toBe(3);

    const acrossAttempts = scriptedModel([
      { toolCalls: [call('a', 'core_kv_get', {})] },
      { text: 'no json' },
      { toolCalls: [call('b', 'core_kv_get', {}), call('c', 'core_kv_get', {})] },
    ]);
    expect(await failure(converse(options({ generate: acrossAttempts.generate, tools: kvTools, maxToolCalls: 2 })))).toMatchObject({ code: 'UHLP_LLM_TOOL_LOOP_LIMIT' });
  });

  it('offers no function when no call is allowed', async () => {
    const model = scriptedModel([{ text: '{"label":"bug"}' }]);
    await converse(options({ generate: model.generate, tools: kvTools, maxToolCalls: 0 }));
    expect(model.asked[0]).not.toHaveProperty('tools');
  });

  it("passes an error of core.llm.generate through as it came, details and all", async () => {
    const budget = new ToolCallError('UHLP_LLM_BUDGET_EXCEEDED', 'the app spent its tokens for today', 429, { retryAfterSeconds: 3600 });
    const generate = async (): Promise<GenerateAnswer> => {
      throw budget;
    };
    await expect(converse(options({ generate }))).rejects.toBe(budget);
  });
});
