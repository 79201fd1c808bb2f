/**
 * The core -> sandbox `POST /execute` contract (UHLP core architecture, section 2.4).
 *
 * This module is the single source of truth for the contract: the core, every
 * runner and the conformance tests import these schemas and types. Fields the
 * document leaves open ("add other details objects as needed") are kept open with
 * `additionalProperties`, so a newer core can add context without breaking runners.
 */
import { FormatRegistry, Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { WALK_MAX_FILES, WRITE_KINDS } from '../shared/work-tree-walk.js';

// TypeBox ships no formats; the contract uses one: ISO 8601 timestamps.
if (!FormatRegistry.Has('date-time')) {
  FormatRegistry.Set('date-time', (value) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value)));
}

export const EXECUTE_PATH = '/execute';
export const REQUEST_ID_HEADER = 'x-request-id';
export const TRACE_ID_HEADER = 'x-trace-id';

export const HttpMethod = Type.Union(
  ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'].map((m) => Type.Literal(m)),
);
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS' | 'HEAD';

export const BodyEncoding = Type.Union([Type.Literal('utf8'), Type.Literal('base64')]);
export type BodyEncoding = Static<typeof BodyEncoding>;

const StringMap = Type.Record(Type.String(), Type.String());

export const HttpDetails = Type.Object({
  method: HttpMethod,
  /** The path as the app sees it, with its query string. */
  path: Type.String(),
  routePattern: Type.Optional(Type.String()),
  pathParameters: Type.Optional(StringMap),
  /** A key repeated in the query string becomes an array of its values. */
  queryParameters: Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
  headers: StringMap,
  body: Type.String(),
  bodyEncoding: BodyEncoding,
});
export type HttpDetails = Static<typeof HttpDetails>;

export const TriggerDetails = Type.Object({
  sourceAppId: Type.String(),
  triggerEvent: Type.String(),
  payload: Type.Unknown(),
  /** How many internal events led to this one (1 for an event emitted by a turn of another source). */
  depth: Type.Optional(Type.Integer({ minimum: 1 })),
});

export const CallbackDetails = Type.Object({
  callbackUrl: Type.String(),
  /** The callback route's name and the correlation given to core.callback.create. */
  name: Type.Optional(Type.String()),
  correlation: Type.Optional(Type.String()),
  headers: StringMap,
  body: Type.String(),
  bodyEncoding: BodyEncoding,
});

export const QueueDetails = Type.Object({
  queueName: Type.String(),
  messageId: Type.String(),
  payload: Type.Unknown(),
});

export const CronDetails = Type.Object({
  jobId: Type.String(),
  scheduledTime: Type.String({ format: 'date-time' }),
});

/**
 * Every source but HTTP delivers at least once: a message may reach the script
 * again (a retry, a core that died mid-run). `invocationId` is the same on each
 * delivery of one message, so the script can dedupe by it.
 */
export const DeliveryDetails = Type.Object({
  invocationId: Type.String({ minLength: 1 }),
  /** 1 for the first delivery. */
  attempt: Type.Integer({ minimum: 1 }),
});
export type DeliveryDetails = Static<typeof DeliveryDetails>;

export const RequestSource = Type.Union(
  ['http', 'trigger', 'callback', 'queue', 'cron', 'internal'].map((s) => Type.Literal(s)),
);
export type RequestSource = 'http' | 'trigger' | 'callback' | 'queue' | 'cron' | 'internal';

export const RequestData = Type.Object(
  {
    source: RequestSource,
    httpDetails: Type.Optional(HttpDetails),
    triggerDetails: Type.Optional(TriggerDetails),
    callbackDetails: Type.Optional(CallbackDetails),
    queueDetails: Type.Optional(QueueDetails),
    cronDetails: Type.Optional(CronDetails),
    delivery: Type.Optional(DeliveryDetails),
  },
  { additionalProperties: true },
);
export type RequestData = Static<typeof RequestData>;

/** The details object that must be present for each source. */
export const DETAILS_FOR_SOURCE: Readonly<Record<RequestSource, keyof RequestData | undefined>> = {
  http: 'httpDetails',
  trigger: 'triggerDetails',
  callback: 'callbackDetails',
  queue: 'queueDetails',
  cron: 'cronDetails',
  internal: undefined,
};

/**
 * What the sandbox must run. Section 2.3 step 5 has the router add the component's
 * "taskDetails" to the context; the script path is relative to the definitions root
 * the runner was started with, and pinned to one definitions revision so that an
 * in-flight request finishes on the revision it started with.
 */
export const TaskDetails = Type.Object(
  {
    handler: Type.Union([Type.Literal('JIT'), Type.Literal('LLM'), Type.Literal('WORKFLOW')]),
    revision: Type.String(),
    script: Type.Optional(Type.String()),
    function: Type.Optional(Type.String()),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1 })),
    /**
     * An LLM task: the component's `llm` block as the AppDefinition gives it
     * (defaults applied). File paths in it are read through
     * core.state.getDefinitionFileContent at `revision`.
     */
    llm: Type.Optional(Type.Object({ prompt: Type.String({ minLength: 1 }) }, { additionalProperties: true })),
    /**
     * A cs-js component: the bundle the core resolved for it at this turn
     * (the component's function and ref, or its sha256), run by the csjs runner.
     */
    cs: Type.Optional(
      Type.Object(
        {
          tenant: Type.String({ minLength: 1 }),
          namespace: Type.String(),
          function: Type.String(),
          version: Type.Integer({ minimum: 0 }),
          ref: Type.Optional(Type.String()),
          sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
        },
        { additionalProperties: true },
      ),
    ),
    /** The files the turn declared it writes, for the prompt header. */
    declaredOutputs: Type.Optional(Type.Array(Type.Object({ path: Type.String(), role: Type.String() }))),
    /**
     * A candidate of the optimization oracle under verification (jit-runner
     * only): run this ES module instead of `script`, with `inputs` (one
     * held-back sample's template variables) as its event. Sent by the core only.
     */
    oracle: Type.Optional(Type.Object({ source: Type.String(), inputs: Type.Unknown() }, { additionalProperties: true })),
  },
  { additionalProperties: true },
);
export type TaskDetails = Static<typeof TaskDetails>;

export const DeploymentMode = Type.Union([
  Type.Literal('production'),
  Type.Literal('development'),
  Type.Literal('staging'),
]);
export type DeploymentMode = Static<typeof DeploymentMode>;

export const ExecuteContext = Type.Object(
  {
    appId: Type.String({ minLength: 1 }),
    componentId: Type.String({ minLength: 1 }),
    workflowInfo: Type.Optional(
      Type.Object({
        workflowId: Type.String(),
        startAt: Type.Optional(Type.String()),
        /** The run the execution drives: the orchestrator loads and checkpoints it through MCP. */
        runId: Type.Optional(Type.String()),
        /**
         * On a run's first execution, what `core.workflow.load` would answer
         * (contract/workflow/loaded-run.ts), when it is small enough: the
         * orchestrator starts from it instead of asking. Checked by the
         * orchestrator, not here: one that does not hold is ignored and the run
         * is loaded through MCP.
         */
        loaded: Type.Optional(Type.Unknown()),
      }),
    ),
    mcp_endpoint: Type.String(),
    /**
     * Bearer token for `mcp_endpoint`, bound to this execution's app, component,
     * request and revision; it stops working when the execution ends. Absent when
     * the core serves no MCP (then scripts have no tools).
     */
    mcp_token: Type.Optional(Type.String({ minLength: 1 })),
    stateConfig: Type.Object(
      {
        type: Type.String(),
        readTool: Type.Optional(Type.String()),
        writeTool: Type.Optional(Type.String()),
      },
      { additionalProperties: true },
    ),
    userInfo: Type.Optional(
      Type.Object({
        id: Type.String(),
        roles: Type.Array(Type.String()),
        isAuthenticated: Type.Boolean(),
        claims: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      }),
    ),
    sessionId: Type.Optional(Type.String()),
    /** The turn of the session this execution is (1-based). */
    turnNumber: Type.Optional(Type.Integer({ minimum: 1 })),
    /**
     * The turn's writable directories (FR-RT-012), relative to the sandbox's work
     * tree: the only places a script may write. The runner hands scripts their
     * absolute paths (`ctx.workspace`) and points TMPDIR, TEMP and TMP at `tmpDir`.
     */
    workspace: Type.Optional(Type.Object({ tmpDir: Type.String({ minLength: 1 }), outputDir: Type.String({ minLength: 1 }) }, { additionalProperties: true })),
    configuration: Type.Record(Type.String(), Type.Unknown()),
    applicationInfo: Type.Object({ deploymentMode: DeploymentMode }, { additionalProperties: true }),
    taskDetails: Type.Optional(TaskDetails),
  },
  { additionalProperties: true },
);
export type ExecuteContext = Static<typeof ExecuteContext>;

/**
 * A file of the app's definition at `taskDetails.revision`, sent by the core to a
 * runner that would otherwise read it through core.state.getDefinitionFileContent
 * (pods: src/sandbox/script-push.ts). The runner keeps it as it keeps what it reads.
 */
export const DefinitionFile = Type.Object({
  /** Relative to the app directory, as `taskDetails.script` names it. */
  path: Type.String({ minLength: 1, maxLength: 1024 }),
  /** The file's text (UTF-8). */
  content: Type.String(),
});
export type DefinitionFile = Static<typeof DefinitionFile>;

export const ExecuteRequest = Type.Object({
  requestId: Type.String({ minLength: 1 }),
  requestData: RequestData,
  context: ExecuteContext,
  definitionFiles: Type.Optional(Type.Array(DefinitionFile, { maxItems: 16 })),
  /**
   * The core cannot walk the sandbox's work tree itself (pods): after the
   * execution the runner walks it (src/shared/work-tree-walk.ts, the python
   * runner's runner_server.py), answers what it found in `writes`, and empties
   * it for the next turn. Sent only with a turn (`context.workspace`).
   * @defaultValue false: the core walks the tree itself
   */
  reportWrites: Type.Optional(Type.Boolean()),
});
export type ExecuteRequest = Static<typeof ExecuteRequest>;

export const ResultType = Type.Union([
  Type.Literal('generic'),
  Type.Literal('httpResponse'),
  Type.Literal('error'),
  Type.Literal('workflowStep'),
]);
export type ResultType = Static<typeof ResultType>;

export const HttpResponseData = Type.Object({
  statusCode: Type.Integer({ minimum: 100, maximum: 599 }),
  headers: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
  ),
  body: Type.Optional(Type.String()),
  bodyEncoding: Type.Optional(BodyEncoding),
});
export type HttpResponseData = Static<typeof HttpResponseData>;

export const ErrorData = Type.Object(
  {
    code: Type.String({ minLength: 1 }),
    message: Type.String(),
    details: Type.Optional(Type.Unknown()),
    /** The HTTP status the app asks for; used when it is 400-599, else 422. */
    status: Type.Optional(Type.Integer()),
    /**
     * Where a script exception (UHLP_SCRIPT_EXCEPTION) was thrown: frames of the
     * script's own files, paths relative to the app directory, most recent first,
     * one `at <function> (<path>:<line>[:<column>])` a line, bounded as
     * error-stack.ts says. For operators: the core logs it and keeps it in dead
     * letters, and never answers it to a client (but with UHLP_DEV_ERROR_STACKS).
     */
    stack: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
export type ErrorData = Static<typeof ErrorData>;

export const WorkflowStepData = Type.Object(
  {
    workflowId: Type.String(),
    stepId: Type.String(),
    status: Type.Union([Type.Literal('completed'), Type.Literal('failed')]),
    output: Type.Optional(Type.Unknown()),
    error: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);
export type WorkflowStepData = Static<typeof WorkflowStepData>;

export const McpCallMetric = Type.Object(
  {
    tool: Type.String(),
    count: Type.Integer({ minimum: 0 }),
    total_duration_ms: Type.Number({ minimum: 0 }),
    token_usage: Type.Optional(
      Type.Object({ prompt: Type.Number(), completion: Type.Number() }, { additionalProperties: true }),
    ),
  },
  { additionalProperties: true },
);

/** A stretch of an execution as the runner timed it: ms from when it took the request, and how long. */
export const RunnerSpan = Type.Object({ start_ms: Type.Number({ minimum: 0 }), duration_ms: Type.Number({ minimum: 0 }) }, { additionalProperties: true });

/**
 * What a runner timed of one execution, for the core's trace (a sandbox has no
 * network to export spans): the script's first load, the script's own run, and
 * each tool call with its outcome (`ok` or the failure's code). The core makes
 * them child spans of the execution's.
 */
export const RunnerTimings = Type.Object(
  {
    script_load: Type.Optional(RunnerSpan),
    run: Type.Optional(RunnerSpan),
    tool_calls: Type.Optional(
      Type.Array(
        Type.Object(
          { tool: Type.String({ maxLength: 256 }), start_ms: Type.Number({ minimum: 0 }), duration_ms: Type.Number({ minimum: 0 }), outcome: Type.String({ maxLength: 64 }) },
          { additionalProperties: true },
        ),
        { maxItems: 256 },
      ),
    ),
  },
  { additionalProperties: true },
);
export type RunnerTimings = Static<typeof RunnerTimings>;

export const ExecuteMetrics = Type.Object(
  {
    /** What the runner timed, for the core's trace (RunnerTimings). */
    timings: Type.Optional(RunnerTimings),
    execution_time_ms: Type.Optional(Type.Number({ minimum: 0 })),
    /** jit-runner: the time of the script's first load in this runner (kept or read, then imported), when this execution did it. */
    script_load_ms: Type.Optional(Type.Number({ minimum: 0 })),
    mcp_calls: Type.Optional(Type.Array(McpCallMetric)),
    /**
     * llm-orchestrator, optimized components only: the paths of the template
     * variables the templates read (`[["body", "text"], ["params", "id"]]`), the
     * inputs of the optimization oracle's samples. Typed loosely here: the core
     * checks it where it is used, and a bad one loses a sample, not the answer.
     */
    template_inputs: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);
export type ExecuteMetrics = Static<typeof ExecuteMetrics>;

/** A file (or other entry) the runner's walk found in its work tree after the execution. */
export const ReportedWrite = Type.Object({
  /** `tmp/<sid>/<path>`, `output/<sid>/<path>`, a name beside them in the tree, or a side directory's entry (`/run/uhlp/<name>`). */
  path: Type.String({ minLength: 1, maxLength: 4096 }),
  hash: Type.Optional(Type.String({ pattern: '^sha256:[0-9a-f]{64}$' })),
  size: Type.Integer({ minimum: 0 }),
  kind: Type.Union(WRITE_KINDS.map((kind) => Type.Literal(kind))),
});
export type ReportedWrite = Static<typeof ReportedWrite>;

/** What the runner's walk of its work tree found (asked for with `reportWrites`), and whether it removed it. */
export const WritesReport = Type.Object(
  {
    /** Everything found, the turn's directories and strays alike; at most one entry past the walk's file limit (`over-limit`). */
    realized: Type.Array(ReportedWrite, { maxItems: WALK_MAX_FILES + 2 }),
    /** The runner emptied the tree after the walk (the turn's directories kept, empty, for its next turn). */
    emptied: Type.Boolean(),
  },
  { additionalProperties: true },
);
export type WritesReport = Static<typeof WritesReport>;

export const ExecuteResponse = Type.Object({
  requestId: Type.String(),
  resultType: ResultType,
  data: Type.Unknown(),
  metrics: Type.Optional(ExecuteMetrics),
  /** The runner's walk of its work tree, when the request asked for it (`reportWrites`). */
  writes: Type.Optional(WritesReport),
});
export type ExecuteResponse = Static<typeof ExecuteResponse>;

/** The body a runner sends with a 4xx/5xx of its own HTTP server. */
export const RunnerErrorBody = Type.Object(
  { error: Type.String(), details: Type.Optional(Type.String()) },
  { additionalProperties: true },
);
export type RunnerErrorBody = Static<typeof RunnerErrorBody>;

const compiled = new Map<TSchema, TypeCheck<TSchema>>();

function checker<T extends TSchema>(schema: T): TypeCheck<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  return check as TypeCheck<T>;
}

export interface ContractViolation {
  /** JSON pointer of the offending value, `/` for the root. */
  path: string;
  message: string;
}

/** Returns the first violation of `value` against `schema`, or undefined when it conforms. */
export function firstViolation(schema: TSchema, value: unknown): ContractViolation | undefined {
  const check = checker(schema);
  if (check.Check(value)) return undefined;
  const first = check.Errors(value).First();
  return { path: first?.path || '/', message: first?.message ?? 'invalid value' };
}

/** Checks an /execute request, including the details object its source requires. */
export function validateExecuteRequest(value: unknown): ContractViolation | undefined {
  const violation = firstViolation(ExecuteRequest, value);
  if (violation) return violation;
  const request = value as ExecuteRequest;
  const detailsKey = DETAILS_FOR_SOURCE[request.requestData.source as RequestSource];
  if (detailsKey && request.requestData[detailsKey] === undefined) {
    return { path: `/requestData/${detailsKey}`, message: `required when source is "${request.requestData.source}"` };
  }
  return undefined;
}

const DATA_SCHEMA: Readonly<Record<ResultType, TSchema | undefined>> = {
  generic: undefined,
  httpResponse: HttpResponseData,
  error: ErrorData,
  workflowStep: WorkflowStepData,
};

/** Checks an /execute response, including the shape of `data` its resultType requires. */
export function validateExecuteResponse(value: unknown): ContractViolation | undefined {
  const violation = firstViolation(ExecuteResponse, value);
  if (violation) return violation;
  const response = value as ExecuteResponse;
  const dataSchema = DATA_SCHEMA[response.resultType];
  if (!dataSchema) return undefined;
  const dataViolation = firstViolation(dataSchema, response.data);
  return dataViolation && { path: `/data${dataViolation.path === '/' ? '' : dataViolation.path}`, message: dataViolation.message };
}
