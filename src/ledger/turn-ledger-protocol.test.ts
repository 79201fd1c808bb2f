import { describe, expect, it } from 'vitest';
import { decodeTurns, encodeTurn, type TurnRecord } from './turn-ledger-protocol.js';

const base: TurnRecord = {
  tier: 'development',
  sessionId: 'SES-20261122T000000000Z-ABCDEFGHJKMNPQRSTVWX',
  turnNumber: 3,
  status: 'ok',
  queryJson: '{"httpDetails":{"body":"a\\tb\\nc"},"source":"http"}',
};

describe('turn lines', () => {
  const cases: Array<[string, TurnRecord]> = [
    ['a turn that failed before an answer', { ...base, status: 'UHLP_SANDBOX_TIMEOUT' }],
    ['a turn with an answer', { ...base, answerJson: '{"requestId":"r","resultType":"generic","data":{"x":"\\t"}}' }],
    ['a turn with its request id', { ...base, requestId: 'w3-17', answerJson: '{"data":1}' }],
    [
      'a turn with evidence',
      {
        ...base,
        answerJson: '{"data":1}',
        externalCalls: [{ kind: 'mcp', target: 'core.kv.get', status: 'ok', duration_ms: 1 }],
        capabilityViolations: [{ operation: 'shell rm', capability: 'capabilities.shell.argv', detail: 'tab\there', timestamp: 't' }],
      },
    ],
  ];
  it.each(cases)('carries %s unchanged', (_name, record) => {
    expect(decodeTurns(encodeTurn(record) + encodeTurn({ ...record, turnNumber: 4 }))).toEqual([record, { ...record, turnNumber: 4 }]);
  });

  it('turns the layout whitespace of a runner answer into spaces, which keeps its meaning', () => {
    const answerJson = '{\n\t"data": {\r\n\t\t"a": "x\\ty"\n\t}\n}';
    const [decoded] = decodeTurns(encodeTurn({ ...base, answerJson }));
    expect(JSON.parse(decoded!.answerJson!)).toEqual(JSON.parse(answerJson));
  });
});
