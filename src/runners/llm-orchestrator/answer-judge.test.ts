import { describe, expect, it } from 'vitest';
import { compileOutputSchema } from '../../contract/output-schema.js';
import { answerJson, judgeAnswer } from './answer-judge.js';

const validate = compileOutputSchema({ type: 'object', properties: { n: { type: 'integer' }, when: { type: 'string', format: 'date' } }, required: ['n'] }).validate!;

describe('judgeAnswer', () => {
  it('answers {"text"} without a schema, whatever the text', () => {
    expect(judgeAnswer('hello', { respond: 'generic' })).toEqual({ output: { text: 'hello' } });
    expect(judgeAnswer(null, { respond: 'generic' })).toEqual({ output: { text: '' } });
  });

  const cases: Array<[name: string, text: string | null, verdict: unknown]> = [
    ['plain JSON', ' {"n": 1} ', { output: { n: 1 } }],
    ['a fenced json block', 'Here:\n```json\n{"n": 2}\n```\nDone.', { output: { n: 2 } }],
    ['a bare fence', '```\n{"n": 3}\n```', { output: { n: 3 } }],
    ['the first fence that parses', '```json\n{nope}\n```\n```json\n{"n": 4}\n```', { output: { n: 4 } }],
    ['no JSON at all', 'four', { errors: [expect.stringMatching(/^the answer is not JSON \(.*\); answer with a JSON value only$/)] }],
    ['an empty answer', '  ', { errors: ['the answer is empty; answer with JSON'] }],
    ['no text', null, { errors: ['the answer is empty; answer with JSON'] }],
    ['a schema violation', '{"n": 1.5, "when": "yesterday"}', { errors: ['/n: must be integer', '/when: must match format "date"'] }],
    ['a missing property', '{}', { errors: ["/: must have required property 'n'"] }],
  ];
  it.each(cases)('with a schema: %s', (_name, text, verdict) => {
    expect(judgeAnswer(text, { validate, respond: 'generic' })).toEqual(verdict);
  });

  const http: Array<[name: string, value: unknown, verdict: unknown]> = [
    ['a response', { statusCode: 201, headers: { 'x-a': 'b', 'set-cookie': ['a=1', 'b=2'] }, body: { ok: true } }, { output: { statusCode: 201, headers: { 'x-a': 'b', 'set-cookie': ['a=1', 'b=2'] }, body: { ok: true } } }],
    ['no headers', { statusCode: 404, body: 'missing' }, { output: { statusCode: 404, body: 'missing' } }],
    ['not an object', [1], { errors: ['/: an HTTP response is an object {statusCode, headers?, body}'] }],
    ['an interim status and no body', { statusCode: 101 }, { errors: ['/statusCode: must be an integer from 200 to 599', "/: must have required property 'body'"] }],
    ['a header name with a space', { statusCode: 200, headers: { 'x a': '1' }, body: '' }, { errors: ['/headers: "x a" is not a header name'] }],
    ['a header value with a line break', { statusCode: 200, headers: { 'x-a': 'ok\r\nset-cookie: stolen=1' }, body: '' }, { errors: ['/headers/x-a: must be a string without line breaks'] }],
    ['a header value that is a number', { statusCode: 200, headers: { 'x-a': 1 }, body: '' }, { errors: ['/headers/x-a: must be a string without line breaks'] }],
  ];
  it.each(http)('respond httpResponse: %s', (_name, value, verdict) => {
    expect(judgeAnswer(JSON.stringify(value), { respond: 'httpResponse' })).toEqual(verdict);
  });

  it('reports schema and HTTP problems together, at most 20', () => {
    const many = compileOutputSchema({ type: 'object', patternProperties: { '^k': { type: 'string' } } }).validate!;
    const value = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, i]));
    const verdict = judgeAnswer(JSON.stringify(value), { validate: many, respond: 'httpResponse' }) as { errors: string[] };
    expect(verdict.errors).toHaveLength(20);
  });

  it('finds JSON values of every kind', () => {
    expect(answerJson('42')).toEqual({ value: 42 });
    expect(answerJson('"s"')).toEqual({ value: 's' });
    expect(answerJson('```JSON\n[1,2]```')).toEqual({ value: [1, 2] });
  });
});
