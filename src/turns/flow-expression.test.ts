import { describe, expect, it } from 'vitest';
import { FlowExpressionError, flowKeyOf, flowPriorityOf, parseFlowExpression } from './flow-expression.js';
import { flowEventViewOf } from './flow-event-view.js';

const http = flowEventViewOf(
  JSON.stringify({
    httpDetails: {
      body: JSON.stringify({ user: { id: 42, tier: 'gold' }, list: [1], flag: true, long: 'x'.repeat(500), nested: { constructor: 'own' } }),
      bodyEncoding: 'utf8',
      headers: { 'x-tenant': 'acme', 'x-priority': '7' },
      method: 'POST',
      path: '/t/T-1?q=a&q=b',
      pathParameters: { ticket: 'T-1' },
      queryParameters: { q: ['a', 'b'], one: 'x' },
    },
    source: 'http',
  }),
);
const queue = flowEventViewOf(JSON.stringify({ delivery: { attempt: 1, invocationId: 'i' }, queueDetails: { messageId: '1-0', payload: { order: { id: 'o-9' } }, queueName: 'orders' }, source: 'queue' }));

describe('flow expressions', () => {
  // [expression, event, key]
  const keys: Array<[string, typeof http, string]> = [
    ['params.ticket', http, 'T-1'],
    ['headers.x-tenant', http, 'acme'],
    ['headers.X-Tenant', http, 'acme'],
    ['query.q', http, 'a'],
    ['query.one', http, 'x'],
    ['body.user.id', http, '42'],
    ['body.flag', http, 'true'],
    ['body.user', http, ''],
    ['body.list', http, ''],
    ['body.missing.deeper', http, ''],
    ['body.nested.constructor2', http, ''],
    ['payload.order.id', queue, 'o-9'],
    ['body.order.id', queue, 'o-9'],
    ['params.ticket', queue, ''],
  ];
  it.each(keys)('%s reads %j', (text, event, key) => {
    expect(flowKeyOf(parseFlowExpression(text), event)).toBe(key);
  });

  it('reads no prototype: toString, hasOwnProperty are missing fields', () => {
    expect(flowKeyOf(parseFlowExpression('body.toString'), http)).toBe('');
    expect(flowKeyOf(parseFlowExpression('headers.hasOwnProperty'), http)).toBe('');
  });

  it('bounds a long key and keeps two long keys apart', () => {
    const key = flowKeyOf(parseFlowExpression('body.long'), http);
    expect(key.length).toBe(200);
    const other = flowEventViewOf(JSON.stringify({ httpDetails: { body: JSON.stringify({ long: `${'x'.repeat(499)}y` }), bodyEncoding: 'utf8', headers: {} } }));
    expect(flowKeyOf(parseFlowExpression('body.long'), other)).not.toBe(key);
  });

  it('reads a priority as a bounded integer, 0 when not a number', () => {
    expect(flowPriorityOf(parseFlowExpression('headers.x-priority'), http)).toBe(7);
    expect(flowPriorityOf(parseFlowExpression('body.user.tier'), http)).toBe(0);
    expect(flowPriorityOf(parseFlowExpression('body.missing'), http)).toBe(0);
    const huge = flowEventViewOf(JSON.stringify({ queueDetails: { payload: { p: 1e300 } } }));
    expect(flowPriorityOf(parseFlowExpression('payload.p'), huge)).toBe(1_000_000);
  });

  const hostile = [
    '',
    'process.env.SECRET',
    'body',
    'body.',
    'body..a',
    'body.a[0]',
    "body['a']",
    'body.__proto__',
    'body.constructor.name',
    'params.prototype',
    'body.a + 1',
    'headers.x;rm',
    'body.a()',
    '`${x}`',
    `body.${'a.'.repeat(9)}b`,
    `body.${'a'.repeat(65)}`,
    `body.${'a'.repeat(300)}`,
  ];
  it.each(hostile)('refuses %j', (text) => {
    expect(() => parseFlowExpression(text)).toThrow(FlowExpressionError);
  });
});
