/**
 * The runtime state of the delivery sources (queues, cron, callbacks, internal
 * triggers, async invocations): delivery streams with a consumer group, retries
 * waiting for their due time, dead letters, per-slot cron claims, single-use
 * marks and invocation results. Two implementations pass one shared suite:
 * `MemoryDeliveryStore` (the embedded default: the same semantics in this
 * process, lost on restart) and `RedisDeliveryStore` (Redis Streams, shared by
 * every core on one Redis, where any producer may `XADD` to a queue's stream).
 *
 * A stream entry has the fields `payload` (JSON text; anything else is taken as
 * a JSON string), and optionally `invocationId` (the dedup key; the entry id when
 * absent), `attempt` (1 when absent), `publishedAt` (epoch ms; the entry id's time
 * when absent) and `meta` (the core's own JSON, e.g. a trigger's depth).
 */
import type { KeptAnswer } from './idempotency-store.js';

/** Which source a delivery stream belongs to. */
export type DeliveryKind = 'queue' | 'cron' | 'callback' | 'trigger';

/** One delivery stream: a route's queue. */
export interface StreamAddress {
  readonly kind: DeliveryKind;
  readonly app: string;
  /** The queue name, cron job id, callback name, or trigger route name. */
  readonly name: string;
}

export interface PublishInput {
  /** JSON text. */
  readonly payload: string;
  /** The dedup key of the message. @defaultValue the entry id */
  readonly invocationId?: string;
  /** The core's own JSON about the message. @defaultValue none */
  readonly meta?: string;
}

export interface DeliveryMessage {
  /** The stream entry id; a retry re-enters the stream under a new one. */
  readonly id: string;
  /** Stable across retries and redrives: the dedup key given to the script. */
  readonly invocationId: string;
  /** JSON text. */
  readonly payload: string;
  /** 1 for the first delivery; counts retries and reclaims after a core died. */
  readonly attempt: number;
  /** When the message was first published (or redriven), epoch ms. */
  readonly publishedAt: number;
  readonly meta?: string;
}

export interface DeadLetter {
  /** The dead-letter entry id. */
  readonly id: string;
  readonly invocationId: string;
  readonly payload: string;
  readonly attempts: number;
  /** `failed` (maxAttempts used up) or `expired` (older than maxAgeSeconds). */
  readonly reason: string;
  /** The last failure's code, when there was one. */
  readonly error?: string;
  /** The last failure's message, when it had one. */
  readonly errorMessage?: string;
  /** Where the last failure's script threw (its frames, contract/error-stack.ts), for a script exception. */
  readonly errorStack?: string;
  readonly deadAt: number;
}

/** Why a message's last delivery failed, as its dead letter keeps it. */
export interface DeliveryFailure {
  readonly code: string;
  readonly message?: string;
  readonly stack?: string;
}

export interface StreamStats {
  /** Messages in the stream (waiting or being processed) plus those waiting for a retry. */
  readonly depth: number;
  /** Of those, delivered to a consumer and not settled yet. */
  readonly pending: number;
  /** Of those, waiting for their retry's due time. */
  readonly retrying: number;
  readonly deadLetters: number;
  /** Age of the oldest message counted in depth, ms; 0 when there is none. */
  readonly oldestAgeMs: number;
}

/** A reader of one consumer loop: on Redis it holds a connection of its own, since a blocking read holds its connection. */
export interface DeliveryReader {
  /** New messages for `consumer`, at most `count`, waiting up to `blockMs` for the first. */
  read(address: StreamAddress, consumer: string, count: number, blockMs: number): Promise<DeliveryMessage[]>;
  /** Ends a read in progress (it resolves empty) and frees the reader. */
  close(): Promise<void>;
}

/** The consumer group every core reads a delivery stream with. */
export const DELIVERY_GROUP = 'uhlp';

export interface DeliveryStore {
  readonly kind: 'memory' | 'redis';
  /** Appends a message; returns its entry id. */
  publish(address: StreamAddress, input: PublishInput): Promise<string>;
  /** Creates the consumer group (reading from the stream's start) when missing. */
  ensureGroup(address: StreamAddress): Promise<void>;
  reader(): DeliveryReader;
  /** Messages delivered and not settled for more than `minIdleMs`, taken over by `consumer`; each counts as one more attempt. */
  reclaim(address: StreamAddress, consumer: string, minIdleMs: number, count: number): Promise<DeliveryMessage[]>;
  /**
   * Settles messages that succeeded, all in one step: they leave the stream (an id no longer pending is left as it is),
   * and the once-only answers given are kept in the same step, each as `completeIdempotent` keeps it (a memory store
   * needs the runtime store's idempotency records for them: `new MemoryDeliveryStore({ idempotency })`).
   */
  ack(address: StreamAddress, ids: readonly string[], answers?: readonly KeptAnswer[]): Promise<void>;
  /**
   * Takes a failed message out of the stream until `dueAt`, as attempt + 1 (as the same attempt when `charged` is false:
   * a failure that was not the message's); false when it was no longer pending.
   */
  retryLater(address: StreamAddress, message: DeliveryMessage, dueAt: number, charged?: boolean): Promise<boolean>;
  /** Moves retries due by `now` back into the stream; returns how many moved. */
  promoteDue(address: StreamAddress, now: number, limit: number): Promise<number>;
  /** Takes a message out of the stream into the dead letters; false when it was no longer pending. */
  deadLetter(address: StreamAddress, message: DeliveryMessage, reason: string, error?: DeliveryFailure): Promise<boolean>;
  stats(address: StreamAddress, now: number): Promise<StreamStats>;
  /** The oldest dead letters, at most `limit`. */
  deadLetters(address: StreamAddress, limit: number): Promise<DeadLetter[]>;
  /** Moves up to `limit` dead letters back into the stream as fresh messages; returns how many moved. */
  redrive(address: StreamAddress, limit: number, now: number): Promise<number>;

  /**
   * Fires a cron slot: claims it for `claimant` (one claim per slot across cores),
   * records it as the job's last fired slot and publishes `message` onto the
   * route's stream (with its `meta`: the firing's trace context), all at once; false when the slot was
   * claimed already or is not after the last fired slot.
   */
  fireCronSlot(address: StreamAddress, slotMs: number, claimant: string, ttlMs: number, message: Required<Omit<PublishInput, 'meta'>> & Pick<PublishInput, 'meta'>): Promise<boolean>;
  /** The last fired slot of a job, epoch ms; undefined before its first fire. */
  lastCronSlot(app: string, jobId: string): Promise<number | undefined>;

  /** Marks a single-use id as used for `ttlMs`; false when it was used already. */
  useOnce(id: string, ttlMs: number): Promise<boolean>;

  /** Stores an async invocation's record (JSON text) for `ttlMs`. */
  putInvocation(id: string, json: string, ttlMs: number): Promise<void>;
  getInvocation(id: string): Promise<string | undefined>;

  close(): Promise<void>;
}

/** Reads a stream entry's fields into a message, with the defaults a plain XADD leaves out. */
export function messageFromFields(id: string, fields: Readonly<Record<string, string>>, extraAttempts = 0): DeliveryMessage {
  const attempt = positiveInt(fields['attempt']) ?? 1;
  const publishedAt = positiveInt(fields['publishedAt']) ?? entryTime(id);
  const meta = fields['meta'];
  return {
    id,
    invocationId: fields['invocationId'] || id,
    payload: payloadJson(fields['payload']),
    attempt: attempt + extraAttempts,
    publishedAt,
    ...(meta !== undefined ? { meta } : {}),
  };
}

/** The retry-set member of a message's next attempt (numbers as strings: Lua's cjson would write them as floats). */
export function retryMember(message: DeliveryMessage, nonce: string, charged = true): string {
  return JSON.stringify({
    payload: message.payload,
    invocationId: message.invocationId,
    attempt: String(charged ? message.attempt + 1 : message.attempt),
    publishedAt: String(message.publishedAt),
    ...(message.meta !== undefined ? { meta: message.meta } : {}),
    nonce,
  });
}

/** A payload as JSON text: a producer's non-JSON text becomes a JSON string. */
export function payloadJson(raw: string | undefined): string {
  if (raw === undefined) return 'null';
  try {
    JSON.parse(raw);
    return raw;
  } catch {
    return JSON.stringify(raw);
  }
}

/** The epoch ms a stream entry id starts with (`<ms>-<seq>`). */
export function entryTime(id: string): number {
  const ms = Number(id.slice(0, id.indexOf('-')));
  return Number.isFinite(ms) ? ms : 0;
}

function positiveInt(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^\d{1,16}$/.test(raw)) return undefined;
  const value = Number(raw);
  return value > 0 ? value : undefined;
}

/** The fields of a dead letter. */
export function deadLetterFields(message: DeliveryMessage, reason: string, error: DeliveryFailure | undefined, now: number): string[] {
  return [
    'payload',
    message.payload,
    'invocationId',
    message.invocationId,
    'attempts',
    String(message.attempt),
    'reason',
    reason,
    ...(error !== undefined ? ['error', error.code] : []),
    ...(error?.message !== undefined ? ['errorMessage', error.message] : []),
    ...(error?.stack !== undefined ? ['errorStack', error.stack] : []),
    'deadAt',
    String(now),
    ...(message.meta !== undefined ? ['meta', message.meta] : []),
  ];
}

export function deadLetterFromFields(id: string, fields: Readonly<Record<string, string>>): DeadLetter {
  return {
    id,
    invocationId: fields['invocationId'] ?? id,
    payload: payloadJson(fields['payload']),
    attempts: Number(fields['attempts'] ?? 0),
    reason: fields['reason'] ?? 'failed',
    ...(fields['error'] !== undefined ? { error: fields['error'] } : {}),
    ...(fields['errorMessage'] !== undefined ? { errorMessage: fields['errorMessage'] } : {}),
    ...(fields['errorStack'] !== undefined ? { errorStack: fields['errorStack'] } : {}),
    deadAt: Number(fields['deadAt'] ?? entryTime(id)),
  };
}

/** Dead letters kept per stream (the oldest go first past it). */
export const MAX_DEAD_LETTERS = 10_000;
