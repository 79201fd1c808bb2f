/**
 * What the orchestrator starts a run's execution from: the answer of
 * `core.workflow.load` (the run's view, its workflow file, the app's
 * components). On a run's first execution the core has just claimed the run
 * and holds that answer already, so it sends it along in the /execute context
 * (`workflowInfo.loaded`) when its JSON is within MAX_LOADED_RUN_BYTES, and
 * the orchestrator starts without the round trip of asking for it.
 *
 * The orchestrator takes a sent answer only when it holds (`loadedRunOf`):
 * the shape the engine relies on, and the run, workflow and revision this
 * execution names. Anything else (absent, from an older core, malformed,
 * another run's) is as if nothing had been sent: it asks the core, whose
 * answer is the stored record's.
 */
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { EngineStateSchema } from './engine-state-schema.js';

/** Largest JSON of a load answer the core sends along; a larger one (a large blackboard) is loaded through MCP. */
export const MAX_LOADED_RUN_BYTES = 64 * 1024;

const ApprovalShape = Type.Object(
  { approved: Type.Boolean(), comment: Type.Optional(Type.String()), by: Type.Optional(Type.String()), at: Type.String() },
  { additionalProperties: false },
);

/** A running run's view (contract/workflow/run-view.ts RunView): only a running run is handed to an execution. */
const RunViewShape = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    workflowId: Type.String({ minLength: 1 }),
    revision: Type.String({ minLength: 1 }),
    status: Type.Literal('running'),
    state: EngineStateSchema,
    approvals: Type.Record(Type.String(), ApprovalShape),
    remainingMs: Type.Number({ minimum: 0 }),
    nextStep: Type.Integer({ minimum: 0 }),
    fresh: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const LoadedRunSchema = Type.Object(
  {
    run: RunViewShape,
    workflowFile: Type.String({ minLength: 1 }),
    /** The app's components at the run's revision, by id: each one's handler, and an LLM component's llm block. */
    components: Type.Record(
      Type.String(),
      Type.Object({ handler: Type.Union([Type.Literal('JIT'), Type.Literal('LLM'), Type.Literal('WORKFLOW')]), llm: Type.Optional(Type.Unknown()) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);
export type LoadedRun = Static<typeof LoadedRunSchema>;

/** The workflow file of a run's workflow, as the core names it in its load answer. */
export function workflowFileOf(workflowId: string): string {
  return `workflows/${workflowId}.yaml`;
}

/** The run an execution names (its context): a sent answer must be of it. */
export interface LoadedRunExpectation {
  readonly runId: string;
  readonly workflowId: string;
  readonly revision: string;
}

let check: TypeCheck<typeof LoadedRunSchema> | undefined;

/** `value` as a load answer of the expected run; undefined when it is absent or does not hold (then the run is loaded through MCP). */
export function loadedRunOf(value: unknown, expected: LoadedRunExpectation): LoadedRun | undefined {
  if (value === undefined || value === null) return undefined;
  check ??= TypeCompiler.Compile(LoadedRunSchema);
  if (!check.Check(value)) return undefined;
  const { run, workflowFile } = value;
  if (run.id !== expected.runId || run.workflowId !== expected.workflowId || run.revision !== expected.revision) return undefined;
  return workflowFile === workflowFileOf(run.workflowId) ? value : undefined;
}
