import { describe, expect, it } from 'vitest';
import { UhlpError } from '../../shared/errors.js';
import { ExecuteBadRequestError } from '../../shared/runner-errors.js';
import { errorResult, resultFromThrown, resultFromValue } from './script-result.js';

describe('resultFromValue', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const cases: Array<[name: string, value: unknown, expected: unknown]> = [
    ['plain object is generic', { a: 1 }, { resultType: 'generic', data: { a: 1 } }],
    ['undefined is generic null', undefined, { resultType: 'generic', data: null }],
    ['array is generic', [1, 2], { resultType: 'generic', data: [1, 2] }],
    ['string statusCode is not an http response', { statusCode: '200' }, { resultType: 'generic', data: { statusCode: '200' } }],
    [
      'statusCode object is an http response',
      { statusCode: 201, headers: { 'x-n': 5 }, body: 'ok' },
      { resultType: 'httpResponse', data: { statusCode: 201, headers: { 'x-n': '5' }, body: 'ok', bodyEncoding: 'utf8' } },
    ],
    [
      'isBase64Encoded selects base64',
      { statusCode: 200, body: 'AAE=', isBase64Encoded: true },
      { resultType: 'httpResponse', data: { statusCode: 200, headers: {}, body: 'AAE=', bodyEncoding: 'base64' } },
    ],
    [
      'object body is sent as JSON',
      { statusCode: 200, body: { a: 1 } },
      { resultType: 'httpResponse', data: { statusCode: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"a":1}', bodyEncoding: 'utf8' } },
    ],
    ['statusCode out of range', { statusCode: 700 }, { resultType: 'error', data: { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'statusCode must be an integer 100-599, got 700', status: 500 } }],
    ['cyclic value', cyclic, { resultType: 'error', data: { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'the returned value is not JSON-serializable', status: 500 } }],
  ];
  it.each(cases)('%s', (_name, value, expected) => {
    expect(resultFromValue(value)).toEqual(expected);
  });
});

describe('resultFromThrown', () => {
  const cases: Array<[name: string, thrown: unknown, expected: unknown]> = [
    [
      'error with code, status and details',
      Object.assign(new Error('no money'), { code: 'INSUFFICIENT_FUNDS', status: 402, details: { balance: 1 } }),
      { resultType: 'error', data: { code: 'INSUFFICIENT_FUNDS', message: 'no money', status: 402, details: { balance: 1 } } },
    ],
    ['error with code only', Object.assign(new Error('x'), { code: 'X' }), { resultType: 'error', data: { code: 'X', message: 'x' } }],
    ['plain error', new TypeError('bad'), { resultType: 'error', data: { code: 'UHLP_SCRIPT_EXCEPTION', message: 'bad', status: 500 } }],
    ['numeric code is not an app code', Object.assign(new Error('e'), { code: 5 }), { resultType: 'error', data: { code: 'UHLP_SCRIPT_EXCEPTION', message: 'e', status: 500 } }],
    ['thrown string', 'boom', { resultType: 'error', data: { code: 'UHLP_SCRIPT_EXCEPTION', message: 'the script threw "boom"', status: 500 } }],
  ];
  it.each(cases)('%s', (_name, thrown, expected) => {
    expect(resultFromThrown(thrown)).toEqual(expected);
  });

  it('never includes a stack trace', () => {
    const result = resultFromThrown(new Error('deep'));
    expect(JSON.stringify(result)).not.toContain('at ');
  });
});

describe('errorResult', () => {
  it("answers a registry error with its code, message, the registry's status and its details", () => {
    expect(errorResult(new UhlpError('UHLP_CS_DENIED', 'no kv', { capability: 'kv' }))).toEqual({ resultType: 'error', data: { code: 'UHLP_CS_DENIED', message: 'no kv', status: 403, details: { capability: 'kv' } } });
    expect(errorResult(new ExecuteBadRequestError('not an LLM task'))).toEqual({ resultType: 'error', data: { code: 'UHLP_EXECUTE_BAD_REQUEST', message: 'not an LLM task', status: 500 } });
  });

  it('is what a thrown registry error maps to', () => {
    const error = new UhlpError('UHLP_ORACLE_DECLINED', 'declined');
    expect(resultFromThrown(error)).toEqual(errorResult(error));
  });
});
