/**
 * The delivery sources of this core: queues, cron, callbacks and internal
 * triggers. It follows the registry's snapshots as the pools do (a consumer per
 * delivery route, a timer per cron route, started, kept or stopped at each
 * reload), publishes onto the routes' streams for the producers inside the core
 * (the queue endpoint, core.queue.publish, callback URLs, core.trigger.emit),
 * and stops cleanly on close: no new reads, the messages being run finish
 * (bounded), and what is left unsettled is taken over by another core after
 * its lease.
 */
import { randomUUID } from 'node:crypto';
import { UhlpError } from '../shared/errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { AppSnapshot, LoadedApp } from '../apps/app-snapshot.js';
import type { DeliveryStore, StreamAddress } from '../state/delivery-store.js';
import type { IdempotencyStore } from '../state/idempotency-store.js';
import type { TurnPipeline } from '../turns/turn-pipeline.js';
import { CronScheduler } from './cron/cron-scheduler.js';
import { DeliveryConsumer } from './delivery-consumer.js';
import { signToken, verifyToken } from './signed-token.js';
import type { SourceRoute } from './source-routes.js';
import { canonicalJson } from '../shared/canonical-json.js';
import type { SourceTools } from '../mcp/tool-definition.js';
import { inPublishSpan } from '../tracing/delivery-spans.js';

export interface DeliverySourcesOptions {
  readonly store: DeliveryStore;
  /** The runtime store's once-only records, where each consumer claims a read's messages in one step. */
  readonly records: Pick<IdempotencyStore, 'beginIdempotentMany' | 'abandonIdempotent'>;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Signs callback URLs and publish tokens. */
  readonly key: Buffer;
  /** Names this core as a consumer and cron claimant: unique per core process. */
  readonly consumer: string;
  /** How long close() waits for messages being run. @defaultValue 10000 */
  readonly drainMs?: number;
  /** The base URL callback URLs are given under (`UHLP_PUBLIC_URL`, else the core's own URL); read when a URL is made. */
  publicUrl(): string;
}

/** How deep internal events may lead to one another before an emit is refused: a loop between routes ends here. */
export const MAX_TRIGGER_DEPTH = 8;
/** Largest payload published from inside the core (queue endpoint, tools, callbacks), bytes of JSON. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

export interface CreatedCallback {
  readonly token: string;
  /** `/_uhlp/callbacks/<token>`: the path on any core of the installation. */
  readonly path: string;
  readonly expiresAt: string;
}

export class DeliverySources implements SourceTools {
  private snapshot: AppSnapshot | undefined;
  private pipeline: TurnPipeline | undefined;
  private readonly consumers = new Map<string, DeliveryConsumer>();
  private readonly crons = new Map<string, { scheduler: CronScheduler; spec: string }>();
  private closed = false;

  constructor(private readonly options: DeliverySourcesOptions) {}

  publicUrl(): string {
    return this.options.publicUrl();
  }

  get store(): DeliveryStore {
    return this.options.store;
  }

  /** Starts consuming with `pipeline`, at `snapshot`. */
  async start(pipeline: TurnPipeline, snapshot: AppSnapshot): Promise<void> {
    this.pipeline = pipeline;
    await this.follow(snapshot);
  }

  /** Brings consumers and cron timers in line with a new snapshot (a registry listener). */
  async follow(snapshot: AppSnapshot): Promise<void> {
    this.snapshot = snapshot;
    if (this.pipeline === undefined || this.closed) return;
    const wanted = new Map<string, SourceRoute>();
    for (const app of snapshot.apps.values()) for (const route of app.sourceRoutes.all) wanted.set(addressKey(route.address), route);
    for (const [key, consumer] of this.consumers) {
      if (wanted.has(key)) continue;
      this.consumers.delete(key);
      await consumer.stop(this.options.drainMs ?? 10_000);
    }
    for (const [key, route] of wanted) {
      if (this.consumers.has(key)) continue;
      const consumer = new DeliveryConsumer(route.address, {
        store: this.options.store,
        records: this.options.records,
        pipeline: this.pipeline,
        metrics: this.options.metrics,
        logger: this.options.logger,
        consumer: this.options.consumer,
        lookup: (address) => this.lookup(address),
      });
      this.consumers.set(key, consumer);
      consumer.start();
    }
    // A cron route whose schedule changed gets a new timer; its last fired slot carries over.
    const cronRoutes = new Map([...snapshot.apps.values()].flatMap((app) => app.sourceRoutes.crons.map((route) => [addressKey(route.address), route] as const)));
    for (const [key, running] of this.crons) {
      const route = cronRoutes.get(key);
      if (route && JSON.stringify(route.cron) === running.spec) continue;
      this.crons.delete(key);
      await running.scheduler.stop();
    }
    for (const [key, route] of cronRoutes) {
      if (this.crons.has(key)) continue;
      const scheduler = new CronScheduler(route, { store: this.options.store, metrics: this.options.metrics, logger: this.options.logger, claimant: this.options.consumer });
      this.crons.set(key, { scheduler, spec: JSON.stringify(route.cron) });
      scheduler.start();
    }
  }

  /** Stops every timer and consumer; messages being run finish (bounded by drainMs). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.crons.values()].map(({ scheduler }) => scheduler.stop()));
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.stop(this.options.drainMs ?? 10_000)));
    this.crons.clear();
    this.consumers.clear();
  }

  /** The app and route of a stream in the snapshot in force. */
  lookup(address: StreamAddress): { app: LoadedApp; route: SourceRoute } | undefined {
    const app = this.snapshot?.apps.get(address.app);
    const route = app?.sourceRoutes.all.find((r) => r.address.kind === address.kind && r.address.name === address.name);
    return app && route ? { app, route } : undefined;
  }

  /** Every delivery route of the snapshot in force. */
  routes(): SourceRoute[] {
    return [...(this.snapshot?.apps.values() ?? [])].flatMap((app) => [...app.sourceRoutes.all]);
  }

  /** Publishes a JSON payload onto a queue route of an app; returns the entry id and the invocation id. */
  async publishQueue(appId: string, name: string, payloadJson: string, invocationId?: string): Promise<{ messageId: string; invocationId: string }> {
    const route = this.snapshot?.apps.get(appId)?.sourceRoutes.queues.get(name);
    if (!route) throw new UhlpError('UHLP_SOURCE_ROUTE_NOT_FOUND', `app "${appId}" has no queue "${name}"`, { app: appId, queue: name });
    checkPayloadSize(payloadJson);
    const messageId = await inPublishSpan('queue', appId, name, (meta) =>
      this.options.store.publish(route.address, { payload: payloadJson, ...(invocationId !== undefined ? { invocationId } : {}), ...(meta !== undefined ? { meta } : {}) }),
    );
    return { messageId, invocationId: invocationId ?? messageId };
  }

  /** A signed callback URL for a callback route of an app. */
  createCallback(appId: string, name: string, correlation: string, now: number = Date.now()): CreatedCallback {
    const route = this.snapshot?.apps.get(appId)?.sourceRoutes.callbacks.get(name);
    if (!route) throw new UhlpError('UHLP_SOURCE_ROUTE_NOT_FOUND', `app "${appId}" has no callback route "${name}"`, { app: appId, callback: name });
    const expiresAt = Math.floor(now / 1000) + route.callback.ttlSeconds;
    const token = signToken(this.options.key, { purpose: 'callback', app: appId, name, correlation, expiresAt, id: randomUUID() });
    return { token, path: `/_uhlp/callbacks/${token}`, expiresAt: new Date(expiresAt * 1000).toISOString() };
  }

  /**
   * Takes a request to a callback URL: the token must be genuine, unexpired and
   * unused; it is then used up, and the callback's details are published onto
   * the route's stream. Returns the invocation id.
   */
  async acceptCallback(token: string, details: { headers: Record<string, string>; body: string; bodyEncoding: 'utf8' | 'base64' }): Promise<string> {
    const claims = verifyToken(this.options.key, token, 'callback');
    if (claims === 'invalid') throw new UhlpError('UHLP_CALLBACK_INVALID', 'the callback token is not one this core signed');
    if (claims === 'expired') throw new UhlpError('UHLP_CALLBACK_EXPIRED', 'the callback URL has expired');
    const route = this.snapshot?.apps.get(claims.app)?.sourceRoutes.callbacks.get(claims.name);
    if (!route) throw new UhlpError('UHLP_SOURCE_ROUTE_NOT_FOUND', `app "${claims.app}" has no callback route "${claims.name}" any more`, { app: claims.app, callback: claims.name });
    const id = claims.id ?? token;
    // Kept a minute past the token's expiry: by then the signature check refuses it anyway.
    const ttlMs = Math.max(60_000, claims.expiresAt * 1000 - Date.now() + 60_000);
    if (!(await this.options.store.useOnce(`callback:${id}`, ttlMs))) throw new UhlpError('UHLP_CALLBACK_USED', 'the callback URL was used already');
    const payload = canonicalJson({
      body: details.body,
      bodyEncoding: details.bodyEncoding,
      callbackUrl: `/_uhlp/callbacks/${token}`,
      correlation: claims.correlation ?? '',
      headers: details.headers,
      name: claims.name,
    });
    checkPayloadSize(payload);
    await inPublishSpan('callback', claims.app, claims.name, (meta) => this.options.store.publish(route.address, { payload, invocationId: id, ...(meta !== undefined ? { meta } : {}) }));
    return id;
  }

  /**
   * Publishes an internal event to every trigger route (of any app) that
   * listens to `event` and accepts `sourceApp`; returns how many routes got it.
   * `depth` is the emitting turn's own trigger depth (0 outside trigger turns).
   */
  async emitTrigger(sourceApp: string, event: string, payload: unknown, depth: number): Promise<{ delivered: number; invocationId: string }> {
    if (depth + 1 > MAX_TRIGGER_DEPTH) {
      throw new UhlpError('UHLP_TRIGGER_DEPTH_EXCEEDED', `event "${event}" is ${depth + 1} internal events deep; the limit is ${MAX_TRIGGER_DEPTH}`, { event, depth: depth + 1, limit: MAX_TRIGGER_DEPTH });
    }
    const details = canonicalJson({ depth: depth + 1, payload, sourceAppId: sourceApp, triggerEvent: event });
    checkPayloadSize(details);
    const invocationId = randomUUID();
    let delivered = 0;
    for (const app of this.snapshot?.apps.values() ?? []) {
      for (const route of app.sourceRoutes.triggers) {
        if (route.trigger.event !== event || !route.from.includes(sourceApp)) continue;
        await inPublishSpan('trigger', app.id, route.address.name, (meta) => this.options.store.publish(route.address, { payload: details, invocationId, ...(meta !== undefined ? { meta } : {}) }));
        delivered += 1;
      }
    }
    return { delivered, invocationId };
  }
}

function addressKey(address: StreamAddress): string {
  return JSON.stringify([address.kind, address.app, address.name]);
}

function checkPayloadSize(json: string): void {
  if (Buffer.byteLength(json) > MAX_PAYLOAD_BYTES) throw new UhlpError('UHLP_BODY_TOO_LARGE', `the message is over ${MAX_PAYLOAD_BYTES} bytes of JSON`, { field: 'payload' });
}
