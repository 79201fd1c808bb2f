/**
 * The workflow file (`workflows/<workflowId>.yaml` of an app): one TypeBox
 * schema, the single source for the core (which validates the file when the
 * app loads) and the llm-orchestrator (which validates it again when it reads
 * it through MCP at a run's revision). Field names are the runtime principles
 * document's (seed 004): `inputs_map`, `input_key`, `default_route`,
 * `evaluator_agent_ref`, `pass_threshold`, `trigger_intent`, ...
 *
 * Nodes are checked in two steps, so that an error names the field at fault
 * (`/nodes/judge/pass_threshold`) rather than "expected one of seven shapes":
 * first each node's `type` (NodeBase), then the schema of that type
 * (NODE_SCHEMAS). validate-workflow.ts does both and the rules a schema cannot
 * express (references between nodes, components of the app).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** Node ids, skill ids and stream ids: letters, digits, `_` and `-`. */
const ID_PATTERN = '^[A-Za-z][A-Za-z0-9_-]{0,63}$';
const Id = (description: string) => Type.String({ pattern: ID_PATTERN, description });
/** A blackboard path: dot-separated keys (`input.text`, `data.row_count`), never through __proto__, constructor or prototype. */
export const PATH_PATTERN = '^(?!(.*\\.)?(__proto__|constructor|prototype)(\\.|$))[A-Za-z_][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)*$';
const BlackboardPath = (description: string) => Type.String({ pattern: PATH_PATTERN, maxLength: 256, description });
/** An app file, relative to the app directory. */
const AppFile = (description: string) => Type.String({ minLength: 1, maxLength: 512, description });
const ComponentRef = (description: string) => Type.String({ minLength: 1, maxLength: 63, description });
/** A free JSON object. */
const Json = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });

export const OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists', 'matches'] as const;
export type ConstraintOperator = (typeof OPERATORS)[number];

/** A pre-flight constraint (seed 004 §2): a blackboard variable, an operator, a value. */
export const Constraint = Type.Object(
  {
    variable: BlackboardPath('The blackboard path the constraint reads, e.g. input.text.'),
    operator: Type.Union(
      OPERATORS.map((operator) => Type.Literal(operator)),
      { description: 'eq | ne | gt | gte | lt | lte | contains | exists | matches' },
    ),
    value: Type.Optional(Type.Unknown({ description: 'What the variable is compared with; a regular expression for matches; unused for exists.' })),
    field: Type.Optional(Type.Literal('length', { description: 'Compare the length of the variable (a string, list or object) instead of the variable.' })),
    required: Type.Boolean({ default: true, description: 'A failed required constraint aborts the run with error_message (422); any other is recorded in the trace.' }),
    error_message: Type.String({ minLength: 1, maxLength: 1024, description: 'What the client is told when the constraint fails.' }),
  },
  { additionalProperties: false },
);
export type Constraint = Static<typeof Constraint>;

/** Provenance of the workflow (seed 004 §5): logged when a run starts and kept in its trace. */
export const WorkflowMetadata = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 256 })),
    description: Type.Optional(Type.String({ maxLength: 4096 })),
    generated_by: Type.Optional(Type.String({ maxLength: 256, description: 'The model (or person) that wrote the workflow.' })),
    confidence_score: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    generation_rationale: Type.Optional(Type.String({ maxLength: 8192 })),
    original_user_intent: Type.Optional(Type.String({ maxLength: 8192 })),
  },
  { additionalProperties: false },
);
export type WorkflowMetadata = Static<typeof WorkflowMetadata>;

export const StateDefinition = Type.Object(
  {
    schema: Type.Optional(Json('JSON Schema (2020-12) the blackboard satisfies after every node.')),
    persistence: Type.Union([Type.Literal('memory'), Type.Literal('redis')], {
      default: 'memory',
      description:
        "memory: checkpoints survive the death of the run's sandbox, not a restart of the core. redis: they survive both (the core's runtime state must be Redis).",
    }),
  },
  { additionalProperties: false },
);

export const PolicyConfig = Type.Object(
  {
    max_retries: Type.Integer({ minimum: 0, maximum: 10, default: 0, description: 'Retries of a failed step (an error of status 429 or 5xx), with backoff.' }),
    retry_backoff_ms: Type.Integer({ minimum: 0, maximum: 60000, default: 200, description: 'Backoff before the first retry of a step; doubles per retry, with jitter.' }),
    timeout_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 3600, description: "The run's running time; past it the run is timed_out and the request gets 504. The pool's timeoutMs when omitted." }),
    ),
    execution_mode: Type.Union([Type.Literal('sequential'), Type.Literal('parallel')], {
      default: 'sequential',
      description: 'sequential: one node at a time, `next` names one node. parallel: `next` may name several (branches run at once); a node with `join` waits for them.',
    }),
    allow_critical_tools: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Tools the app marks risk_level: critical that this workflow may call without an approval.',
    }),
  },
  { additionalProperties: false },
);
export type PolicyConfig = Static<typeof PolicyConfig>;

export const SkillDefinition = Type.Object(
  {
    id: Id('Skill id.'),
    load_strategy: Type.Union([Type.Literal('eager'), Type.Literal('lazy')], {
      default: 'eager',
      description: 'eager: in every agent prompt; lazy: only in the prompts of agent steps whose input is near its trigger_intent.',
    }),
    trigger_intent: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'What the skill is for; required for lazy skills (it is what is indexed).' })),
    content: AppFile('The skill text: a file of the app.'),
  },
  { additionalProperties: false },
);
export type SkillDefinition = Static<typeof SkillDefinition>;

export const INTERCEPTOR_BUILT_INS = ['pii-redact'] as const;

export const Interceptors = Type.Object(
  {
    request: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'pii-redact or JIT component ids, in order, on the input before any agent.' }),
    response: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'pii-redact or JIT component ids, in order, on every stream packet and on the result.' }),
  },
  { additionalProperties: false },
);

export const NODE_TYPES = ['agent', 'jit', 'tool', 'router', 'evaluator', 'approval', 'end'] as const;
export type NodeType = (typeof NODE_TYPES)[number];

/** What every node may say, whatever its type. */
const common = {
  description: Type.Optional(Type.String({ maxLength: 2048 })),
  requirements: Type.Optional(Type.Array(Constraint, { maxItems: 64, description: 'Pre-flight constraints checked before this node runs.' })),
  max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: "Retries of this node when it fails; the policy's max_retries when omitted." })),
  join: Type.Optional(
    Type.Array(Id('A node this one waits for.'), { minItems: 1, maxItems: 64, description: 'parallel mode: run once every listed node has completed and led here.' }),
  ),
};
const Next = Type.Union([Id('The next node.'), Type.Array(Id('A branch.'), { minItems: 1, maxItems: 32 })], {
  description: 'The next node; in parallel mode a list starts one branch per node.',
});
const streamFields = {
  stream: Type.Optional(Id('The named output stream the node writes to (STREAM_START / NODE_STREAM / STREAM_END).')),
  content_type: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "The stream's content type. @defaultValue text/plain" })),
};
const inputsMap = Type.Optional(
  Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), BlackboardPath('A blackboard path.'), {
    description: 'Inputs of the step: name -> blackboard path.',
  }),
);

export const AgentNode = Type.Object(
  {
    type: Type.Literal('agent'),
    component: Type.Optional(ComponentRef('An LLM component of the app whose prompt (and schema, tools, model) the step uses.')),
    prompt: Type.Optional(AppFile('Or an inline agent: a prompt template of the app (nunjucks).')),
    system: Type.Optional(AppFile('A system template (inline agents).')),
    output_schema: Type.Optional(Type.Union([AppFile('A JSON Schema file.'), Json('An inline JSON Schema.')], { description: 'The JSON Schema the answer satisfies (inline agents).' })),
    model: Type.Optional(Type.String({ minLength: 1 })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000 })),
    tools: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64, description: 'MCP tools the model may call (inline agents).' })),
    max_tool_calls: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    inputs_map: inputsMap,
    output: Type.Optional(BlackboardPath('Where the answer is written.')),
    next: Type.Optional(Next),
    ...streamFields,
    ...common,
  },
  { additionalProperties: false },
);

export const JitNode = Type.Object(
  {
    type: Type.Literal('jit'),
    component: ComponentRef('A JIT component of the app; the core runs it through its pool.'),
    inputs_map: inputsMap,
    output: Type.Optional(BlackboardPath('Where the result is written.')),
    next: Type.Optional(Next),
    ...streamFields,
    ...common,
  },
  { additionalProperties: false },
);

export const ToolNode = Type.Object(
  {
    type: Type.Literal('tool'),
    tool: Type.String({ minLength: 1, description: 'An MCP tool of the core, e.g. core.kv.get.' }),
    args: Type.Optional(Json('Fixed arguments.')),
    inputs_map: inputsMap,
    output: Type.Optional(BlackboardPath('Where the result is written.')),
    next: Type.Optional(Next),
    ...streamFields,
    ...common,
  },
  { additionalProperties: false },
);

export const RouterNode = Type.Object(
  {
    type: Type.Literal('router'),
    input_key: BlackboardPath('The blackboard value routed on.'),
    routes: Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Id('A node.'), { description: 'Value -> node; matched strictly (a string equal to the key, or a number or boolean whose text is).' }),
    default_route: Id('The node when no route matches.'),
    ...common,
  },
  { additionalProperties: false },
);

export const EvaluatorNode = Type.Object(
  {
    type: Type.Literal('evaluator'),
    evaluator_agent_ref: ComponentRef('The LLM component that judges; it answers JSON {score, critique?}.'),
    target_variable: BlackboardPath('What is judged.'),
    pass_threshold: Type.Number({ minimum: 0, maximum: 1, description: 'Normalized score (0-1) at or above which the target passes.' }),
    score_range: Type.Optional(
      Type.Tuple([Type.Number(), Type.Number()], { description: "The judge's scale [min, max], normalized to 0-1. @defaultValue [0, 1]" }),
    ),
    pass_route: Id('The node after a pass.'),
    fail_route: Id('The node after a fail: usually the generator, whose prompt gets the feedback appended.'),
    feedback_variable: Type.Optional(BlackboardPath('Where the critique is written.')),
    max_retries: Type.Integer({ minimum: 0, maximum: 20, default: 2, description: 'Fails allowed; one more ends the run with UHLP_WORKFLOW_EVALUATION_FAILED.' }),
    description: common.description,
    requirements: common.requirements,
    join: common.join,
  },
  { additionalProperties: false },
);

export const ApprovalNode = Type.Object(
  {
    type: Type.Literal('approval'),
    prompt: Type.String({ minLength: 1, maxLength: 4096, description: 'What the approver is asked.' }),
    next: Next,
    reject_route: Type.Optional(Id('The node after a rejection; without it a rejection fails the run (UHLP_WORKFLOW_REJECTED).')),
    grants: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'Critical tools an approval lets the rest of the run call.' }),
    ...common,
  },
  { additionalProperties: false },
);

export const EndNode = Type.Object(
  {
    type: Type.Literal('end'),
    output: Type.Optional(
      Type.Union([BlackboardPath('One blackboard value.'), Type.Record(Type.String({ minLength: 1 }), BlackboardPath('A blackboard path.'))], {
        description: "The run's result: a blackboard path, or an object of names to paths. The whole blackboard when omitted.",
      }),
    ),
    ...common,
  },
  { additionalProperties: false },
);

export type AgentNode = Static<typeof AgentNode>;
export type JitNode = Static<typeof JitNode>;
export type ToolNode = Static<typeof ToolNode>;
export type RouterNode = Static<typeof RouterNode>;
export type EvaluatorNode = Static<typeof EvaluatorNode>;
export type ApprovalNode = Static<typeof ApprovalNode>;
export type EndNode = Static<typeof EndNode>;
export type WorkflowNode = AgentNode | JitNode | ToolNode | RouterNode | EvaluatorNode | ApprovalNode | EndNode;

export const NODE_SCHEMAS: Readonly<Record<NodeType, TSchema>> = {
  agent: AgentNode,
  jit: JitNode,
  tool: ToolNode,
  router: RouterNode,
  evaluator: EvaluatorNode,
  approval: ApprovalNode,
  end: EndNode,
};

/** What is checked of every node before the schema of its type. */
export const NodeBase = Type.Object(
  { type: Type.Union(NODE_TYPES.map((type) => Type.Literal(type)), { description: NODE_TYPES.join(' | ') }) },
  { additionalProperties: true },
);

export const WorkflowDocument = Type.Object(
  {
    metadata: Type.Optional(WorkflowMetadata),
    state: Type.Object(StateDefinition.properties, { additionalProperties: false, default: {} }),
    policy: Type.Object(PolicyConfig.properties, { additionalProperties: false, default: {} }),
    requirements: Type.Array(Constraint, { default: [], maxItems: 64, description: 'Pre-flight constraints checked before the run starts.' }),
    interceptors: Type.Object(Interceptors.properties, { additionalProperties: false, default: {} }),
    skills: Type.Array(SkillDefinition, { default: [], maxItems: 256 }),
    skill_threshold: Type.Number({ minimum: 0, maximum: 1, default: 0.35, description: "Cosine similarity at or above which a lazy skill is loaded into an agent step's prompt." }),
    start: Id('The first node.'),
    on_cancel: Type.Optional(
      Id(
        'The node a cancelled run goes to (its compensation): when the run is cancelled, the step in flight is cut and the run goes on from this node to an end; the run ends cancelled either way.',
      ),
    ),
    nodes: Type.Record(Type.String({ pattern: ID_PATTERN }), NodeBase, { description: 'The graph: node id -> node.' }),
  },
  { additionalProperties: false },
);

/** A validated workflow: its defaults filled in, every node checked against its type. */
export interface WorkflowDefinition {
  readonly metadata?: WorkflowMetadata;
  readonly state: { readonly schema?: Record<string, unknown>; readonly persistence: 'memory' | 'redis' };
  readonly policy: PolicyConfig;
  readonly requirements: readonly Constraint[];
  readonly interceptors: { readonly request: readonly string[]; readonly response: readonly string[] };
  readonly skills: readonly SkillDefinition[];
  readonly skill_threshold: number;
  readonly start: string;
  /** The node a cancelled run goes on from, to an end (its compensation). @defaultValue none */
  readonly on_cancel?: string;
  readonly nodes: Readonly<Record<string, WorkflowNode>>;
}

/** A node's successors as a list (none for routers, evaluators and ends: they name theirs otherwise). */
export function nextOf(node: WorkflowNode): readonly string[] {
  if (!('next' in node) || node.next === undefined) return [];
  return typeof node.next === 'string' ? [node.next] : node.next;
}
