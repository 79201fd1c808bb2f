/**
 * An app's delivery routes (queue, cron, callback, trigger), indexed once per
 * definitions revision as the snapshot's HTTP route table is: each with its
 * delivery stream, component and delivery policy (defaults applied).
 */
import type {
  CallbackRouteSpec,
  ComponentSpec,
  CronRouteSpec,
  PoolSpec,
  QueueRouteSpec,
  RouteSpec,
  TriggerRouteSpec,
} from '../apps/schema/app-definition-schema.js';
import type { DeliveryKind, StreamAddress } from '../state/delivery-store.js';
import { backoffDelay } from '../shared/backoff.js';
import { CronSchedule } from './cron/cron-schedule.js';

/** How a route's messages are delivered. */
export interface DeliveryPolicy {
  readonly concurrency: number;
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** undefined: no age limit. */
  readonly maxAgeMs: number | undefined;
  readonly deadLetter: boolean;
  /** How long a delivered message stays with its core before another core takes it over. */
  readonly leaseMs: number;
  /**
   * Messages a core reads ahead of its free slots, so that a slot freed starts
   * the next message without a round trip to the store: the route's concurrency
   * when the lease covers a wait for one slot and a run after it, else none.
   */
  readonly readAhead: number;
}

export interface SourceRoute {
  readonly address: StreamAddress;
  readonly componentId: string;
  readonly policy: DeliveryPolicy;
  /** The route's definition, for source-specific settings. */
  readonly spec: RouteSpec;
}

export interface CronRoute extends SourceRoute {
  readonly cron: CronRouteSpec;
  readonly schedule: CronSchedule;
}

export interface TriggerRoute extends SourceRoute {
  readonly trigger: TriggerRouteSpec;
  /** Apps whose events reach this route. */
  readonly from: readonly string[];
}

export interface SourceRoutes {
  /** Every delivery route of the app. */
  readonly all: readonly SourceRoute[];
  readonly queues: ReadonlyMap<string, SourceRoute>;
  readonly callbacks: ReadonlyMap<string, SourceRoute & { readonly callback: CallbackRouteSpec }>;
  readonly crons: readonly CronRoute[];
  readonly triggers: readonly TriggerRoute[];
}

/** Margin of a default lease over the longest an execution can hold a message. */
const LEASE_MARGIN_MS = 30_000;

/** The name a trigger route's stream is known by: its event and component. */
export function triggerRouteName(event: string, componentId: string): string {
  return `${event}>${componentId}`;
}

/** Indexes the delivery routes of a valid app (validate-app-definition.ts checked them). */
export function indexSourceRoutes(appId: string, routes: readonly RouteSpec[], components: ReadonlyMap<string, ComponentSpec>, pools: ReadonlyMap<string, PoolSpec>): SourceRoutes {
  const all: SourceRoute[] = [];
  const queues = new Map<string, SourceRoute>();
  const callbacks = new Map<string, SourceRoute & { callback: CallbackRouteSpec }>();
  const crons: CronRoute[] = [];
  const triggers: TriggerRoute[] = [];
  for (const route of routes) {
    const component = components.get(route.component);
    const pool = component ? pools.get(component.pool) : undefined;
    if (!pool) continue;
    const base = (kind: DeliveryKind, name: string, spec: QueueRouteSpec | CronRouteSpec | CallbackRouteSpec | TriggerRouteSpec): SourceRoute => ({
      address: { kind, app: appId, name },
      componentId: route.component,
      policy: deliveryPolicy(spec, pool),
      spec: route,
    });
    if (route.queue) {
      const indexed = base('queue', route.queue.name, route.queue);
      queues.set(route.queue.name, indexed);
      all.push(indexed);
    } else if (route.cron) {
      const indexed: CronRoute = { ...base('cron', route.cron.jobId, route.cron), cron: route.cron, schedule: new CronSchedule(route.cron.schedule, route.cron.timezone) };
      crons.push(indexed);
      all.push(indexed);
    } else if (route.callback) {
      const indexed = { ...base('callback', route.callback.name, route.callback), callback: route.callback };
      callbacks.set(route.callback.name, indexed);
      all.push(indexed);
    } else if (route.trigger) {
      const indexed: TriggerRoute = {
        ...base('trigger', triggerRouteName(route.trigger.event, route.component), route.trigger),
        trigger: route.trigger,
        from: route.trigger.from ?? [appId],
      };
      triggers.push(indexed);
      all.push(indexed);
    }
  }
  return { all, queues, callbacks, crons, triggers };
}

/** The lease a route gets when it names none, and the least one it may name. */
export function minimumLeaseMs(pool: PoolSpec): number {
  return pool.acquireTimeoutMs + pool.limits.timeoutMs;
}

function deliveryPolicy(spec: QueueRouteSpec | CronRouteSpec | CallbackRouteSpec | TriggerRouteSpec, pool: PoolSpec): DeliveryPolicy {
  const leaseMs = spec.leaseSeconds !== undefined ? spec.leaseSeconds * 1000 : minimumLeaseMs(pool) + LEASE_MARGIN_MS;
  return {
    concurrency: spec.concurrency,
    maxAttempts: spec.maxAttempts,
    initialBackoffMs: spec.backoff.initialMs,
    maxBackoffMs: spec.backoff.maxMs,
    maxAgeMs: spec.maxAgeSeconds === undefined ? undefined : spec.maxAgeSeconds * 1000,
    deadLetter: spec.deadLetter,
    leaseMs,
    // A message read ahead waits for one run to end, then runs: both within its lease, or it could be taken over while it runs.
    readAhead: leaseMs >= 2 * minimumLeaseMs(pool) ? spec.concurrency : 0,
  };
}

/** The wait before attempt `attempt + 1` after attempt `attempt` failed: doubled per attempt, capped, with up to 20% jitter off. */
export function retryDelayMs(policy: DeliveryPolicy, attempt: number, random: () => number = Math.random): number {
  // Jitter spreads the retries of messages that failed together (a dependency down) without ever waiting longer than the cap.
  const wait = backoffDelay(attempt - 1, { initialMs: policy.initialBackoffMs, maxMs: policy.maxBackoffMs, jitter: 'up-to-20-percent-off', random });
  return Math.max(1, wait);
}
