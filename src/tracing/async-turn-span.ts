/**
 * The turn of a `Prefer: respond-async` request, which runs on after its
 * `202 Accepted`. The request's SERVER span ends with the 202, as the HTTP
 * conventions have it (a server span is the request as the client waited for
 * it: its duration is `http.server.request.duration`, its status the 202). The
 * turn is then the processing of a queued message, as the messaging conventions
 * model it: a CONSUMER span `process <METHOD> <route>` whose message is the
 * invocation (`messaging.message.id`). For one message processed on its own
 * they let the producer's context be the parent rather than only a link: the
 * span is the SERVER span's child, so a caller that sent a `traceparent` finds
 * the turn in its own trace. No link beside the parent: it would say nothing
 * more, and Jaeger shows the pair as a FOLLOWS_FROM reference alone.
 */
import { SpanKind, context, endingSpan, startTurnSpan, type Attributes } from './spans.js';
import { tracingActive } from './tracing-active.js';

/** Runs an async invocation's turn in its CONSUMER span, a child of the active request's span. */
export function inAsyncTurnSpan<T>(invocationId: string, destination: string, attributes: Attributes, run: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return run();
  const { span, ctx } = startTurnSpan(`process ${destination}`, {
    kind: SpanKind.CONSUMER,
    parent: context.active(),
    attributes: {
      'messaging.system': 'uhlp',
      'messaging.operation.type': 'process',
      'messaging.destination.name': destination,
      'messaging.message.id': invocationId,
      'uhlp.delivery.kind': 'invocation',
      ...attributes,
    },
  });
  return endingSpan(span, () => context.with(ctx, run));
}
