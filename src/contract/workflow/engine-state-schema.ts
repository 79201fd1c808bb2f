/**
 * The engine state of a workflow run as it crosses the boundary (contract/workflow/run-view.ts
 * EngineState): checkpointed by the orchestrator through `core.workflow.*`, and handed back to it
 * in a run's load answer (loaded-run.ts). One schema for both directions.
 */
import { Type } from '@sinclair/typebox';

/** A workflow node's id, as workflow files name them. */
export const NodeIdSchema = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$' });
const Counts = Type.Record(Type.String(), Type.Integer({ minimum: 0 }));

export const EngineStateSchema = Type.Object(
  {
    position: Type.Object(
      {
        frontier: Type.Array(NodeIdSchema, { maxItems: 256 }),
        arrived: Type.Record(Type.String(), Type.Array(NodeIdSchema, { maxItems: 256 })),
      },
      { additionalProperties: false },
    ),
    blackboard: Type.Record(Type.String(), Type.Unknown()),
    retries: Counts,
    loops: Counts,
    feedback: Type.Record(Type.String(), Type.String({ maxLength: 256 })),
    nodesRun: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
