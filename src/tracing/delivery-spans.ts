/**
 * Queue, callback and trigger hops: a PRODUCER span where a message is
 * published, whose context travels with the message (its `meta`, the core's
 * own JSON beside the payload, kept across retries and redrives); and a
 * CONSUMER span per delivery, the turn's span, in a trace of its own with a
 * link to the publish (a delivery may come much later, and more than once).
 */
import { ROOT_CONTEXT, SpanKind, context, continuedContext, endingSpan, startTurnSpan, trace, tracer, carrierOf, type Attributes, type Link } from './spans.js';
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

/** The link to the publish a message's `meta` names, if it names a valid one. */
function publishLink(meta: string | undefined): Link[] {
  if (meta === undefined) return [];
  let carrier: unknown;
  try {
    carrier = (JSON.parse(meta) as { trace?: unknown }).trace;
  } catch {
    return [];
  }
  if (typeof carrier !== 'object' || carrier === null) return [];
  const linked = trace.getSpanContext(continuedContext(carrier as Record<string, unknown>));
  return linked !== undefined ? [{ context: linked }] : [];
}

export interface DeliveryMessageInfo {
  readonly kind: string;
  readonly name: string;
  readonly messageId: string;
  readonly attempt: number;
  readonly meta?: string;
}

/** Runs a delivery's turn in its CONSUMER span `process <name>`, linked to its publish. */
export async function inDeliverySpan<T>(delivery: DeliveryMessageInfo, attributes: Attributes, run: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return run();
  const { span, ctx } = startTurnSpan(`process ${delivery.name}`, {
    kind: SpanKind.CONSUMER,
    parent: ROOT_CONTEXT,
    links: publishLink(delivery.meta),
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
