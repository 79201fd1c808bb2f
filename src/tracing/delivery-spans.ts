/**
 * Queue, callback and trigger hops: a PRODUCER span where a message is
 * published, whose context travels with the message (its `meta`, the core's
 * own JSON beside the payload, kept across retries and redrives); and a
 * CONSUMER span per delivery, the turn's span, in a trace of its own with a
 * link to the publish (a delivery may come much later, and more than once).
 *
 * A cron firing has nothing before it to link to: it is a root span of its
 * own, `cron <job>`, and its slot's delivery is its child: the messaging
 * conventions let a message processed on its own have its creation context as
 * parent rather than only a link, and the firing is the one reason the turn
 * runs (no link beside the parent: Jaeger would show the pair as a
 * FOLLOWS_FROM reference alone).
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, continuedContext, endingSpan, startTurnSpan, trace, tracer, carrierOf, type Attributes, type Context, type Link } from './spans.js';
import { tracingActive } from './tracing-active.js';

/** The messaging system name of the core's own delivery streams. */
const SYSTEM = 'uhlp';

/**
 * Runs `publish` in a PRODUCER span `publish <name>`; it is given the `meta`
 * to store with the message (undefined with tracing off).
 */
export function inPublishSpan<T>(kind: string, app: string, name: string, publish: (meta: string | undefined) => Promise<T>): Promise<T> {
  if (!tracingActive()) return publish(undefined);
  return tracer().startActiveSpan(
    `publish ${name}`,
    { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': SYSTEM, 'messaging.operation.type': 'send', 'messaging.destination.name': name, 'uhlp.app': app, 'uhlp.delivery.kind': kind } },
    (span) =>
      endingSpan(span, () => {
        const carrier = carrierOf(context.active());
        return publish(carrier !== undefined ? JSON.stringify({ trace: carrier }) : undefined);
      }),
  );
}

export interface CronFiringInfo {
  readonly app: string;
  readonly jobId: string;
  readonly schedule: string;
  readonly timezone: string;
  /** The slot, as planned. */
  readonly scheduledTime: string;
  /** This core, which holds the slot's claim if it wins it. */
  readonly claimant: string;
}

/**
 * Runs a cron slot's firing in a root PRODUCER span `cron <job>`, giving `fire`
 * the `meta` to publish with the slot's message; `fire` answers whether this
 * core won the slot. A core that lost it never ends its span, so none is
 * exported: a slot fires on one core, and its trace has one root.
 */
export async function inCronFiringSpan(firing: CronFiringInfo, fire: (meta: string | undefined) => Promise<boolean>): Promise<boolean> {
  if (!tracingActive()) return fire(undefined);
  const span = tracer().startSpan(
    `cron ${firing.jobId}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': SYSTEM,
        'messaging.operation.type': 'create',
        'messaging.destination.name': firing.jobId,
        'uhlp.app': firing.app,
        'uhlp.delivery.kind': 'cron',
        'uhlp.cron.job_id': firing.jobId,
        'uhlp.cron.schedule': firing.schedule,
        'uhlp.cron.timezone': firing.timezone,
        'uhlp.cron.scheduled_time': firing.scheduledTime,
        'uhlp.cron.lease_holder': firing.claimant,
      },
    },
    ROOT_CONTEXT,
  );
  const carrier = carrierOf(trace.setSpan(ROOT_CONTEXT, span));
  let fired = false;
  try {
    fired = await fire(carrier !== undefined ? JSON.stringify({ trace: carrier }) : undefined);
    return fired;
  } catch (error) {
    fired = true;
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error instanceof Error ? error.message : String(error)).slice(0, 200) });
    throw error;
  } finally {
    if (fired) span.end();
  }
}

/** The context of the publish (or firing) a message's `meta` names, if it names a valid one. */
function publishContext(meta: string | undefined): Context | undefined {
  if (meta === undefined) return undefined;
  let carrier: unknown;
  try {
    carrier = (JSON.parse(meta) as { trace?: unknown }).trace;
  } catch {
    return undefined;
  }
  if (typeof carrier !== 'object' || carrier === null) return undefined;
  const ctx = continuedContext(carrier as Record<string, unknown>);
  return trace.getSpanContext(ctx) !== undefined ? ctx : undefined;
}

export interface DeliveryMessageInfo {
  readonly kind: string;
  readonly name: string;
  readonly messageId: string;
  readonly attempt: number;
  readonly meta?: string;
}

/** Runs a delivery's turn in its CONSUMER span `process <name>`, linked to its publish (a cron slot's: the child of its firing). */
export async function inDeliverySpan<T>(delivery: DeliveryMessageInfo, attributes: Attributes, run: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return run();
  const published = publishContext(delivery.meta);
  const child = delivery.kind === 'cron' && published !== undefined;
  const linked = published !== undefined && !child ? trace.getSpanContext(published) : undefined;
  const links: Link[] = linked !== undefined ? [{ context: linked }] : [];
  const { span, ctx } = startTurnSpan(`process ${delivery.name}`, {
    kind: SpanKind.CONSUMER,
    parent: child ? published : ROOT_CONTEXT,
    links,
    attributes: {
      'messaging.system': SYSTEM,
      'messaging.operation.type': 'process',
      'messaging.destination.name': delivery.name,
      'messaging.message.id': delivery.messageId,
      'uhlp.delivery.kind': delivery.kind,
      'uhlp.delivery.attempt': delivery.attempt,
      ...attributes,
    },
  });
  return endingSpan(span, () => context.with(ctx, run));
}
