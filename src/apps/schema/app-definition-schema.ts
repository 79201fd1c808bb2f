/**
 * The AppDefinition schema: the single source for the YAML kept in Git, for API
 * input, and for the CRDs generated into crds/. Keep it structural in the
 * Kubernetes sense (every node typed, no unions of objects), so it can be emitted
 * as an OpenAPI v3 CRD schema unchanged; free-form maps are marked with
 * `x-kubernetes-preserve-unknown-fields`.
 */
import { Type, type Static, type TUnsafe } from '@sinclair/typebox';
import { DURATION_PATTERN, SIZE_PATTERN } from '../../ledger/ledger-retention.js';
import { LlmComponentSpec, NAME_PATTERN } from '../../contract/llm-component-schema.js';
import { FlowSpec } from './flow-schema.js';
import { UiSpec } from './ui-schema.js';

export { LlmComponentSpec, OptimizeSpec } from '../../contract/llm-component-schema.js';

export const API_GROUP = 'uhlp.dev';
export const API_VERSION = 'v1alpha1';
export const APP_API_VERSION = `${API_GROUP}/${API_VERSION}`;
export const APP_KIND = 'AppDefinition';

const Name = (description: string) => Type.String({ pattern: NAME_PATTERN, minLength: 1, maxLength: 63, description });

/**
 * Kubernetes label-value syntax: component ids never name a resource, only label
 * one (metrics, ledger, pod labels), so they take what users write (`outOfStock`, `v1.quote`).
 */
export const COMPONENT_ID_PATTERN = '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$';
const ComponentId = (description: string) => Type.String({ pattern: COMPONENT_ID_PATTERN, minLength: 1, maxLength: 63, description });

/** A free-form JSON object, kept whole by the Kubernetes API server. */
const FreeForm = (description: string): TUnsafe<Record<string, unknown>> =>
  // A real TObject at run time (so the compiler checks it), typed as a record.
  Type.Object({}, { description, additionalProperties: true, 'x-kubernetes-preserve-unknown-fields': true }) as unknown as TUnsafe<
    Record<string, unknown>
  >;

/** The longest wall time an app may give one execution (`limits.timeoutMs`), ms. */
export const MAX_EXECUTION_TIMEOUT_MS = 900_000;

export const SandboxLimits = Type.Object(
  {
    memoryMb: Type.Integer({ minimum: 16, maximum: 65536, default: 128, description: 'Memory cap of one sandbox, MiB.' }),
    cpus: Type.Number({ exclusiveMinimum: 0, maximum: 64, default: 0.5, description: 'CPU cap of one sandbox, in cores.' }),
    timeoutMs: Type.Integer({ minimum: 1, maximum: MAX_EXECUTION_TIMEOUT_MS, default: 3000, description: 'Wall time of one execution; past it the sandbox is destroyed and the request gets 504.' }),
  },
  { additionalProperties: false },
);
export type SandboxLimits = Static<typeof SandboxLimits>;

export const RunnerType = Type.Union([Type.Literal('jit'), Type.Literal('llm'), Type.Literal('csjs'), Type.Literal('python')], {
  description: 'The runner the pool sandboxes run.',
});

export const PoolSpec = Type.Object(
  {
    name: Name('Pool name, unique within the app.'),
    runner: Type.Union([Type.Literal('jit'), Type.Literal('llm'), Type.Literal('csjs'), Type.Literal('python'), Type.Literal('mcp')], {
      default: 'jit',
      description:
        'The runner the pool sandboxes run: jit (JIT scripts, JavaScript), python (JIT scripts, Python), llm (prompts and workflows), csjs (published cs-js bundles in V8 isolates), mcp (one stdio MCP server of mcpServers per sandbox).',
    }),
    image: Type.Optional(Type.String({ minLength: 1, description: 'Container image for the Docker and pod drivers; the locally built runner image when omitted.' })),
    minWarm: Type.Integer({ minimum: 0, maximum: 1000, default: 1, description: 'Idle, ready sandboxes kept as warm spares (within maxSize); /readyz waits for them.' }),
    maxSize: Type.Integer({ minimum: 1, maximum: 1000, default: 4, description: 'Hard cap on sandboxes of the pool, starting and busy included.' }),
    maxUses: Type.Integer({ minimum: 1, default: 1000, description: 'A sandbox is recycled after this many executions.' }),
    concurrency: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 1,
      description:
        'Executions one sandbox runs at once. 1 gives every execution a runner of its own; more share a runner (its memory and module state, and a timeout or crash ends them all) for throughput on few cores.',
    }),
    idleTtlSeconds: Type.Integer({ minimum: 1, default: 300, description: 'Idle sandboxes unused for this long are destroyed, down to minWarm idle ones.' }),
    maxQueue: Type.Integer({ minimum: 0, maximum: 100000, default: 256, description: 'Requests that may wait for a sandbox when all are busy; past it they get 503.' }),
    acquireTimeoutMs: Type.Integer({ minimum: 1, maximum: 600000, default: 5000, description: 'How long a request waits for a sandbox before 503.' }),
    limits: Type.Object(SandboxLimits.properties, { additionalProperties: false, default: {} }),
  },
  { additionalProperties: false },
);
export type PoolSpec = Static<typeof PoolSpec>;

export const HandlerType = Type.Union([Type.Literal('JIT'), Type.Literal('LLM'), Type.Literal('WORKFLOW')]);
export type HandlerType = Static<typeof HandlerType>;

export const DeclaredOutputSpec = Type.Object(
  {
    path: Type.String({
      pattern: '^(tmp|output)/.',
      maxLength: 512,
      description: 'A file every turn writes: output/<path> (kept with the session) or tmp/<path> (scratch); a glob such as tmp/** allows any number of files, none included.',
    }),
    role: Type.String({ minLength: 1, maxLength: 64, description: 'What the file is for (report, scratch, ...).' }),
  },
  { additionalProperties: false },
);

export const ComponentSpec = Type.Object(
  {
    id: ComponentId('Component id, unique within the app: letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit.'),
    handler: HandlerType,
    pool: Name('The pool whose sandboxes run this component.'),
    jit: Type.Optional(
      Type.Object(
        {
          script: Type.String({ minLength: 1, description: 'Script path relative to the app directory: an ES module (.js or .mjs) on a jit pool, a Python module (.py) on a python pool.' }),
          function: Type.String({ minLength: 1, default: 'default', description: "Named export to call; `default` when omitted (a Python script's `handler`)." }),
        },
        { additionalProperties: false },
      ),
    ),
    cs: Type.Optional(
      Type.Object(
        {
          function: Type.Optional(
            Type.String({
              pattern: '^[a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?$',
              description: "A published cs-js function of the app, namespace/function (uhlp fn publish, core.fn.publish).",
            }),
          ),
          ref: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'With function: a version number, an alias (prod), or latest; latest when omitted.' })),
          sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$', description: "Instead of function: one bundle of the app's, by its sha256." })),
        },
        {
          additionalProperties: false,
          description: 'A JIT component run from a published cs-js bundle (in a pool with runner: csjs) instead of a script: function (and ref), or sha256.',
        },
      ),
    ),
    llm: Type.Optional(LlmComponentSpec),
    fallback: Type.Optional(
      Type.Object(
        { pool: Name('The pool (runner: llm) that runs the llm block.') },
        {
          additionalProperties: false,
          description:
            "A JIT component generated from its llm block (the optimization oracle writes it): the llm block answers the inputs the code declines (ctx.fallback()) and is the reference the code is compared with in shadow and canary.",
        },
      ),
    ),
    workflow: Type.Optional(
      Type.Object(
        {
          workflowId: Type.String({
            pattern: '^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$',
            maxLength: 63,
            description: 'The workflow file: workflows/<workflowId>.yaml in the app directory.',
          }),
          doubleTexting: Type.Optional(
            Type.Union(
              [Type.Literal('reject'), Type.Literal('enqueue'), Type.Literal('interrupt'), Type.Literal('rollback')],
              {
                default: 'reject',
                description:
                  "What a request that continues a stored session (X-UHLP-Session-ID) does while a run of that session is active (running or paused): reject answers 409 UHLP_WORKFLOW_SESSION_BUSY with the active run's id; enqueue waits (in order, at most 16 per session) and starts once the active run ends; interrupt cuts the active run's step and starts a run from the start node keeping its blackboard, with the new input; rollback cancels the active run and starts a fresh one with the new input.",
              },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    declaredOutputs: Type.Optional(
      Type.Array(DeclaredOutputSpec, {
        maxItems: 256,
        description:
          "The files each turn writes in its session directories. After the turn the core compares what was written with this list (and the request's X-UHLP-Declared-Outputs): an undeclared or missing write refuses the turn with UHLP_WRITE_SURFACE_MISMATCH. Without it, a turn may write nothing.",
      }),
    ),
    flow: Type.Optional(
      Type.Object(FlowSpec.properties, {
        additionalProperties: false,
        description: "Flow control of this component's turns per key, whatever route (or workflow step) starts them; a workflow run holds its slot from its start until it ends or first pauses (docs/flow-control.md).",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ComponentSpec = Static<typeof ComponentSpec>;

export const HttpRouteSpec = Type.Object(
  {
    method: Type.Union(
      ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'].map((m) => Type.Literal(m)),
      { description: 'HTTP method matched exactly.' },
    ),
    path: Type.String({ pattern: '^/', description: 'Path pattern: literal segments, `:name` parameters, and a trailing `*`.' }),
  },
  { additionalProperties: false },
);

/** Queue names, cron job ids, callback names and trigger events: label-value syntax, as component ids. */
const SourceName = (description: string) => Type.String({ pattern: COMPONENT_ID_PATTERN, minLength: 1, maxLength: 63, description });

/** What every delivery source (queue, cron, callback, trigger) shares: at-least-once delivery with retries and dead letters. */
const DeliveryPolicy = {
  concurrency: Type.Integer({ minimum: 1, maximum: 256, default: 1, description: 'Executions of this route at once on one core.' }),
  maxAttempts: Type.Integer({ minimum: 1, maximum: 100, default: 5, description: 'Attempts of one message (the first included); past them it goes to the dead letters.' }),
  backoff: Type.Object(
    {
      initialMs: Type.Integer({ minimum: 1, maximum: 3600000, default: 200, description: 'Wait before the second attempt; doubled for each attempt after it.' }),
      maxMs: Type.Integer({ minimum: 1, maximum: 86400000, default: 30000, description: 'Ceiling of the wait between two attempts.' }),
    },
    { additionalProperties: false, default: {}, description: 'Exponential backoff between attempts.' },
  ),
  maxAgeSeconds: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 31536000, description: 'A message older than this when its attempt comes goes to the dead letters without running.' }),
  ),
  deadLetter: Type.Boolean({ default: true, description: 'Keep messages that failed every attempt (or expired) as dead letters; false drops them.' }),
  leaseSeconds: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 86400,
      description: "How long a message handed to a core stays its own before another core takes it over (that core died). Must exceed the pool's acquireTimeoutMs + timeoutMs; their sum + 30 s when omitted.",
    }),
  ),
};

export const QueueRouteSpec = Type.Object(
  { name: SourceName('Queue name; its Redis stream is <prefix>queue:<appId>:<name>.'), ...DeliveryPolicy },
  { additionalProperties: false },
);
export type QueueRouteSpec = Static<typeof QueueRouteSpec>;

export const CronRouteSpec = Type.Object(
  {
    schedule: Type.String({ minLength: 9, maxLength: 256, description: 'Five cron fields (minute hour day-of-month month day-of-week), or six with seconds first.' }),
    timezone: Type.String({ minLength: 1, maxLength: 64, default: 'UTC', description: 'IANA time zone the schedule is read in (Europe/Paris).' }),
    jobId: SourceName('Job id, unique within the app; slots are claimed and recorded under it.'),
    missed: Type.Union([Type.Literal('skip'), Type.Literal('run-once')], {
      default: 'skip',
      description: 'After downtime: skip the slots missed, or run once for the latest of them.',
    }),
    ...DeliveryPolicy,
  },
  { additionalProperties: false },
);
export type CronRouteSpec = Static<typeof CronRouteSpec>;

export const CallbackRouteSpec = Type.Object(
  {
    name: SourceName('Callback name, given to core.callback.create.'),
    ttlSeconds: Type.Integer({ minimum: 1, maximum: 31536000, default: 86400, description: 'Life of a callback URL created for this route.' }),
    ...DeliveryPolicy,
  },
  { additionalProperties: false },
);
export type CallbackRouteSpec = Static<typeof CallbackRouteSpec>;

export const TriggerRouteSpec = Type.Object(
  {
    event: Type.String({ pattern: '^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$', description: 'Internal event name this route receives (order.created).' }),
    from: Type.Optional(Type.Array(Name('An app whose events this route receives.'), { minItems: 1, description: 'Apps whose events this route receives; this app alone when omitted.' })),
    ...DeliveryPolicy,
  },
  { additionalProperties: false },
);
export type TriggerRouteSpec = Static<typeof TriggerRouteSpec>;

export const RouteSpec = Type.Object(
  {
    http: Type.Optional(HttpRouteSpec),
    cron: Type.Optional(CronRouteSpec),
    queue: Type.Optional(QueueRouteSpec),
    callback: Type.Optional(CallbackRouteSpec),
    trigger: Type.Optional(TriggerRouteSpec),
    component: ComponentId('The component this route runs.'),
    flow: Type.Optional(FlowSpec),
  },
  { additionalProperties: false, description: 'Exactly one of http, cron, queue, callback, trigger, and the component it runs.' },
);
export type RouteSpec = Static<typeof RouteSpec>;

export const IngressSpec = Type.Object(
  {
    hosts: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'Hosts routed to this app on their full path.' }),
    pathPrefix: Type.Optional(Type.String({ pattern: '^/[^?#]*$', description: 'Path prefix routed to this app; /<appId> when omitted.' })),
  },
  { additionalProperties: false },
);

/** A `host:port` pair (`[::1]:8080` for IPv6). */
const HostPort = Type.String({ pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[^\\s:/\\[\\]]+):[0-9]{1,5}$', description: 'host:port, [v6]:port for IPv6.' });

export const ShellCapability = Type.Object(
  {
    allow: Type.Array(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }), {
      description: 'argv prefixes that may run: [git, status] allows `git status` and `git status --short`, never `git push`.',
    }),
    timeoutMs: Type.Integer({ minimum: 1, maximum: 120000, default: 5000, description: 'Ceiling of one command; a call may ask for less.' }),
    maxStdoutBytes: Type.Integer({ minimum: 0, maximum: 4194304, default: 65536, description: 'Bytes of stdout kept; the rest is cut and flagged.' }),
    maxStderrBytes: Type.Integer({ minimum: 0, maximum: 4194304, default: 65536, description: 'Bytes of stderr kept; the rest is cut and flagged.' }),
    env: Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), {
      default: [],
      description: "Names of the core's environment variables passed to the command; nothing else is.",
    }),
  },
  { additionalProperties: false },
);
export type ShellCapability = Static<typeof ShellCapability>;

/**
 * A key of one of the app's own secrets (declared in spec.secrets): a Secret of
 * its namespace in a cluster, its section of the core's secrets file otherwise.
 */
export const SecretRef = Type.Object(
  {
    name: Name("A secret of the app's own: a Secret of its namespace in a cluster, its section of the core's secrets file otherwise."),
    key: Type.String({ pattern: '^[-._A-Za-z0-9]{1,253}$', description: 'The key of the secret whose value is used.' }),
  },
  { additionalProperties: false },
);
export type SecretRef = Static<typeof SecretRef>;

/**
 * The app's own OpenAI-compatible model server: its LLM components and its
 * sandboxes' core.llm.* calls go there instead of the operator's, and the core
 * adds the key (one of the app's secrets) as `Authorization: Bearer` at egress.
 */
export const AppLlmSpec = Type.Object(
  {
    endpoint: Type.Object(
      {
        url: Type.String({
          pattern: '^https?://[^/?#\\s@]+(/[^?#\\s]*)?$',
          maxLength: 2048,
          description:
            "Base URL up to the API version (https://models.example.com/v1); /chat/completions is appended. No credentials, query or fragment. It must resolve to public addresses unless the operator lists its host:port in UHLP_LLM_ALLOW_PRIVATE; checked at load and on every connection.",
        }),
        secret: Type.Object(SecretRef.properties, {
          additionalProperties: false,
          description: 'The secret (declared in spec.secrets) and key whose value is sent as `Authorization: Bearer <value>`; the sandboxes never see it.',
        }),
      },
      { additionalProperties: false },
    ),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "Model used when a call names none. @default the operator's UHLP_LLM_MODEL" })),
  },
  { additionalProperties: false },
);
export type AppLlmSpec = Static<typeof AppLlmSpec>;

const WEB_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * A credential the core adds to the requests of a web fetch that go to one
 * origin (and path prefix, and methods), after every other check: the script
 * never sees the value nor the header, and a redirect to another origin does
 * not carry it.
 */
export const WebInjection = Type.Object(
  {
    url: Type.String({
      pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$',
      maxLength: 2048,
      description: 'Origin and path prefix of the requests that carry the credential (https://api.example.com/v1/); scheme, host and port must match exactly.',
    }),
    methods: Type.Optional(
      Type.Array(Type.Union(WEB_METHODS.map((m) => Type.Literal(m))), { minItems: 1, description: 'Methods whose requests carry it. @default every method the capability allows.' }),
    ),
    header: Type.Optional(Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$", description: 'The header that carries it (Authorization, X-Api-Key); exactly one of header and query.' })),
    query: Type.Optional(Type.String({ pattern: '^[-._~A-Za-z0-9]{1,64}$', description: 'The query parameter that carries it (api_key); exactly one of header and query.' })),
    scheme: Type.Optional(
      Type.Union([Type.Literal('bearer'), Type.Literal('basic')], {
        description: 'bearer: `Bearer <value>`; basic: `Basic <base64 of the value>`, the value being `user:password`. Headers only.',
      }),
    ),
    prefix: Type.Optional(Type.String({ maxLength: 32, pattern: '^[^\\r\\n]*$', description: 'Text before the value (`Token `), when no scheme is given.' })),
    secretRef: SecretRef,
  },
  { additionalProperties: false },
);
export type WebInjection = Static<typeof WebInjection>;

export const WebCapability = Type.Object(
  {
    allowHosts: Type.Array(Type.String({ minLength: 1 }), {
      description: 'Hosts that may be fetched: exact names or IP literals, or *.example.com for subdomains. Checked on every redirect.',
    }),
    methods: Type.Array(Type.Union(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((m) => Type.Literal(m))), {
      default: ['GET'],
      description: 'HTTP methods that may be used.',
    }),
    timeoutMs: Type.Integer({ minimum: 1, maximum: 60000, default: 5000, description: 'Ceiling of one fetch, redirects and body included.' }),
    maxBodyBytes: Type.Integer({ minimum: 0, maximum: 10485760, default: 1048576, description: 'Bytes of a response body kept.' }),
    allowPrivate: Type.Array(HostPort, {
      default: [],
      description: 'host:port pairs that may resolve to loopback, private or link-local addresses (tests, internal services).',
    }),
    inject: Type.Optional(
      Type.Array(WebInjection, {
        maxItems: 32,
        description: "Credentials the core adds to matching requests, from the app's secrets; the script never sees them.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type WebCapability = Static<typeof WebCapability>;

export const KvOperation = Type.Union([Type.Literal('get'), Type.Literal('set'), Type.Literal('del')]);
export type KvOperation = Static<typeof KvOperation>;

export const KvCapability = Type.Object(
  {
    prefixes: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Key prefixes the app may touch, inside its own namespace.' }),
    ops: Type.Array(KvOperation, { default: ['get', 'set', 'del'], description: 'Operations allowed; each one is a tool (core.kv.get, ...).' }),
  },
  { additionalProperties: false },
);
export type KvCapability = Static<typeof KvCapability>;

export const LlmCapability = Type.Object(
  {
    models: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Models the app may call; the first is used when a call names none.' }),
    maxTokens: Type.Integer({ minimum: 1, maximum: 1000000, default: 1024, description: 'Ceiling of completion tokens per call.' }),
    tokensPerDay: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Tokens (prompt and completion) the app may spend per UTC day; past it calls get 429 UHLP_LLM_BUDGET_EXCEEDED with Retry-After.' }),
    ),
  },
  { additionalProperties: false },
);
export type LlmCapability = Static<typeof LlmCapability>;

export const CodeqCapability = Type.Object(
  {
    publishTopics: Type.Array(Type.String({ pattern: '^[A-Za-z0-9*][A-Za-z0-9._:*-]{0,199}$' }), {
      minItems: 1,
      description: 'Topic patterns the app may publish to (core.codeq.publish, cs.codeq.publish); `*` stands for any run of characters.',
    }),
  },
  { additionalProperties: false },
);
export type CodeqCapability = Static<typeof CodeqCapability>;

export const FunctionsCapability = Type.Object(
  {
    namespaces: Type.Array(Type.String({ pattern: '^([a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?|\\*)$' }), {
      minItems: 1,
      description: 'cs-js namespaces the app may publish functions into and alias (core.fn.publish, core.fn.alias.set); `*` for any.',
    }),
  },
  { additionalProperties: false },
);
export type FunctionsCapability = Static<typeof FunctionsCapability>;

/** An app-relative path glob (`data/**`, `prompts/*.njk`), matched in linear time (shared/path-glob.ts), which refuses what it cannot compile. */
const PathGlob = Type.String({ minLength: 1, maxLength: 512, description: 'Glob of paths relative to the app directory (`data/**`, `prompts/*.njk`).' });

export const StateCapability = Type.Object(
  {
    write: Type.Array(PathGlob, {
      minItems: 1,
      description:
        "Globs of the app's files that core.state.applyStateDiff may create, change or delete. app.yaml, and every file that decides the app's capabilities, routes, hosts or pools, is never writable, whatever these say.",
    }),
    forbidden: Type.Array(PathGlob, { default: [], description: 'Globs never written, whatever write says (matched without regard to case).' }),
  },
  { additionalProperties: false },
);
export type StateCapability = Static<typeof StateCapability>;

/**
 * A glob over federated tool names: `app.<server>.<tool>` or
 * `community.<server>.<tool>`, of the characters of tool names, `*` (any run)
 * and `?` (one character): matched in linear time (wildcard-match.ts), so no
 * glob can make a name's check slow. Other glob syntax (`{a,b}`, `[ab]`) is
 * refused rather than read as plain text, which would let a forbidden glob
 * forbid nothing.
 */
const McpToolGlob = Type.String({
  pattern: '^(app|community|\\*)\\.[A-Za-z0-9_.*?-]*$',
  minLength: 3,
  maxLength: 256,
  description: 'Glob over federated tool names, `app.<server>.<tool>` or `community.<server>.<tool>`: `*` stands for any run of characters, `?` for one (`app.fs.read_*`, `community.*.*`).',
});

export const McpCapability = Type.Object(
  {
    allow: Type.Array(McpToolGlob, { minItems: 1, description: 'Federated tools the app may list and call.' }),
    forbidden: Type.Array(McpToolGlob, { default: [], description: 'Federated tools never listed nor callable, whatever allow says.' }),
  },
  { additionalProperties: false },
);
export type McpCapability = Static<typeof McpCapability>;

export const SecretsCapability = Type.Object(
  {
    read: Type.Array(
      Type.Object(
        {
          secret: Name('A secret of spec.secrets whose value the components may read.'),
          components: Type.Array(ComponentId('A component of this app.'), { minItems: 1, description: 'The components whose executions may read it; no other may.' }),
        },
        { additionalProperties: false },
      ),
      {
        minItems: 1,
        description:
          "Secrets handed to a script that must hold the value itself (to sign with): core.secrets.read answers it to an execution of a listed component, in that call's result only (never in its environment or files). Prefer capabilities.web.inject, which never hands a value in.",
      },
    ),
  },
  { additionalProperties: false },
);
export type SecretsCapability = Static<typeof SecretsCapability>;

/**
 * What the app's sandboxes may ask the core to do through MCP. A missing key
 * means no such tool at all: the tool is not listed and a call is refused.
 */
export const CapabilitiesSpec = Type.Object(
  {
    shell: Type.Optional(ShellCapability),
    web: Type.Optional(WebCapability),
    secrets: Type.Optional(SecretsCapability),
    kv: Type.Optional(KvCapability),
    llm: Type.Optional(LlmCapability),
    state: Type.Optional(StateCapability),
    mcp: Type.Optional(McpCapability),
    codeq: Type.Optional(CodeqCapability),
    functions: Type.Optional(FunctionsCapability),
    queue: Type.Optional(
      Type.Object(
        { publish: Type.Array(Type.String({ pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$' }), { minItems: 1, description: 'Queues core.queue.publish may publish to: a queue name of this app, or <appId>/<name> of another.' }) },
        { additionalProperties: false },
      ),
    ),
    callback: Type.Optional(
      Type.Object(
        { create: Type.Array(Type.String({ pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$' }), { minItems: 1, description: "This app's callback routes core.callback.create may make URLs for." }) },
        { additionalProperties: false },
      ),
    ),
    trigger: Type.Optional(
      Type.Object(
        { emit: Type.Array(Type.String({ pattern: '^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$' }), { minItems: 1, description: 'Internal events core.trigger.emit may emit.' }) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type CapabilitiesSpec = Static<typeof CapabilitiesSpec>;

export const LedgerRetentionSpec = Type.Object(
  {
    maxAge: Type.Optional(
      Type.String({ pattern: DURATION_PATTERN, description: "Ledger segments of the app's sessions last written longer ago than this are removed: <n>s, m, h or d (7d)." }),
    ),
    maxSize: Type.Optional(
      Type.String({ pattern: SIZE_PATTERN, description: "The oldest segments of the app's sessions are removed while they hold more than this: bytes, or <n>Ki, Mi, Gi, Ti (K, M, G, T decimal)." }),
    ),
  },
  { additionalProperties: false, description: "Retention of the app's ledgers, on top of its plane's (the core's UHLP_LEDGER_RETENTION): the stricter limit removes a segment." },
);
export type LedgerRetentionSpec = Static<typeof LedgerRetentionSpec>;

/**
 * A header of a remote MCP server, taken from a secret of the app's own:
 * never from the app's files. The secret is an entry of the app's section of
 * the core's secrets file (UHLP_SECRETS_FILE), in a cluster a Secret of the
 * app's namespace; naming any other is a definition problem.
 */
export const McpHeaderSpec = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$', description: 'Header name (Authorization, X-Api-Key).' }),
    secretRef: SecretRef,
    prefix: Type.Optional(Type.String({ maxLength: 32, description: 'Text before the secret value (`Bearer `).' })),
  },
  { additionalProperties: false },
);

/** A stdio MCP server: what runs, with which arguments and environment, in which pool. */
export const McpStdioSpec = Type.Object(
  {
    pool: Name('The pool (runner: mcp) whose sandboxes run the server, one server process per sandbox.'),
    package: Type.Optional(
      Type.Object(
        {
          name: Type.String({ pattern: '^(@[a-z0-9][-a-z0-9._~]*/)?[a-z0-9][-a-z0-9._~]*$', maxLength: 214, description: 'npm package name.' }),
          version: Type.String({ pattern: '^\\d+\\.\\d+\\.\\d+(-[0-9A-Za-z.-]+)?$', description: 'Exact version: ranges and tags are refused.' }),
          integrity: Type.Optional(
            Type.String({ pattern: '^sha512-[A-Za-z0-9+/]+={0,2}$', description: "The package's sha512 integrity; the registry's is checked when omitted." }),
          ),
          bin: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "Which of the package's bin entries runs; the only one when omitted." })),
        },
        { additionalProperties: false, description: 'An npm package, installed into the core\'s content-addressed cache and mounted read-only.' },
      ),
    ),
    script: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: "A Node script of the app's files (.js or .mjs) that serves MCP on stdio." })),
    args: Type.Array(Type.String({ maxLength: 4096 }), {
      default: [],
      maxItems: 64,
      description: "Arguments after the entry. `{work}` stands for the sandbox's writable tree (directories under it that an argument names are made).",
    }),
    env: Type.Array(
      Type.Object(
        {
          name: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' }),
          value: Type.String({ maxLength: 4096, description: 'The value; `{work}` stands for the sandbox\'s writable tree. Not for secrets: this is the app\'s file.' }),
        },
        { additionalProperties: false },
      ),
      { default: [], maxItems: 32, description: "Environment variables of the server's process; nothing of the core's environment is passed." },
    ),
  },
  { additionalProperties: false },
);

/**
 * An MCP server whose tools the app's executions may call through the core as
 * `app.<name>.<tool>`: a stdio server run in sandboxes of a `runner: mcp` pool
 * (an npm package at an exact version, or a script of the app), or a remote
 * server over HTTP. Exactly one of stdio and http.
 */
export const McpServerSpec = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$', description: 'Server name: its tools are app.<name>.<tool>.' }),
    stdio: Type.Optional(McpStdioSpec),
    http: Type.Optional(
      Type.Object(
        {
          url: Type.String({ pattern: '^https?://', maxLength: 2048, description: 'Streamable HTTP endpoint; reached through the SSRF guard.' }),
          headers: Type.Array(McpHeaderSpec, { default: [], maxItems: 16 }),
        },
        { additionalProperties: false },
      ),
    ),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 600000, default: 10000, description: 'Longest wait for one call; past it the caller gets UHLP_MCP_SERVER_TIMEOUT.' }),
    maxOutputBytes: Type.Integer({ minimum: 1024, maximum: 16777216, default: 1048576, description: 'Largest answer read for one call; past it UHLP_MCP_SERVER_OUTPUT_TOO_LARGE.' }),
  },
  { additionalProperties: false },
);
export type McpServerSpec = Static<typeof McpServerSpec>;

export const AppLedgerSpec = Type.Object(
  {
    ambient: Type.Union([Type.Literal('full'), Type.Literal('sampled'), Type.Literal('off')], {
      default: 'full',
      description:
        'What is ledgered of requests that name no session (the ambient session): every turn (full), one turn in 1/sampleRate (sampled), or none (off). ' +
        'Stored sessions are always ledgered in full, and a turn with a refusal or capability violation always is.',
    }),
    sampleRate: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.01, description: 'With ambient: sampled, the share of ambient turns ledgered (0.01: one in a hundred).' }),
    retention: Type.Optional(LedgerRetentionSpec),
  },
  { additionalProperties: false },
);
export type AppLedgerSpec = Static<typeof AppLedgerSpec>;

export const AppSpec = Type.Object(
  {
    deploymentMode: Type.Union([Type.Literal('development'), Type.Literal('staging'), Type.Literal('production')], {
      default: 'development',
    }),
    ingress: Type.Object(IngressSpec.properties, { additionalProperties: false, default: {} }),
    pools: Type.Array(PoolSpec, { minItems: 1 }),
    components: Type.Array(ComponentSpec, { minItems: 1 }),
    routes: Type.Array(RouteSpec, { default: [] }),
    configuration: Type.Optional(FreeForm('Configuration values given to every execution of the app.')),
    source: Type.Optional(
      Type.Object(
        {
          git: Type.Object(
            {
              url: Type.String({
                minLength: 1,
                description:
                  'Repository holding the app files (scripts/, prompts/, workflows/): https://host/path, ssh://[user@]host[:port]/path or user@host:path. ' +
                  'Local paths, file://, http://, git:// and <transport>:: URLs are refused, and the host must resolve to public addresses unless the core allows it (UHLP_GIT_ALLOW_PRIVATE).',
              }),
              ref: Type.String({ minLength: 1, default: 'HEAD', description: 'HEAD, a branch or tag name (letters, digits, ".", "_", "/", "-"), or a full commit id.' }),
              path: Type.Optional(Type.String({ minLength: 1, description: 'Directory of the app inside the repository (relative, no "." or ".." segments); apps/<appId> when omitted.' })),
            },
            { additionalProperties: false },
          ),
        },
        {
          additionalProperties: false,
          description: 'Where the app files come from when the app is a Kubernetes resource (ignored for apps read from a definitions repository).',
        },
      ),
    ),
    limits: Type.Optional(
      Type.Object(
        {
          requestsPerSecond: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 1000000, description: 'Requests per second the app accepts (bursts up to this many); past it, 429 with Retry-After.' }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    tools: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1, description: 'An MCP tool of the core, e.g. core.linux.executeCommand.' }),
            risk_level: Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Literal('critical')], {
              description:
                'critical: the core refuses the tool to every execution except a workflow run whose policy.allow_critical_tools lists it or whose approval node granted it.',
            }),
          },
          { additionalProperties: false },
        ),
        { maxItems: 256, description: "Risk levels of the core's tools for this app (seed 004: risk_level)." },
      ),
    ),
    secrets: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Name("A secret the app uses: a Secret of its namespace in a cluster, its section of the core's secrets file (UHLP_SECRETS_FILE) otherwise."),
            description: Type.Optional(Type.String({ maxLength: 256, description: 'What the secret is for.' })),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: 64,
          description:
            "The secrets the app uses, by name: web credentials (capabilities.web.inject) may name only these, and each must exist for the app to load. Values never come from the app's files.",
        },
      ),
    ),
    llm: Type.Optional(Type.Object(AppLlmSpec.properties, { additionalProperties: false, description: "The app's own model server, reached with one of its secrets." })),
    mcpServers: Type.Optional(Type.Array(McpServerSpec, { maxItems: 32, description: 'MCP servers whose tools the app may call as app.<server>.<tool>, limited by capabilities.mcp.' })),
    // Optional in the type so that specs built in code need not spell it; validation fills `{}`.
    capabilities: Type.Optional(Type.Object(CapabilitiesSpec.properties, { additionalProperties: false, default: {} })),
    ledger: Type.Optional(Type.Object(AppLedgerSpec.properties, { additionalProperties: false, description: 'What the turn ledger keeps of this app, and for how long.' })),
    ui: Type.Optional(UiSpec),
  },
  { additionalProperties: false },
);
export type AppSpec = Static<typeof AppSpec>;

export const AppDefinitionDocument = Type.Object(
  {
    apiVersion: Type.Literal(APP_API_VERSION),
    kind: Type.Literal(APP_KIND),
    metadata: Type.Object(
      { name: Name('The appId.') },
      { additionalProperties: true },
    ),
    spec: AppSpec,
  },
  { additionalProperties: false },
);
export type AppDefinitionDocument = Static<typeof AppDefinitionDocument>;
