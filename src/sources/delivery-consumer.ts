/**
 * One delivery route's consumer on this core: reads its stream through the
 * consumer group, runs up to `concurrency` messages at once through the turn
 * pipeline, and settles each by the one delivery contract:
 *
 * - a message older than `maxAgeSeconds` goes to the dead letters without running (`expired`);
 * - an answer with status < 400 is a success: the message is acknowledged;
 * - a failure (status >= 400, or the turn failed) is retried after a backoff, as the
 *   next attempt, until `maxAttempts`; then it goes to the dead letters (`failed`),
 *   with the last failure's code, message and (a script exception's) stack; each
 *   failed delivery is logged (warn) with its code and message;
 * - a message this core was given and never settled (the core died) is taken over
 *   by a live core after the route's lease, as one more attempt.
 *
 * Each run is a turn like an HTTP request, once-only by the message's invocation id
 * (a success is kept, so a message settled twice never runs twice after success).
 *
 * Four things keep round trips to the store off a message's path: the loop reads
 * up to `readAhead` messages beyond its free slots (a slot freed starts the next
 * one at once), and with messages still waiting it reads again only once it can
 * take half that many, so a read serves several messages; the once-only records
 * of the messages one read gives are claimed in one script
 * (IdempotencyStore.beginIdempotentMany), not one each as they start, while the
 * next read is already on its way; a success frees its slot before its
 * acknowledgement is answered; and a success's once-only answer is not stored by
 * a script of its own but kept with its acknowledgement, in the group commit
 * that settles the batch (ack-batch.ts): one script per batch completes the
 * records, XACKs and XDELs. A message costs no script of its own: its share of
 * one claim per read and one settle per batch.
 *
 * Completing with the acknowledgement changes what a core that dies leaves
 * behind only between the run's end and its batch's commit: the message is
 * pending and its record in flight, both expire with the route's lease, and the
 * core that takes it over runs it again. Before, that window ended when the
 * record's own script was answered (one round trip after the run); now it ends
 * when the batch is (the same round trip on a quiet stream; under load at most
 * one more batch's, plus the millisecond that spaces batches), and the state
 * where the record was completed but the message still pending is gone: the two
 * are one step. A duplicate delivery meanwhile finds the record in flight and
 * waits for it, never runs.
 *
 * Claiming at the read starts a record's in-flight lease when the message is
 * handed to this core, as the stream's own lease starts, rather than when it
 * runs. A message that starts at once is claimed for the route's lease, as
 * before. One read ahead may wait for a slot, at most one run of the pool
 * (readAhead is only on when the lease covers two), so it is claimed for the
 * lease plus that wait: its record never ends sooner after it starts than it
 * did when it was claimed at its start, so a core taking the message over after
 * the lease still finds it in flight while it runs here. The price is on a core
 * that dies holding claims: the core that takes a message over may find its
 * record in flight up to one run of the pool past the lease, and waits for it
 * to lapse (the once-only wait is that long) before it runs the message in the
 * same attempt. Claims of messages this core will not start (it stops, the
 * route went away, the message expired or used its attempts) are given back.
 * An app with a rate limit is not claimed ahead: a turn the limit refuses ends
 * before its once-only stage and would leave its claim unused, so its messages
 * are claimed as they run. The one other refusal before that stage, input
 * nested too deep, refuses the same payload at every attempt; its claim lapses
 * with its TTL.
 */
import { randomUUID } from 'node:crypto';
import { UhlpError } from '../shared/errors.js';
import { drain } from '../shared/deadline.js';
import { turnDeclaredOutputs } from '../execution/declared-outputs.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { DeliveryFailure, DeliveryKind, DeliveryMessage, DeliveryReader, DeliveryStore, StreamAddress } from '../state/delivery-store.js';
import { MAX_ERROR_MESSAGE_CHARS, neutralText } from '../contract/error-stack.js';
import type { IdempotencyBegin, IdempotencyStore, KeptAnswer } from '../state/idempotency-store.js';
import type { TurnPipeline } from '../turns/turn-pipeline.js';
import { AckBatch } from './ack-batch.js';
import { deliveryRequestDataJson } from './delivery-details.js';
import { minimumLeaseMs, retryDelayMs, type SourceRoute } from './source-routes.js';
import { inDeliverySpan } from '../tracing/delivery-spans.js';
import { deliveryOnceKey } from '../state/runtime-keys.js';

export interface DeliveryConsumerDeps {
  readonly store: DeliveryStore;
  readonly pipeline: TurnPipeline;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** This core's consumer name in every group. */
  readonly consumer: string;
  /** The runtime store's once-only records: a read's messages are claimed there in one step. */
  readonly records: Pick<IdempotencyStore, 'beginIdempotentMany' | 'abandonIdempotent'>;
  /** The app and route as the current snapshot has them; undefined once the route is gone. */
  lookup(address: StreamAddress): { app: LoadedApp; route: SourceRoute } | undefined;
}

/** Longest a blocking read waits before the loop looks around (stop, concurrency). */
const BLOCK_MS = 1000;
/** Longest between two looks for due retries and messages to take over. */
const MAINTENANCE_MS = 500;
/** Least time between two acknowledging batches (ack-batch.ts): under load, a batch a millisecond. */
const ACK_SPACING_MS = 1;

export class DeliveryConsumer {
  private readonly reader: DeliveryReader;
  private readonly running = new Set<Promise<void>>();
  /** Messages read ahead of a free slot, oldest first, with their once-only claims. */
  private readonly ready: Claimed[] = [];
  /** Messages read whose claims are not answered yet: they count as read ahead. */
  private claiming = 0;
  /** Hands each read's claimed messages to `ready`, in the order of the reads. */
  private handed: Promise<void> = Promise.resolve();
  /** Successes not acknowledged yet, settled in batches. */
  private readonly acks: AckBatch;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private slotFreed: (() => void) | undefined;
  private lastError = 0;

  constructor(
    readonly address: StreamAddress,
    private readonly deps: DeliveryConsumerDeps,
  ) {
    this.reader = deps.store.reader();
    this.acks = new AckBatch(
      (ids, answers) => deps.store.ack(address, ids, answers),
      (error) => this.reportError(error, 'ack'),
      ACK_SPACING_MS,
    );
  }

  start(): void {
    this.loop = this.readLoop();
    const tick = (): void => {
      void this.maintain().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, MAINTENANCE_MS);
      });
    };
    this.timer = setTimeout(tick, MAINTENANCE_MS);
  }

  /** Stops reading and waits (bounded) for the messages being run; unsettled ones are taken over after their lease. */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.slotFreed?.();
    await this.reader.close();
    await this.loop;
    await this.handed;
    // Messages read ahead and not started stay pending: another core takes them over after their lease, their claims given back.
    await this.giveBack(this.ready.splice(0));
    await drain([...this.running], waitMs);
    await this.acks.settled();
  }

  private async readLoop(): Promise<void> {
    let grouped = false;
    while (!this.stopped) {
      const found = this.deps.lookup(this.address);
      if (!found) return;
      const { concurrency, readAhead } = found.route.policy;
      const wanted = concurrency + readAhead - this.running.size - this.ready.length - this.claiming;
      // With messages still ahead of the slots, the next read waits until it can take half the read-ahead:
      // one read and one claim then serve several messages, rather than one each per freed slot.
      if (wanted <= 0 || (this.ready.length + this.claiming > 0 && wanted < readAhead >> 1)) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
        continue;
      }
      try {
        if (!grouped) {
          await this.deps.store.ensureGroup(this.address);
          grouped = true;
        }
        const messages = await this.reader.read(this.address, this.deps.consumer, wanted, BLOCK_MS);
        if (this.stopped) return;
        if (messages.length > 0) this.handOver(found, messages);
      } catch (error) {
        this.reportError(error, 'read');
        // The store is down: wait before asking again rather than spin.
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /**
   * Claims one read's messages and hands them to `ready` once claimed, while the
   * loop reads on: the next read goes out beside this claim rather than after
   * it, so a busy core's slots are not left empty for two round trips in turn.
   * Hand-offs keep the order of the reads.
   */
  private handOver(found: { app: LoadedApp; route: SourceRoute }, messages: readonly DeliveryMessage[]): void {
    const claiming = this.claim(found, messages);
    this.claiming += messages.length;
    this.handed = Promise.all([claiming, this.handed])
      .then(async ([claimed]) => {
        this.claiming -= messages.length;
        if (this.stopped) return this.giveBack(claimed);
        this.ready.push(...claimed);
        this.startReady(found.route.policy.concurrency);
      })
      // Never rejects: a failed hand-off must not stop the ones after it.
      .catch((error: unknown) => this.reportError(error, 'claim'));
  }

  /** Moves due retries back into the stream, takes over messages of dead consumers, and updates the route's gauges. */
  private async maintain(): Promise<void> {
    const found = this.deps.lookup(this.address);
    if (!found || this.stopped) return;
    const { store, metrics } = this.deps;
    const { policy } = found.route;
    const labels = { app: this.address.app, source: this.address.kind, name: this.address.name };
    try {
      const now = Date.now();
      await store.promoteDue(this.address, now, 100);
      // Takes over only what this core can start now: messages read ahead come first.
      const free = policy.concurrency - this.running.size - this.ready.length - this.claiming;
      if (free > 0) for (const message of await store.reclaim(this.address, this.deps.consumer, policy.leaseMs, free)) this.run({ message });
      const stats = await store.stats(this.address, now);
      metrics.queueDepth.set(labels, stats.depth);
      metrics.queueOldestAgeSeconds.set(labels, stats.oldestAgeMs / 1000);
    } catch (error) {
      this.reportError(error, 'maintenance');
    }
  }

  /**
   * Claims the once-only records of one read's messages in one step: those that
   * start at once for the route's lease, those that wait for a slot for the lease
   * plus one run of the pool (see the top of this file). A claim that fails
   * leaves the messages to be claimed as they run.
   */
  private async claim(found: { app: LoadedApp; route: SourceRoute }, messages: readonly DeliveryMessage[]): Promise<Claimed[]> {
    const { app, route } = found;
    const component = app.components.get(route.componentId);
    const pool = component ? app.pools.get(component.pool) : undefined;
    if (messages.length === 0 || pool === undefined || app.document.spec.limits?.requestsPerSecond !== undefined) return messages.map((message) => ({ message }));
    const { policy } = route;
    const { kind, name } = this.address;
    // The reads before this one are claimed ahead of it, and start first.
    const free = policy.concurrency - this.running.size - this.ready.length - this.claiming;
    try {
      const begun = await this.deps.records.beginIdempotentMany(
        app.id,
        messages.map((message, i) => ({
          key: onceKey(kind, name, message),
          fingerprint: `${kind}:${name}`,
          inFlightTtlMs: i < free ? policy.leaseMs : policy.leaseMs + minimumLeaseMs(pool),
        })),
      );
      return messages.map((message, i) => ({ message, begun: begun[i]! }));
    } catch (error) {
      this.reportError(error, 'claim');
      return messages.map((message) => ({ message }));
    }
  }

  /** Gives back the claims of messages this core will not run, so that their next delivery need not wait for them to lapse. */
  private async giveBack(claimed: readonly Claimed[]): Promise<void> {
    const { kind, name } = this.address;
    for (const { message, begun } of claimed) {
      if (begun === 'new') await this.deps.records.abandonIdempotent(this.address.app, onceKey(kind, name, message)).catch(() => undefined);
    }
  }

  /** Starts messages read ahead while slots are free. */
  private startReady(concurrency: number): void {
    while (this.running.size < concurrency && this.ready.length > 0) this.run(this.ready.shift()!);
  }

  private run(claimed: Claimed): void {
    const running = this.deliver(claimed)
      .catch((error: unknown) => this.reportError(error, 'settle'))
      .finally(() => {
        this.running.delete(running);
        if (!this.stopped) {
          const found = this.deps.lookup(this.address);
          if (found) this.startReady(found.route.policy.concurrency);
        }
        const wake = this.slotFreed;
        this.slotFreed = undefined;
        wake?.();
      });
    this.running.add(running);
  }

  private async deliver(claimed: Claimed): Promise<void> {
    const { message, begun } = claimed;
    const { store, metrics } = this.deps;
    const found = this.deps.lookup(this.address);
    // The route went away with a reload: the message stays pending, for a core that still has it.
    if (!found) return this.giveBack([claimed]);
    const { app, route } = found;
    const { policy } = route;
    const { kind, name } = this.address;
    const outcome = (value: string): void => metrics.deliveries.labels(app.id, kind, value).inc();

    if (policy.maxAgeMs !== undefined && Date.now() - message.publishedAt > policy.maxAgeMs) {
      await this.giveBack([claimed]);
      await this.settleDead(message, 'expired', undefined);
      outcome('expired');
      return;
    }
    if (message.attempt > policy.maxAttempts) {
      // Taken over after its core died on the last attempt: no attempt is left.
      await this.giveBack([claimed]);
      await this.settleDead(message, 'failed', { code: 'UHLP_ATTEMPTS_EXHAUSTED', message: `delivered ${message.attempt} times (maxAttempts ${policy.maxAttempts}); its last core stopped while running it` });
      outcome('dead');
      return;
    }
    const component = app.components.get(route.componentId);
    const pool = component ? app.pools.get(component.pool) : undefined;
    const key = onceKey(kind, name, message);
    // The answer the run kept, completed with the message's acknowledgement; none when the run replayed a stored one.
    let kept: KeptAnswer | undefined;
    let failure: DeliveryFailure | undefined;
    const requestId = randomUUID();
    if (!component || !pool) {
      failure = { code: 'UHLP_ROUTE_NOT_FOUND', message: `component "${route.componentId}" or its pool is not in app "${app.id}"` };
      await this.giveBack([claimed]);
    } else {
      try {
        const final = await inDeliverySpan({ kind, name, messageId: message.id, attempt: message.attempt, ...(message.meta !== undefined ? { meta: message.meta } : {}) }, { 'uhlp.app': app.id, 'uhlp.component': component.id, 'uhlp.request_id': requestId }, () => this.deps.pipeline.run(
          {
            app,
            component,
            pool,
            requestId,
            source: kind,
            route: name,
            requestDataJson: deliveryRequestDataJson(kind, name, message),
            session: undefined,
            declaredOutputs: turnDeclaredOutputs(component.declaredOutputs, undefined),
            once: {
              key,
              fingerprint: `${kind}:${name}`,
              inFlightTtlMs: policy.leaseMs,
              successOnly: true,
              complete: (response, ttlMs) => {
                kept = { appId: app.id, key, response, ttlMs };
              },
              ...(begun !== undefined ? { begun } : {}),
            },
            ...(kind === 'trigger' ? { triggerDepth: triggerDepthOf(message.payload) } : {}),
            ...(route.spec.flow !== undefined ? { flow: { scope: `${kind}:${name}`, spec: route.spec.flow } } : {}),
          },
          {},
        ));
        if (final.status >= 400) failure = final.failure ?? failureOf(final);
      } catch (error) {
        failure = error instanceof UhlpError ? { code: error.code, message: error.message } : { code: 'UHLP_INTERNAL', message: 'the delivery failed inside the core' };
        if (!(error instanceof UhlpError)) this.deps.logger.error({ err: error, app: app.id, source: kind, name }, 'delivery failed inside the core');
      }
    }
    // The runtime store refusing (a failover, an outage) is not the message's doing: it is retried as the same attempt,
    // so a message published before a failover never spends its attempts, or reaches the dead letters, on one.
    const charged = failure?.code !== 'UHLP_STATE_UNAVAILABLE';
    if (failure !== undefined) {
      // Each failed delivery, with what failed it; the turn's own line (turn-stages.ts) has where its script threw.
      const next = charged && message.attempt >= policy.maxAttempts ? 'dead' : 'retry';
      this.deps.logger.warn({ app: app.id, source: kind, name, requestId, invocationId: message.invocationId, attempt: message.attempt, code: failure.code, next }, failure.message ?? failure.code);
    }
    if (failure === undefined) {
      this.acks.add(message.id, kept);
      outcome('ok');
      return;
    }
    if (charged && message.attempt >= policy.maxAttempts) {
      await this.settleDead(message, 'failed', failure);
      outcome('dead');
      return;
    }
    await store.retryLater(this.address, message, Date.now() + retryDelayMs(policy, message.attempt), charged);
    outcome('retry');
  }

  private async settleDead(message: DeliveryMessage, reason: 'failed' | 'expired', error: DeliveryFailure | undefined): Promise<void> {
    const found = this.deps.lookup(this.address);
    const keep = found?.route.policy.deadLetter ?? true;
    if (!keep) {
      await this.deps.store.ack(this.address, [message.id]);
      return;
    }
    if (await this.deps.store.deadLetter(this.address, message, reason, error)) {
      this.deps.metrics.deadLetters.inc({ app: this.address.app, source: this.address.kind, reason });
    }
  }

  private reportError(error: unknown, during: string): void {
    // A store outage would log on every read: once every few seconds is enough.
    if (Date.now() - this.lastError < 5000) return;
    this.lastError = Date.now();
    this.deps.logger.warn({ err: error instanceof Error ? error.message : String(error), app: this.address.app, source: this.address.kind, name: this.address.name, during }, 'delivery consumer');
  }
}

/** A message as the loop hands it to a slot: with its once-only claim when one was made at its read. */
interface Claimed {
  readonly message: DeliveryMessage;
  readonly begun?: IdempotencyBegin;
}

/** A delivery's once-only key: its route and invocation id (placed in the route's slot by runtime-keys.ts). */
function onceKey(kind: DeliveryKind, name: string, message: DeliveryMessage): string {
  return deliveryOnceKey(kind, name, message.invocationId);
}

/** Why an answer that is no error result failed: the `code` and `message` of a JSON error body, else HTTP_<status>; bounded. */
function failureOf(final: FinalResponse): DeliveryFailure {
  try {
    const text = typeof final.body === 'string' ? final.body : final.body.toString('utf8');
    const { code, message } = JSON.parse(text.slice(0, 64 * 1024)) as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) {
      return { code, ...(typeof message === 'string' ? { message: neutralText(message, MAX_ERROR_MESSAGE_CHARS) } : {}) };
    }
  } catch {
    // Not JSON: the status says it.
  }
  return { code: `HTTP_${final.status}` };
}

function triggerDepthOf(payload: string): number {
  const depth = (JSON.parse(payload) as { depth?: unknown }).depth;
  return typeof depth === 'number' && Number.isInteger(depth) && depth > 0 ? depth : 1;
}
