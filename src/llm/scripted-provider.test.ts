import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UhlpError } from '../shared/errors.js';
import { createScriptedProvider, loadScriptedProvider, parseScript } from './scripted-provider.js';

const YAML_SCRIPT = `
answers:
  - match: weather
    answer: It is sunny.
  - regex: "^translate (\\\\w+)"
    flags: im
    answer: { lang: fr, ok: true }
default: I do not know.
`;

describe('scripted provider', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'uhlp-scripted-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the first match, a regex match as JSON text, else the default', async () => {
    const file = join(dir, 'answers.yaml');
    await writeFile(file, YAML_SCRIPT);
    const provider = await loadScriptedProvider(file);
    expect(provider.kind).toBe('scripted');

    const sunny = await provider.generate({ prompt: 'what is the weather today?', maxTokens: 50 });
    expect(sunny).toEqual({ text: 'It is sunny.', toolCalls: [], finishReason: 'stop', model: 'scripted', usage: { prompt: 7, completion: 3 } });

    const translated = await provider.generate({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You translate.' },
        { role: 'user', content: 'TRANSLATE hello' },
      ],
      maxTokens: 50,
    });
    expect(translated.text).toBe('{"lang":"fr","ok":true}');
    expect(translated.model).toBe('gpt-4o-mini');

    expect((await provider.generate({ prompt: 'something else', maxTokens: 5 })).text).toBe('I do not know.');
  });

  it('reads a JSON list with no default, and fails with UHLP_LLM_NO_SCRIPTED_ANSWER when nothing matches', async () => {
    const file = join(dir, 'answers.json');
    await writeFile(file, JSON.stringify([{ match: 'ping', answer: 'pong' }]));
    const provider = await loadScriptedProvider(file);
    expect((await provider.generate({ prompt: 'ping?', maxTokens: 5 })).text).toBe('pong');
    await expect(provider.generate({ prompt: 'hello', maxTokens: 5 })).rejects.toMatchObject({ code: 'UHLP_LLM_NO_SCRIPTED_ANSWER' });
  });

  it('gives the same answer on every call of a regex entry', async () => {
    const provider = createScriptedProvider(parseScript('- regex: a\n  flags: g\n  answer: yes\n', 'inline'));
    for (let i = 0; i < 3; i++) expect((await provider.generate({ prompt: 'banana', maxTokens: 5 })).text).toBe('yes');
  });

  it('scripts tool calls, and sequences whose place advances per matching call and stays on the last reply', async () => {
    const provider = createScriptedProvider(
      parseScript(
        `
answers:
  - match: triage
    sequence:
      - answer: not JSON at all
      - answer: { priority: high }
  - match: weather in
    sequence:
      - toolCalls: [{ name: get_weather, arguments: { city: Paris } }, { name: broken, arguments: '{"city": ' }]
      - answer: Sunny in Paris.
  - match: cut
    answer: "half an ans"
    finishReason: length
  - match: both
    answer: Let me check.
    toolCalls: [{ name: core_kv_get }]
default: { toolCalls: [{ name: fallback_tool, arguments: {} }] }
`,
        'inline',
      ),
    );
    const ask = (prompt: string) => provider.generate({ prompt, maxTokens: 50 });
    expect((await ask('triage this')).text).toBe('not JSON at all');
    expect((await ask('triage this')).text).toBe('{"priority":"high"}');
    expect((await ask('triage this again')).text).toBe('{"priority":"high"}');

    const call = await ask('what is the weather in Paris?');
    expect(call).toMatchObject({
      text: null,
      finishReason: 'tool_calls',
      toolCalls: [
        { id: expect.stringMatching(/^call_\d+$/), name: 'get_weather', arguments: '{"city":"Paris"}' },
        { name: 'broken', arguments: '{"city": ' },
      ],
    });
    expect(call.usage.completion).toBeGreaterThan(0);
    const final = await provider.generate({
      messages: [
        { role: 'user', content: 'what is the weather in Paris?' },
        { role: 'assistant', content: null, toolCalls: call.toolCalls },
        { role: 'tool', toolCallId: call.toolCalls[0]!.id, content: '{"sky":"clear"}' },
        { role: 'tool', toolCallId: call.toolCalls[1]!.id, content: '{"error":"bad arguments"}' },
      ],
      maxTokens: 50,
    });
    expect(final).toMatchObject({ text: 'Sunny in Paris.', toolCalls: [], finishReason: 'stop' });

    expect(await ask('cut me off')).toMatchObject({ text: 'half an ans', finishReason: 'length' });
    expect(await ask('both please')).toMatchObject({ text: 'Let me check.', toolCalls: [{ name: 'core_kv_get', arguments: '{}' }], finishReason: 'tool_calls' });
    expect(await ask('anything')).toMatchObject({ text: null, toolCalls: [{ name: 'fallback_tool', arguments: '{}' }] });
    // Ids are unique across calls, so tool results never answer the wrong call.
    const ids = [call, ...(await Promise.all([ask('both'), ask('both')]))].flatMap((result) => result.toolCalls.map((c) => c.id));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it.each([
    ['broken YAML', 'answers: [', undefined],
    ['a sequence beside an answer', '- match: a\n  answer: x\n  sequence: [{ answer: y }]', 'answers[0]'],
    ['an empty sequence', '- match: a\n  sequence: []', 'answers[0].sequence'],
    ['a sequence step that is not a reply', '- match: a\n  sequence: [plain text]', 'answers[0].sequence[0]'],
    ['a reply with an unknown key', '- match: a\n  sequence: [{ answr: x }]', 'answers[0].sequence[0].answr'],
    ['a tool call without a name', '- match: a\n  toolCalls: [{ arguments: {} }]', 'answers[0].toolCalls[0].name'],
    ['a tool call name with dots', '- match: a\n  toolCalls: [{ name: core.kv.get }]', 'answers[0].toolCalls[0].name'],
    ['tool call arguments that are a number', '- match: a\n  toolCalls: [{ name: f, arguments: 5 }]', 'answers[0].toolCalls[0].arguments'],
    ['empty tool calls', '- match: a\n  toolCalls: []', 'answers[0].toolCalls'],
    ['an empty finish reason', '- match: a\n  answer: x\n  finishReason: ""', 'answers[0].finishReason'],
    ['a scalar', '42', undefined],
    ['answers not a list', 'answers: nope', 'answers'],
    ['no answers and no default', 'answers: []', 'answers'],
    ['an entry with neither match nor regex', '- answer: x', 'answers[0]'],
    ['an entry with both', '- match: a\n  regex: b\n  answer: x', 'answers[0]'],
    ['an entry without answer', '- match: a', 'answers[0].answer'],
    ['a regex that does not compile', '- regex: "("\n  answer: x', 'answers[0].regex'],
  ])('refuses %s with UHLP_LLM_SCRIPT_INVALID', (_name, text, field) => {
    try {
      parseScript(text, 'test.yaml');
      expect.unreachable('parseScript accepted a bad script');
    } catch (error) {
      expect(error).toBeInstanceOf(UhlpError);
      expect((error as UhlpError).code).toBe('UHLP_LLM_SCRIPT_INVALID');
      if (field !== undefined) expect((error as UhlpError).details).toMatchObject({ field });
    }
  });

  it('refuses a missing file with UHLP_LLM_SCRIPT_INVALID', async () => {
    await expect(loadScriptedProvider(join(dir, 'nope.yaml'))).rejects.toMatchObject({ code: 'UHLP_LLM_SCRIPT_INVALID' });
  });

  it.each([
    ['neither messages nor prompt', { maxTokens: 5 }, 'messages'],
    ['both messages and prompt', { prompt: 'a', messages: [{ role: 'user', content: 'b' }], maxTokens: 5 }, 'messages'],
    ['an unknown role', { messages: [{ role: 'robot', content: 'b' }], maxTokens: 5 }, 'messages[0].role'],
    ['a user message with tool calls', { messages: [{ role: 'user', content: 'b', toolCalls: [] }], maxTokens: 5 }, 'messages[0].toolCalls'],
    ['a tool message with tool calls', { messages: [{ role: 'tool', toolCallId: 'c', content: 'b', toolCalls: [] }], maxTokens: 5 }, 'messages[0].toolCalls'],
    ['a tool message without its call id', { messages: [{ role: 'tool', content: 'b' }], maxTokens: 5 }, 'messages[0].toolCallId'],
    [
      'a tool message answering no earlier call',
      { messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'f', arguments: '{}' }] }, { role: 'tool', toolCallId: 'c2', content: 'x' }], maxTokens: 5 },
      'messages[2].toolCallId',
    ],
    ['an assistant message with neither content nor tool calls', { messages: [{ role: 'assistant', content: null }], maxTokens: 5 }, 'messages[0]'],
    ['a tool call with a bad name', { messages: [{ role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 'core.kv.get', arguments: '{}' }] }], maxTokens: 5 }, 'messages[0].toolCalls[0].name'],
    ['tool call arguments that are not text', { messages: [{ role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 'f', arguments: {} }] }], maxTokens: 5 }, 'messages[0].toolCalls[0].arguments'],
    ['a tool name with dots', { prompt: 'a', maxTokens: 5, tools: [{ name: 'core.kv.get', parameters: {} }] }, 'tools[0].name'],
    ['a tool listed twice', { prompt: 'a', maxTokens: 5, tools: [{ name: 'f', parameters: {} }, { name: 'f', parameters: {} }] }, 'tools[1].name'],
    ['tool parameters that are not an object', { prompt: 'a', maxTokens: 5, tools: [{ name: 'f', parameters: [] }] }, 'tools[0].parameters'],
    ['too many tools', { prompt: 'a', maxTokens: 5, tools: Array.from({ length: 129 }, (_, i) => ({ name: `f${i}`, parameters: {} })) }, 'tools'],
    ['a response schema without a name', { prompt: 'a', maxTokens: 5, responseSchema: { schema: {} } }, 'responseSchema.name'],
    ['a response schema that is not an object', { prompt: 'a', maxTokens: 5, responseSchema: { name: 'x', schema: 'string' } }, 'responseSchema.schema'],
    ['an empty system text', { prompt: 'a', system: '', maxTokens: 5 }, 'system'],
    ['zero maxTokens', { prompt: 'a', maxTokens: 0 }, 'maxTokens'],
    ['a temperature above 2', { prompt: 'a', maxTokens: 5, temperature: 3 }, 'temperature'],
  ])('refuses a request with %s as UHLP_LLM_INVALID_REQUEST', async (_name, request, field) => {
    const provider = createScriptedProvider({ entries: [], default: 'x' });
    await expect(provider.generate(request as never)).rejects.toMatchObject({ code: 'UHLP_LLM_INVALID_REQUEST', details: { field } });
  });
});
