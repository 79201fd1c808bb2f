import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UhlpError } from '../errors.js';
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
    expect(sunny).toEqual({ text: 'It is sunny.', model: 'scripted', usage: { prompt: 7, completion: 3 } });

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

  it.each([
    ['broken YAML', 'answers: [', undefined],
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
    ['an unknown role', { messages: [{ role: 'tool', content: 'b' }], maxTokens: 5 }, 'messages[0]'],
    ['zero maxTokens', { prompt: 'a', maxTokens: 0 }, 'maxTokens'],
    ['a temperature above 2', { prompt: 'a', maxTokens: 5, temperature: 3 }, 'temperature'],
  ])('refuses a request with %s as UHLP_LLM_INVALID_REQUEST', async (_name, request, field) => {
    const provider = createScriptedProvider({ entries: [], default: 'x' });
    await expect(provider.generate(request as never)).rejects.toMatchObject({ code: 'UHLP_LLM_INVALID_REQUEST', details: { field } });
  });
});
