/**
 * The embedded default of the delivery store: streams, the consumer group,
 * retries, dead letters, cron claims and single-use marks in this process, with
 * the semantics of the Redis store (the shared suite holds both to them). Lost
 * on restart: a message published and not settled when the core stops is gone.
 */
import { randomUUID } from 'node:crypto';
import {
  deadLetterFields,
  deadLetterFromFields,
  type DeliveryFailure,
  MAX_DEAD_LETTERS,
  messageFromFields,
  retryMember,
  type DeadLetter,
  type DeliveryMessage,
  type DeliveryReader,
  type DeliveryStore,
  type PublishInput,
  type StreamAddress,
  type StreamStats,
} from './delivery-store.js';
import { checkKeptAnswer, type IdempotencyStore, type KeptAnswer } from './idempotency-store.js';
import { UhlpError } from '../shared/errors.js';

interface PendingEntry {
  consumer: string;
  deliveredAt: number;
  count: number;
}

interface MemoryStream {
  entries: Map<string, Record<string, string>>;
  /** Entry ids delivered to no consumer yet, oldest first. */
  undelivered: string[];
  pending: Map<string, PendingEntry>;
  retries: Array<{ due: number; member: string }>;
  dead: Map<string, Record<string, string>>;
  waiters: Set<() => void>;
}

export interface MemoryDeliveryStoreOptions {
  /**
   * The runtime store's once-only records, where `ack` keeps the answers settled
   * with their acknowledgement (on Redis the same script does both).
   * @defaultValue none: an `ack` with answers is refused
   */
  readonly idempotency?: Pick<IdempotencyStore, 'completeIdempotent'>;
}

export class MemoryDeliveryStore implements DeliveryStore {
  readonly kind = 'memory' as const;
  private readonly streams = new Map<string, MemoryStream>();
  private lastMs = 0;
  private seq = 0;
  private readonly cronClaims = new Map<string, number>();
  private readonly cronLast = new Map<string, number>();
  private readonly used = new Map<string, number>();
  private readonly invocations = new Map<string, { json: string; expiresAt: number }>();
  private closed = false;

  constructor(private readonly options: MemoryDeliveryStoreOptions = {}) {}

  async publish(address: StreamAddress, input: PublishInput): Promise<string> {
    const fields: Record<string, string> = { payload: input.payload };
    if (input.invocationId !== undefined) fields['invocationId'] = input.invocationId;
    if (input.meta !== undefined) fields['meta'] = input.meta;
    return this.append(this.stream(address), fields);
  }

  async ensureGroup(address: StreamAddress): Promise<void> {
    this.stream(address);
  }

  reader(): DeliveryReader {
    let closed = false;
    const wakers = new Set<() => void>();
    return {
      read: async (address, consumer, count, blockMs) => {
        const stream = this.stream(address);
        const deadline = Date.now() + blockMs;
        for (;;) {
          if (closed || this.closed) return [];
          const taken = this.deliver(stream, consumer, count);
          if (taken.length > 0 || Date.now() >= deadline) return taken;
          await new Promise<void>((resolve) => {
            const wake = (): void => {
              clearTimeout(timer);
              stream.waiters.delete(wake);
              wakers.delete(wake);
              resolve();
            };
            const timer = setTimeout(wake, Math.max(1, deadline - Date.now()));
            stream.waiters.add(wake);
            wakers.add(wake);
          });
        }
      },
      close: async () => {
        closed = true;
        for (const wake of [...wakers]) wake();
      },
    };
  }

  async reclaim(address: StreamAddress, consumer: string, minIdleMs: number, count: number): Promise<DeliveryMessage[]> {
    const stream = this.stream(address);
    const now = Date.now();
    const taken: DeliveryMessage[] = [];
    for (const [id, entry] of stream.pending) {
      if (taken.length >= count) break;
      if (now - entry.deliveredAt < minIdleMs) continue;
      entry.consumer = consumer;
      entry.deliveredAt = now;
      entry.count += 1;
      taken.push(messageFromFields(id, stream.entries.get(id)!, entry.count - 1));
    }
    return taken;
  }

  async ack(address: StreamAddress, ids: readonly string[], answers: readonly KeptAnswer[] = []): Promise<void> {
    const stream = this.stream(address);
    if (answers.length > 0) {
      const records = this.options.idempotency;
      if (records === undefined) throw new UhlpError('UHLP_INTERNAL', 'this delivery store was given no idempotency records to keep answers in');
      // All checked before any is kept: a refused batch settles nothing, as on Redis.
      for (const answer of answers) checkKeptAnswer(answer);
      for (const answer of answers) await records.completeIdempotent(answer.appId, answer.key, answer.response, answer.ttlMs);
    }
    for (const id of ids) if (stream.pending.delete(id)) stream.entries.delete(id);
  }

  async retryLater(address: StreamAddress, message: DeliveryMessage, dueAt: number, charged = true): Promise<boolean> {
    const stream = this.stream(address);
    if (!stream.pending.delete(message.id)) return false;
    stream.entries.delete(message.id);
    stream.retries.push({ due: dueAt, member: retryMember(message, randomUUID(), charged) });
    stream.retries.sort((a, b) => a.due - b.due);
    return true;
  }

  async promoteDue(address: StreamAddress, now: number, limit: number): Promise<number> {
    const stream = this.stream(address);
    let moved = 0;
    while (moved < limit && stream.retries.length > 0 && stream.retries[0]!.due <= now) {
      const { member } = stream.retries.shift()!;
      const message = JSON.parse(member) as Record<string, string>;
      const fields: Record<string, string> = {
        payload: message['payload']!,
        invocationId: message['invocationId']!,
        attempt: message['attempt']!,
        publishedAt: message['publishedAt']!,
      };
      if (message['meta'] !== undefined) fields['meta'] = message['meta'];
      this.append(stream, fields);
      moved += 1;
    }
    return moved;
  }

  async deadLetter(address: StreamAddress, message: DeliveryMessage, reason: string, error?: DeliveryFailure): Promise<boolean> {
    const stream = this.stream(address);
    if (message.id !== '') {
      if (!stream.pending.delete(message.id)) return false;
      stream.entries.delete(message.id);
    }
    const flat = deadLetterFields(message, reason, error, Date.now());
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    stream.dead.set(this.nextId(), fields);
    if (stream.dead.size > MAX_DEAD_LETTERS) stream.dead.delete(stream.dead.keys().next().value!);
    return true;
  }

  async stats(address: StreamAddress, now: number): Promise<StreamStats> {
    const stream = this.stream(address);
    let oldest = Infinity;
    const first = stream.entries.entries().next().value;
    if (first) oldest = messageFromFields(first[0], first[1]).publishedAt;
    for (const { member } of stream.retries) oldest = Math.min(oldest, Number((JSON.parse(member) as { publishedAt: string }).publishedAt));
    return {
      depth: stream.entries.size + stream.retries.length,
      pending: stream.pending.size,
      retrying: stream.retries.length,
      deadLetters: stream.dead.size,
      oldestAgeMs: oldest === Infinity ? 0 : Math.max(0, now - oldest),
    };
  }

  async deadLetters(address: StreamAddress, limit: number): Promise<DeadLetter[]> {
    const out: DeadLetter[] = [];
    for (const [id, fields] of this.stream(address).dead) {
      if (out.length >= limit) break;
      out.push(deadLetterFromFields(id, fields));
    }
    return out;
  }

  async redrive(address: StreamAddress, limit: number, now: number): Promise<number> {
    const stream = this.stream(address);
    let moved = 0;
    for (const [id, fields] of [...stream.dead]) {
      if (moved >= limit) break;
      const message: Record<string, string> = { payload: fields['payload'] ?? 'null', invocationId: fields['invocationId'] ?? id, attempt: '1', publishedAt: String(now) };
      if (fields['meta'] !== undefined) message['meta'] = fields['meta'];
      this.append(stream, message);
      stream.dead.delete(id);
      moved += 1;
    }
    return moved;
  }

  async fireCronSlot(address: StreamAddress, slotMs: number, _claimant: string, ttlMs: number, message: Required<Omit<PublishInput, 'meta'>> & Pick<PublishInput, 'meta'>): Promise<boolean> {
    const key = JSON.stringify([address.app, address.name, slotMs]);
    const lastKey = JSON.stringify([address.app, address.name]);
    const now = Date.now();
    if (slotMs <= (this.cronLast.get(lastKey) ?? -1)) return false;
    const until = this.cronClaims.get(key);
    if (until !== undefined && until > now) return false;
    this.cronClaims.set(key, now + ttlMs);
    this.cronLast.set(lastKey, slotMs);
    // Claims of the past have no use once expired: the map holds only the recent ones.
    if (this.cronClaims.size > 10_000) for (const [k, t] of this.cronClaims) if (t <= now) this.cronClaims.delete(k);
    this.append(this.stream(address), { payload: message.payload, invocationId: message.invocationId, ...(message.meta !== undefined ? { meta: message.meta } : {}) });
    return true;
  }

  async lastCronSlot(app: string, jobId: string): Promise<number | undefined> {
    return this.cronLast.get(JSON.stringify([app, jobId]));
  }

  async useOnce(id: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const until = this.used.get(id);
    if (until !== undefined && until > now) return false;
    this.used.set(id, now + ttlMs);
    if (this.used.size > 100_000) for (const [k, t] of this.used) if (t <= now) this.used.delete(k);
    return true;
  }

  async putInvocation(id: string, json: string, ttlMs: number): Promise<void> {
    const now = Date.now();
    this.invocations.set(id, { json, expiresAt: now + ttlMs });
    if (this.invocations.size > 100_000) for (const [k, v] of this.invocations) if (v.expiresAt <= now) this.invocations.delete(k);
  }

  async getInvocation(id: string): Promise<string | undefined> {
    const found = this.invocations.get(id);
    return found !== undefined && found.expiresAt > Date.now() ? found.json : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const stream of this.streams.values()) for (const wake of [...stream.waiters]) wake();
  }

  private stream(address: StreamAddress): MemoryStream {
    const key = JSON.stringify([address.kind, address.app, address.name]);
    let stream = this.streams.get(key);
    if (stream === undefined) {
      stream = { entries: new Map(), undelivered: [], pending: new Map(), retries: [], dead: new Map(), waiters: new Set() };
      this.streams.set(key, stream);
    }
    return stream;
  }

  private append(stream: MemoryStream, fields: Record<string, string>): string {
    const id = this.nextId();
    stream.entries.set(id, fields);
    stream.undelivered.push(id);
    for (const wake of [...stream.waiters]) wake();
    return id;
  }

  private deliver(stream: MemoryStream, consumer: string, count: number): DeliveryMessage[] {
    const taken: DeliveryMessage[] = [];
    while (taken.length < count && stream.undelivered.length > 0) {
      const id = stream.undelivered.shift()!;
      const fields = stream.entries.get(id);
      if (fields === undefined) continue;
      stream.pending.set(id, { consumer, deliveredAt: Date.now(), count: 1 });
      taken.push(messageFromFields(id, fields));
    }
    return taken;
  }

  /** Ids as Redis makes them: `<ms>-<seq>`, increasing. */
  private nextId(): string {
    const now = Date.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.seq = 0;
    } else {
      this.seq += 1;
    }
    return `${this.lastMs}-${this.seq}`;
  }
}
