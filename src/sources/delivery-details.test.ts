import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../shared/canonical-json.js';
import type { DeliveryKind, DeliveryMessage } from '../state/delivery-store.js';
import { deliveryRequestDataJson } from './delivery-details.js';

const message = (payload: string): DeliveryMessage => ({ id: '1700000000000-3', invocationId: 'inv "1"\n', payload, attempt: 2, publishedAt: 1700000000000 });

describe('deliveryRequestDataJson', () => {
  const cases: Array<[DeliveryKind, string]> = [
    ['queue', '{"z":1,"a":{"y":[3,{"c":1,"b":2}],"x":"\\u2028"},"__proto__":{"k":1}}'],
    ['queue', '"plain text"'],
    ['queue', 'null'],
    ['cron', '{"scheduledTime":"2026-01-01T03:00:00.000Z","jobId":"nightly"}'],
    ['callback', '{"name":"paid","headers":{"x-b":"1","a":"2"},"correlation":"o-1","callbackUrl":"/_uhlp/callbacks/t","bodyEncoding":"utf8","body":"{}"}'],
    ['trigger', '{"triggerEvent":"order.created","sourceAppId":"shop","payload":{"b":1,"a":2},"depth":1}'],
  ];
  it.each(cases)('writes canonical JSON for a %s message (%s)', (kind, payload) => {
    const json = deliveryRequestDataJson(kind, 'orders', message(payload));
    expect(json).toBe(canonicalJson(JSON.parse(json)));
    const data = JSON.parse(json) as Record<string, any>;
    expect(data.source).toBe(kind);
    expect(data.delivery).toEqual({ attempt: 2, invocationId: 'inv "1"\n' });
  });

  it('gives a queue message its queue name, entry id and payload', () => {
    expect(JSON.parse(deliveryRequestDataJson('queue', 'orders', message('{"n":1}'))).queueDetails).toEqual({ messageId: '1700000000000-3', payload: { n: 1 }, queueName: 'orders' });
  });
});
