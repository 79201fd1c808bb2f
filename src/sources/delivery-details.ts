/**
 * The contract's requestData of a delivered message: `cronDetails`,
 * `queueDetails`, `callbackDetails` or `triggerDetails`, and `delivery`
 * (invocation id and attempt). Written in canonical JSON (keys in code-unit
 * order, shared/canonical-json.ts), as http-details.ts writes `httpDetails`:
 * the text the sandbox gets is the text the ledger hashes.
 *
 * A queue message's payload is the producer's JSON; the other sources publish
 * their details object itself as the payload.
 */
import { canonicalJson, quote } from '../shared/canonical-json.js';
import type { DeliveryKind, DeliveryMessage } from '../state/delivery-store.js';

export function deliveryRequestDataJson(kind: DeliveryKind, queueName: string, message: DeliveryMessage): string {
  const delivery = `{"attempt":${message.attempt},"invocationId":${quote(message.invocationId)}}`;
  const payload = canonicalJson(JSON.parse(message.payload) as unknown);
  switch (kind) {
    case 'queue':
      return `{"delivery":${delivery},"queueDetails":{"messageId":${quote(message.id)},"payload":${payload},"queueName":${quote(queueName)}},"source":"queue"}`;
    case 'cron':
      return `{"cronDetails":${payload},"delivery":${delivery},"source":"cron"}`;
    case 'callback':
      return `{"callbackDetails":${payload},"delivery":${delivery},"source":"callback"}`;
    case 'trigger':
      return `{"delivery":${delivery},"source":"trigger","triggerDetails":${payload}}`;
  }
}
