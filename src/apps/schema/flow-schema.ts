/**
 * Flow control of a route or a component, per key: how many of its events run
 * at once, how many start per period, which event of a burst runs, and which
 * waiting event goes first (docs/flow-control.md). Keys and priorities are
 * expressions over the event (src/turns/flow-expression.ts), checked when the
 * app loads.
 */
import { Type, type Static } from '@sinclair/typebox';

const Expression = (description: string) => Type.String({ minLength: 1, maxLength: 256, description });

const KeyExpression = Type.Optional(
  Expression(
    'Expression of the key: params.<name>, headers.<name>, query.<name>, body.<a>.<b> or payload.<a>.<b>. Events it gives the same value share the limit; without it every event of the route (component) shares one.',
  ),
);

const MaxWaitMs = Type.Integer({
  minimum: 1,
  maximum: 900000,
  default: 30000,
  description: 'How long an event waits for its turn before it is refused with UHLP_FLOW_WAIT_TIMEOUT (429).',
});

export const FlowSpec = Type.Object(
  {
    concurrency: Type.Optional(
      Type.Object(
        {
          key: KeyExpression,
          limit: Type.Integer({ minimum: 1, maximum: 10000, description: 'Events of one key running at once, across every core.' }),
          maxWaitMs: MaxWaitMs,
        },
        { additionalProperties: false, description: 'At most limit events of one key run at once; the others wait, highest priority first, then oldest.' },
      ),
    ),
    throttle: Type.Optional(
      Type.Object(
        {
          key: KeyExpression,
          limit: Type.Integer({ minimum: 1, maximum: 10000, description: 'Events of one key that start in one period.' }),
          periodMs: Type.Integer({ minimum: 1, maximum: 86400000, description: 'The sliding period, ms.' }),
          maxWaitMs: MaxWaitMs,
        },
        { additionalProperties: false, description: 'At most limit events of one key start per period; the others wait for a start, they do not fail (up to maxWaitMs).' },
      ),
    ),
    debounce: Type.Optional(
      Type.Object(
        {
          key: KeyExpression,
          periodMs: Type.Integer({ minimum: 1, maximum: 3600000, description: 'The quiet time after the last event of a key before it runs, ms.' }),
        },
        {
          additionalProperties: false,
          description: 'Only the last event of a burst runs, periodMs after it came; each earlier one answers 202 UHLP_DEBOUNCED without running.',
        },
      ),
    ),
    priority: Type.Optional(
      Expression('Expression of a number (as above): among waiting events of one key, higher first; 0 when missing; bounded to ±1000000.'),
    ),
  },
  {
    additionalProperties: false,
    description: 'Flow control per key, enforced across cores through the runtime store: concurrency, throttle, debounce, priority (docs/flow-control.md).',
  },
);
export type FlowSpec = Static<typeof FlowSpec>;
