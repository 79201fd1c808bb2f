/**
 * Named output streams (seed 004 §3): a run's outputs are concurrent streams,
 * each with an id (`default`, `thinking`, ...) and a content type, announced by
 * `STREAM_START`, carried by `NODE_STREAM` chunks and closed by `STREAM_END`.
 * Without a name a stream is `default`, `text/plain`. The llm-orchestrator
 * emits packets through `core.workflow.emit` (and with its checkpoints), the
 * core forwards an LLM's tokens as `NODE_STREAM` chunks while the provider
 * produces them, and the HTTP source writes them as server-sent events.
 */
import { Type, type Static } from '@sinclair/typebox';

export const DEFAULT_STREAM_ID = 'default';
export const DEFAULT_CONTENT_TYPE = 'text/plain';

const StreamId = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$' });

export const StreamPacketSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('STREAM_START'), Type.Literal('NODE_STREAM'), Type.Literal('STREAM_END')]),
    stream_id: StreamId,
    content_type: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e][\\x20-\\x7e]*$' })),
    node: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    chunk: Type.Optional(Type.String({ maxLength: 1024 * 1024 })),
  },
  { additionalProperties: false },
);
export type StreamPacket = Static<typeof StreamPacketSchema>;

/** The immutable context every interceptor of one execution sees (seed 004 §4). */
export interface InterceptorContext {
  readonly request_id: string;
  /** ISO 8601 time the execution started. */
  readonly start_time: string;
  readonly run_id?: string;
}

export function interceptorContext(requestId: string, startedAt: Date, runId?: string): InterceptorContext {
  return Object.freeze({ request_id: requestId, start_time: startedAt.toISOString(), ...(runId !== undefined ? { run_id: runId } : {}) });
}
