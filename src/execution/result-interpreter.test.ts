import { describe, expect, it } from 'vitest';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import { interpretResult } from './result-interpreter.js';

const rid = 'req-1';
const json = 'application/json; charset=utf-8';

describe('interpretResult', () => {
  const cases: Array<[name: string, response: Omit<ExecuteResponse, 'requestId'>, status: number, headers: Record<string, unknown>, body: unknown]> = [
    ['generic object', { resultType: 'generic', data: { a: 1 } }, 200, { 'content-type': json }, '{"a":1}'],
    ['generic null', { resultType: 'generic', data: null }, 200, { 'content-type': json }, 'null'],
    ['generic string', { resultType: 'generic', data: 'x' }, 200, { 'content-type': json }, '"x"'],
    [
      'httpResponse text',
      { resultType: 'httpResponse', data: { statusCode: 201, headers: { Location: '/x', 'X-A': ['1', '2'] }, body: 'made', bodyEncoding: 'utf8' } },
      201,
      { location: '/x', 'x-a': ['1', '2'] },
      'made',
    ],
    [
      'httpResponse drops hop-by-hop and framing headers',
      { resultType: 'httpResponse', data: { statusCode: 200, headers: { 'Content-Length': '999', Connection: 'close', 'Transfer-Encoding': 'chunked', 'X-Request-ID': 'spoof' }, body: '' } },
      200,
      {},
      '',
    ],
    [
      "httpResponse drops the core's own x-uhlp-* headers, in any case",
      {
        resultType: 'httpResponse',
        data: { statusCode: 200, headers: { 'X-UHLP-Session-ID': 'SES-forged', 'x-uhlp-run-id': 'RUN-forged', 'X-Uhlp-Turn': '9', 'x-uhlp': 'kept', 'x-uhlpx': 'kept' }, body: '' },
      },
      200,
      { 'x-uhlp': 'kept', 'x-uhlpx': 'kept' },
      '',
    ],
    ['httpResponse without body', { resultType: 'httpResponse', data: { statusCode: 204 } }, 204, {}, ''],
    [
      'httpResponse base64',
      { resultType: 'httpResponse', data: { statusCode: 200, body: Buffer.from([0, 255, 1]).toString('base64'), bodyEncoding: 'base64' } },
      200,
      {},
      Buffer.from([0, 255, 1]),
    ],
    [
      'error with its status',
      { resultType: 'error', data: { code: 'NOPE', message: 'no', status: 409, details: { k: 1 } } },
      409,
      { 'content-type': json },
      JSON.stringify({ code: 'NOPE', message: 'no', requestId: rid, details: { k: 1 } }),
    ],
    [
      'error with retryAfterSeconds: Retry-After, rounded up',
      { resultType: 'error', data: { code: 'UHLP_LLM_BUDGET_EXCEEDED', message: 'm', status: 429, details: { retryAfterSeconds: 5399.2 } } },
      429,
      { 'content-type': json, 'retry-after': '5400' },
      JSON.stringify({ code: 'UHLP_LLM_BUDGET_EXCEEDED', message: 'm', requestId: rid, details: { retryAfterSeconds: 5399.2 } }),
    ],
    [
      'error with retryAfterSeconds 0',
      { resultType: 'error', data: { code: 'X', message: 'm', status: 503, details: { retryAfterSeconds: 0 } } },
      503,
      { 'content-type': json, 'retry-after': '0' },
      JSON.stringify({ code: 'X', message: 'm', requestId: rid, details: { retryAfterSeconds: 0 } }),
    ],
    [
      'error with a retryAfterSeconds that is no number of seconds: no Retry-After',
      { resultType: 'error', data: { code: 'X', message: 'm', status: 429, details: { retryAfterSeconds: '60\r\nx-injected: 1' } } },
      429,
      { 'content-type': json },
      JSON.stringify({ code: 'X', message: 'm', requestId: rid, details: { retryAfterSeconds: '60\r\nx-injected: 1' } }),
    ],
    [
      'error with a negative retryAfterSeconds: no Retry-After',
      { resultType: 'error', data: { code: 'X', message: 'm', status: 429, details: { retryAfterSeconds: -5 } } },
      429,
      { 'content-type': json },
      JSON.stringify({ code: 'X', message: 'm', requestId: rid, details: { retryAfterSeconds: -5 } }),
    ],
    ['error without status', { resultType: 'error', data: { code: 'X', message: 'm' } }, 422, { 'content-type': json }, JSON.stringify({ code: 'X', message: 'm', requestId: rid })],
    ['error with a 2xx status', { resultType: 'error', data: { code: 'X', message: 'm', status: 200 } }, 422, { 'content-type': json }, JSON.stringify({ code: 'X', message: 'm', requestId: rid })],
    ['error with status 600', { resultType: 'error', data: { code: 'X', message: 'm', status: 600 } }, 422, { 'content-type': json }, JSON.stringify({ code: 'X', message: 'm', requestId: rid })],
    ['error with status 599', { resultType: 'error', data: { code: 'X', message: 'm', status: 599 } }, 599, { 'content-type': json }, JSON.stringify({ code: 'X', message: 'm', requestId: rid })],
    [
      'workflowStep',
      { resultType: 'workflowStep', data: { workflowId: 'w', stepId: 's', status: 'completed' } },
      200,
      { 'content-type': json },
      '{"workflowId":"w","stepId":"s","status":"completed"}',
    ],
  ];
  it.each(cases)('%s', (_name, response, status, headers, body) => {
    const final = interpretResult({ requestId: rid, ...response }, rid);
    expect(final.status).toBe(status);
    expect(final.headers).toEqual(headers);
    expect(final.body).toEqual(body);
  });

  const refused: Array<[name: string, data: Record<string, unknown>, violation: string]> = [
    ['an interim status', { statusCode: 101, headers: { upgrade: 'x' } }, '/data/statusCode'],
    ['a header value with CR LF', { statusCode: 200, headers: { 'x-a': 'ok\r\nset-cookie: stolen=1' } }, '/data/headers/x-a'],
    ['a header value with LF in a list', { statusCode: 200, headers: { 'x-a': ['fine', 'bad\nline'] } }, '/data/headers/x-a'],
    ['a header name with a space', { statusCode: 200, headers: { 'x a': '1' } }, '/data/headers'],
    ['a header value past Latin-1', { statusCode: 200, headers: { 'x-a': 'snow \u2603' } }, '/data/headers/x-a'],
  ];
  it.each(refused)('refuses an httpResponse with %s as a bad sandbox answer', (_name, data, violation) => {
    expect(() => interpretResult({ requestId: rid, resultType: 'httpResponse', data }, rid)).toThrow(
      expect.objectContaining({ code: 'UHLP_SANDBOX_BAD_RESPONSE', message: expect.stringContaining(violation) }),
    );
  });

  it('drops a Date header from the sandbox: the core writes its own', () => {
    expect(interpretResult({ requestId: rid, resultType: 'httpResponse', data: { statusCode: 200, headers: { Date: 'x' } } }, rid).headers).toEqual({});
  });

  describe("a script exception's stack", () => {
    const stack = 'at track (lib/track.mjs:2:3)\nat hello (scripts/click.mjs:3:10)';
    const thrown = (data: Record<string, unknown>): ExecuteResponse => ({ requestId: rid, resultType: 'error', data: { code: 'UHLP_SCRIPT_EXCEPTION', message: 'clickz is not defined', status: 500, ...data } });

    it("is never in the client's body, and is the turn's failure for operators", () => {
      const final = interpretResult(thrown({ stack }), rid);
      expect(final.status).toBe(500);
      expect(JSON.parse(final.body as string)).toEqual({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'clickz is not defined', requestId: rid });
      expect(final.failure).toEqual({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'clickz is not defined', stack });
    });

    it('is in details.stack when the dev setting asks, beside the details the error has', () => {
      expect(JSON.parse(interpretResult(thrown({ stack }), rid, { exposeStack: true }).body as string).details).toEqual({ stack });
      expect(JSON.parse(interpretResult(thrown({ stack, details: { id: 7 } }), rid, { exposeStack: true }).body as string).details).toEqual({ id: 7, stack });
      // Details that are not an object are the app's as they are.
      expect(JSON.parse(interpretResult(thrown({ stack, details: [1] }), rid, { exposeStack: true }).body as string).details).toEqual([1]);
      expect(JSON.parse(interpretResult(thrown({}), rid, { exposeStack: true }).body as string).details).toBeUndefined();
    });

    it("is bounded again by the core, whatever the sandbox sent: frames, size, control characters", () => {
      const hostile = `${Array.from({ length: 100 }, (_, i) => `at f${i} (a.js:${i}:1)\u001b[2J`).join('\n')}\n${'x'.repeat(100_000)}`;
      const final = interpretResult(thrown({ stack: hostile, message: `\u001b]0;owned\u0007${'m'.repeat(10_000)}` }), rid);
      const lines = final.failure!.stack!.split('\n');
      expect(lines).toHaveLength(20);
      expect(final.failure!.stack).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
      expect(final.failure!.stack!.length).toBeLessThanOrEqual(4096);
      expect(final.failure!.message).not.toMatch(/[\u0000-\u001f]/);
      expect(final.failure!.message.length).toBeLessThanOrEqual(2048);
    });
  });
});
