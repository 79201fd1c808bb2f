/**
 * Every metric uhlp exports, defined in one place, in base units, with bounded
 * labels. The Grafana dashboard in charts/ reads exactly these names. A core
 * builds one `Metrics` per registry so that tests and several cores in one
 * process never share counters.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { HotCounter } from './hot-counter.js';
import { HotHistogram } from './hot-histogram.js';

/** A Redis command on a LAN takes well under a millisecond: finer buckets at the low end. */
const REDIS_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type AcquireOutcome = 'hit' | 'miss' | 'error';
export type SandboxState = 'starting' | 'idle' | 'busy';

export interface Metrics {
  readonly registry: Registry;
  /** Requests answered at ingress, by app, route pattern and HTTP status. */
  readonly requests: Counter<'app' | 'route' | 'status'>;
  /** Time from the request's arrival to a routing decision. Observed on every request: a HotHistogram. */
  readonly routingSeconds: HotHistogram<'app'>;
  /** Whole /execute round trip to a sandbox, by outcome (ok, error, timeout, died). */
  readonly sandboxExecuteSeconds: HotHistogram<'app' | 'pool' | 'outcome'>;
  /** Time to get a sandbox from a pool. */
  readonly sandboxAcquireSeconds: HotHistogram<'app' | 'pool' | 'outcome'>;
  /** Time to start one sandbox until it answers its readiness probe. */
  readonly sandboxStartSeconds: Histogram<'app' | 'pool' | 'driver'>;
  /**
   * Called at every scrape, before the pool gauges are read: pools set their
   * gauges then, not on every acquire and release.
   */
  readonly poolCollectors: Set<() => void>;
  /** Sandboxes by pool and state. */
  readonly poolSandboxes: Gauge<'app' | 'pool' | 'state'>;
  /** Requests waiting for a sandbox. */
  readonly poolWaiting: Gauge<'app' | 'pool'>;
  /** Sandboxes destroyed, by why (recycled, idle, timeout, crash, oom, unhealthy, shutdown, ...). */
  readonly sandboxDestroyed: Counter<'app' | 'pool' | 'cause'>;
  /** Requests refused by an app's requestsPerSecond limit. */
  readonly rateLimited: Counter<'app'>;
  /** Answers replayed for a repeated Idempotency-Key. */
  readonly idempotentReplays: Counter<'app'>;
  /** Events of this core waiting at a flow gate, by app, route (or `component:<id>`) and kind (concurrency, throttle). */
  readonly flowWaiting: Gauge<'app' | 'route' | 'kind'>;
  /** How long events waited at a flow gate, by outcome (started, timeout); events let in at once are observed with 0. */
  readonly flowWaitSeconds: Histogram<'app' | 'route' | 'kind' | 'outcome'>;
  /** Events answered UHLP_DEBOUNCED: a later event of their key ran in their place. */
  readonly flowDebounced: Counter<'app' | 'route'>;
  /** Definitions reloads after a HEAD change, by outcome (applied, refused, failed). */
  readonly definitionReloads: Counter<'outcome'>;
  /** AppDefinition files refused at load. */
  readonly definitionErrors: Gauge;
  /** Apps invalid at the loaded revision that keep serving the revision they were last valid at. */
  readonly appsHeldBack: Gauge;
  /** Apps currently loaded and routable. */
  readonly appsLoaded: Gauge;
  /** Operator reconciles, by resource kind (appdefinition, sandboxpool) and outcome (ok, error). */
  readonly operatorReconciles: Counter<'kind' | 'outcome'>;
  /** Time of one operator reconcile, by resource kind. */
  readonly operatorReconcileSeconds: Histogram<'kind'>;
  /** 1 while this operator holds the leader Lease, else 0. */
  readonly operatorLeader: Gauge;
  /**
   * Probes read at every scrape, before uhlp_app_watch_up is read: a core serving
   * AppDefinitions (`--registry kubernetes`) registers one that tells whether its watch
   * follows the API server.
   */
  readonly appWatchProbes: Set<() => boolean>;
  /** 1 while the core's AppDefinition watch follows the API server, else 0 (it serves what it last listed). */
  readonly appWatchUp: Gauge;
  /**
   * LLM tokens spent, by app, component, model and kind (`prompt` or
   * `completion`). The model is the one the app's capability lists and the call
   * named (not the version string a server answers), so labels stay bounded.
   */
  readonly llmTokens: Counter<'app' | 'component' | 'model' | 'kind'>;
  /** `core.llm.generate` calls past the capability check, by outcome: `ok`, or the error code (budget refusals included). Cache hits are counted apart. */
  readonly llmCalls: Counter<'app' | 'component' | 'model' | 'outcome'>;
  /** One call to the LLM provider, retries included (not cache hits or budget refusals). A HotHistogram: its buckets keep trace exemplars. */
  readonly llmCallSeconds: HotHistogram<'app' | 'component' | 'model'>;
  /** `core.llm.generate` calls answered from the answer cache. */
  readonly llmCacheHits: Counter<'app' | 'component'>;
  /** Calls refused by an app's capabilities (shell, web, kv, llm). */
  readonly capabilityRefusals: Counter<'app' | 'capability'>;
  /** MCP tool calls, by app, tool and outcome (`ok` or the error code). */
  readonly mcpCalls: Counter<'app' | 'tool' | 'outcome'>;
  /** Duration of one MCP tool call inside the core. A HotHistogram: its buckets keep trace exemplars. */
  readonly mcpCallSeconds: HotHistogram<'app' | 'tool'>;
  /** Calls of federated MCP servers' tools (app.* and community.*), by server, tool and outcome. */
  readonly mcpFederatedCalls: Counter<'app' | 'server' | 'tool' | 'outcome'>;
  /** One call of a federated server's tool, as the core waited for it. A HotHistogram: its buckets keep trace exemplars. */
  readonly mcpFederatedCallSeconds: HotHistogram<'app' | 'server' | 'tool'>;
  /** Messages of a delivery route waiting or being processed (retries included), by source (queue, cron, callback, trigger) and route name. */
  readonly queueDepth: Gauge<'app' | 'source' | 'name'>;
  /** Age of the oldest message counted in uhlp_queue_depth. */
  readonly queueOldestAgeSeconds: Gauge<'app' | 'source' | 'name'>;
  /** Messages moved to the dead letters, by reason (`failed`: attempts used up, `expired`: over maxAgeSeconds). */
  readonly deadLetters: Counter<'app' | 'source' | 'reason'>;
  /** Deliveries of messages, by source and outcome (ok, retry, dead, expired). */
  readonly deliveries: HotCounter<'app' | 'source' | 'outcome'>;
  /** Cron slots fired by this core (a slot fires on one core only). */
  readonly cronFires: Counter<'app' | 'job'>;
  /** How late a cron slot was published after its scheduled time. */
  readonly cronLatenessSeconds: Histogram<'app'>;
  /**
   * LLM answers offered to the oracle's sample reservoirs, by outcome: added,
   * replaced, passed, repeat, unstable (a repeat that answered differently),
   * or why none was taken (no-inputs, bad-inputs, too-large, invalid-output).
   */
  readonly oracleSamples: Counter<'app' | 'component' | 'outcome'>;
  /** Candidates judged, by outcome: passed, disagreed, declined, error, timeout, capability, invalid. */
  readonly oracleCandidates: Counter<'app' | 'component' | 'outcome'>;
  /** The oracle's stage of a component: 0 sampling, 1 generating, 2 suggested, 3 shadow, 4 canary, 5 full; -1 rolled back, -2 rejected, -3 failed, -4 refused. */
  readonly oracleStage: Gauge<'app' | 'component'>;
  /** Live comparisons of generated code with the LLM, by stage and outcome (agree, disagree, declined, skipped). */
  readonly oracleComparisons: Counter<'app' | 'component' | 'stage' | 'outcome'>;
  /** Live comparisons where the code answered otherwise than the LLM (or failed), by stage. */
  readonly oracleDisagreements: Counter<'app' | 'component' | 'stage'>;
  /** LLM tokens the generated code's answers saved (the component's mean tokens per LLM answer, per answer of the code). */
  readonly oracleTokensSaved: Counter<'app' | 'component'>;
  /** Tokens code generation spent, by kind (prompt, completion): counted apart from the apps' own LLM tokens and budgets. */
  readonly oracleTokens: Counter<'app' | 'component' | 'kind'>;
  /**
   * One turn from the pipeline's start to the component's answer, by app, component and
   * outcome: `ok` (an answer), `error` (the component answered an error result), `failed`
   * (no answer: timeout, dead sandbox, pool exhausted, ...). Every source's turns. A HotHistogram.
   */
  readonly turnSeconds: HotHistogram<'app' | 'component' | 'outcome'>;
  /** Requests refused for want of a sandbox: every one stayed busy past the acquire wait (UHLP_POOL_EXHAUSTED) or too many waited (UHLP_POOL_QUEUE_FULL). */
  readonly poolExhausted: Counter<'app' | 'pool'>;
  /**
   * Probes run at every scrape, before uhlp_state_up is read: the core registers
   * one that pings its runtime store.
   */
  readonly stateProbes: Set<() => Promise<void>>;
  /** Ended spans not exported because the export queue was full (or its worker had gone): tracing's own loss. */
  readonly traceSpansDropped: Counter;
  /** 1 when the runtime state store (memory or Redis) answered its last probe, else 0. */
  readonly stateUp: Gauge<'kind'>;
  /** One Redis command's round trip, by client (runtime, delivery, run-index; blocking reads are not timed). A HotHistogram: every state call observes it. */
  readonly redisCommandSeconds: HotHistogram<'client'>;
  /** Redis commands that failed, by client and failure (reply, unavailable, timeout, connection). */
  readonly redisCommandErrors: Counter<'client' | 'failure'>;
  /** Redis connections ready again after a drop, by client. */
  readonly redisReconnects: Counter<'client'>;
  /** Redis connections ready again at another address (a Sentinel failover), by client. */
  readonly redisFailovers: Counter<'client'>;
  /** Turns handed to the ledger, by plane (the app's deployment mode). */
  readonly ledgerTurns: HotCounter<'plane'>;
  /** Ledger writes that failed (the turn's entries are missing from its ledger). */
  readonly ledgerWriteErrors: Counter;
  /** Share of an app's `tokensPerDay` spent on the current UTC day, as of its last LLM call. */
  readonly llmBudgetUsedRatio: Gauge<'app'>;
  /**
   * Called at every scrape, before the operator's queue gauge is read: the
   * operator's controllers report their queue lengths then.
   */
  readonly operatorQueueCollectors: Set<() => void>;
  /** Keys waiting in an operator work queue for a worker, by resource kind. */
  readonly operatorQueueDepth: Gauge<'kind'>;
}

/** Every metric the core exports starts with this. */
export const METRIC_PREFIX = 'uhlp_';

/**
 * prom-client's default gauges whose names end in `_total`, which Prometheus reserves
 * for counters (`promtool check metrics` fails on them). Their `type`-labelled
 * siblings (uhlp_nodejs_active_handles{type}, ...) stay: a sum over them is the total.
 */
const MISNAMED_DEFAULT_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export interface MetricsOptions {
  /** prom-client's process and Node.js metrics (uhlp_process_*, uhlp_nodejs_*). @defaultValue true */
  readonly defaultMetrics?: boolean;
  /**
   * Export the operator's metrics (uhlp_operator_*): `uhlp operator` does. A core does not,
   * or it would report `uhlp_operator_leader 0`, a leader that is not there. @defaultValue false
   */
  readonly operator?: boolean;
  /**
   * Export uhlp_app_watch_up: a core serving AppDefinitions (`--registry kubernetes`) does.
   * One that reads a Git repository has no watch to report on. @defaultValue false
   */
  readonly appWatch?: boolean;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  // prom-client's own names already start with process_ / nodejs_: the prefix is ours alone
  // (uhlp_process_cpu_seconds_total, uhlp_nodejs_heap_size_used_bytes).
  if (options.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
    for (const name of MISNAMED_DEFAULT_GAUGES) registry.removeSingleMetric(`${METRIC_PREFIX}${name}`);
  }
  const registers = [registry];
  // Metrics created but not registered are recorded into and never exported.
  const operatorRegisters = options.operator ? registers : [];
  const appWatchProbes = new Set<() => boolean>();
  const poolCollectors = new Set<() => void>();
  const collectPools = (): void => {
    for (const collect of poolCollectors) collect();
  };
  const stateProbes = new Set<() => Promise<void>>();
  const operatorQueueCollectors = new Set<() => void>();
  return {
    registry,
    poolCollectors,
    stateProbes,
    operatorQueueCollectors,
    appWatchProbes,
    requests: new Counter({
      name: 'uhlp_http_requests_total',
      help: 'HTTP requests answered at ingress.',
      labelNames: ['app', 'route', 'status'],
      registers,
    }),
    routingSeconds: new HotHistogram({
      name: 'uhlp_routing_duration_seconds',
      help: 'Time from request arrival to the routing decision.',
      labelNames: ['app'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    sandboxExecuteSeconds: new HotHistogram({
      name: 'uhlp_sandbox_execute_duration_seconds',
      help: 'Round trip of POST /execute to a sandbox.',
      labelNames: ['app', 'pool', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    sandboxAcquireSeconds: new HotHistogram({
      name: 'uhlp_sandbox_acquire_seconds',
      help: 'Time to acquire a sandbox from its pool.',
      labelNames: ['app', 'pool', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    sandboxStartSeconds: new Histogram({
      name: 'uhlp_sandbox_start_seconds',
      help: 'Time to start a sandbox until it is ready.',
      labelNames: ['app', 'pool', 'driver'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    poolSandboxes: new Gauge({
      name: 'uhlp_pool_sandboxes',
      help: 'Sandboxes of a pool by state.',
      labelNames: ['app', 'pool', 'state'],
      registers,
      collect: collectPools,
    }),
    poolWaiting: new Gauge({
      name: 'uhlp_pool_waiting_requests',
      help: 'Requests waiting for a sandbox of the pool.',
      labelNames: ['app', 'pool'],
      registers,
      collect: collectPools,
    }),
    sandboxDestroyed: new Counter({
      name: 'uhlp_sandbox_destroyed_total',
      help: 'Sandboxes destroyed, by cause.',
      labelNames: ['app', 'pool', 'cause'],
      registers,
    }),
    rateLimited: new Counter({
      name: 'uhlp_rate_limited_requests_total',
      help: 'Requests refused with 429 by an app rate limit.',
      labelNames: ['app'],
      registers,
    }),
    idempotentReplays: new Counter({
      name: 'uhlp_idempotent_replays_total',
      help: 'Stored answers replayed for a repeated Idempotency-Key.',
      labelNames: ['app'],
      registers,
    }),
    flowWaiting: new Gauge({
      name: 'uhlp_flow_waiting',
      help: "Events of this core waiting at a flow gate (a route's or component's concurrency or throttle key).",
      labelNames: ['app', 'route', 'kind'],
      registers,
    }),
    flowWaitSeconds: new Histogram({
      name: 'uhlp_flow_wait_seconds',
      help: 'Time events waited at a flow gate, by outcome (started, timeout).',
      labelNames: ['app', 'route', 'kind', 'outcome'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    }),
    flowDebounced: new Counter({
      name: 'uhlp_flow_debounced_total',
      help: 'Events answered UHLP_DEBOUNCED because a later event of their key ran in their place.',
      labelNames: ['app', 'route'],
      registers,
    }),
    definitionReloads: new Counter({
      name: 'uhlp_definition_reloads_total',
      help: 'Definitions reloads after a HEAD change, by outcome (applied, held-back: applied with some apps kept at their last valid revision, failed).',
      labelNames: ['outcome'],
      registers,
    }),
    definitionErrors: new Gauge({
      name: 'uhlp_definition_errors',
      help: 'AppDefinition files refused at the last load.',
      registers,
    }),
    appsHeldBack: new Gauge({
      name: 'uhlp_definition_apps_held_back',
      help: 'Apps invalid at the loaded definitions revision that keep serving the revision they were last valid at.',
      registers,
    }),
    appsLoaded: new Gauge({
      name: 'uhlp_apps_loaded',
      help: 'Applications loaded and routable.',
      registers,
    }),
    operatorReconciles: new Counter({
      name: 'uhlp_operator_reconciles_total',
      help: 'Operator reconciles by resource kind and outcome.',
      labelNames: ['kind', 'outcome'],
      registers: operatorRegisters,
    }),
    operatorReconcileSeconds: new Histogram({
      name: 'uhlp_operator_reconcile_duration_seconds',
      help: 'Time of one operator reconcile.',
      labelNames: ['kind'],
      buckets: LATENCY_BUCKETS,
      registers: operatorRegisters,
    }),
    operatorLeader: new Gauge({
      name: 'uhlp_operator_leader',
      help: '1 while this operator holds the leader Lease, else 0.',
      registers: operatorRegisters,
    }),
    appWatchUp: new Gauge({
      name: 'uhlp_app_watch_up',
      help: "1 while the core's AppDefinition watch follows the API server, else 0 (the core serves the apps it last listed).",
      registers: options.appWatch ? registers : [],
      collect() {
        this.set([...appWatchProbes].every((live) => live()) ? 1 : 0);
      },
    }),
    llmTokens: new Counter({
      name: 'uhlp_llm_tokens_total',
      help: 'LLM tokens spent, by kind (prompt, completion).',
      labelNames: ['app', 'component', 'model', 'kind'],
      registers,
    }),
    llmCalls: new Counter({
      name: 'uhlp_llm_calls_total',
      help: 'core.llm.generate calls past the capability check, by outcome (ok or the error code); cache hits are counted in uhlp_llm_cache_hits_total.',
      labelNames: ['app', 'component', 'model', 'outcome'],
      registers,
    }),
    llmCallSeconds: new HotHistogram({
      name: 'uhlp_llm_call_duration_seconds',
      help: 'Duration of one call to the LLM provider, retries included.',
      labelNames: ['app', 'component', 'model'],
      // LLM calls take seconds, not milliseconds: the latency buckets above stop too early.
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120],
      registers,
    }),
    llmCacheHits: new Counter({
      name: 'uhlp_llm_cache_hits_total',
      help: 'core.llm.generate calls answered from the exact-match answer cache (no tokens spent).',
      labelNames: ['app', 'component'],
      registers,
    }),
    capabilityRefusals: new Counter({
      name: 'uhlp_capability_refusals_total',
      help: "Calls refused by an application's capabilities.",
      labelNames: ['app', 'capability'],
      registers,
    }),
    mcpCalls: new Counter({
      name: 'uhlp_mcp_calls_total',
      help: 'MCP tool calls, by outcome (ok or the error code).',
      labelNames: ['app', 'tool', 'outcome'],
      registers,
    }),
    mcpCallSeconds: new HotHistogram({
      name: 'uhlp_mcp_call_duration_seconds',
      help: 'Duration of one MCP tool call inside the core.',
      labelNames: ['app', 'tool'],
      // Tools span kv lookups (sub-millisecond) to shell commands and LLM calls (seconds).
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
      registers,
    }),
    mcpFederatedCalls: new Counter({
      name: 'uhlp_mcp_federated_calls_total',
      help: "Calls of federated MCP servers' tools, by outcome (ok or the error code); tool is one the server listed, or unknown.",
      labelNames: ['app', 'server', 'tool', 'outcome'],
      registers,
    }),
    mcpFederatedCallSeconds: new HotHistogram({
      name: 'uhlp_mcp_federated_call_duration_seconds',
      help: 'Duration of one call of a federated MCP server, as the core waited for it.',
      labelNames: ['app', 'server', 'tool'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'uhlp_queue_depth',
      help: 'Messages of a delivery route waiting or being processed, retries included.',
      labelNames: ['app', 'source', 'name'],
      registers,
    }),
    queueOldestAgeSeconds: new Gauge({
      name: 'uhlp_queue_oldest_age_seconds',
      help: 'Age of the oldest message of a delivery route.',
      labelNames: ['app', 'source', 'name'],
      registers,
    }),
    deadLetters: new Counter({
      name: 'uhlp_dead_letters_total',
      help: 'Messages moved to the dead letters, by reason (failed, expired).',
      labelNames: ['app', 'source', 'reason'],
      registers,
    }),
    deliveries: new HotCounter({
      name: 'uhlp_deliveries_total',
      help: 'Deliveries of queue, cron, callback and trigger messages, by outcome (ok, retry, dead, expired).',
      labelNames: ['app', 'source', 'outcome'],
      registers,
    }),
    cronFires: new Counter({
      name: 'uhlp_cron_fires_total',
      help: 'Cron slots fired by this core.',
      labelNames: ['app', 'job'],
      registers,
    }),
    cronLatenessSeconds: new Histogram({
      name: 'uhlp_cron_lateness_seconds',
      help: 'Time from a cron slot to its publication.',
      labelNames: ['app'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 3600],
      registers,
    }),
    oracleSamples: new Counter({
      name: 'uhlp_oracle_samples_total',
      help: "LLM answers offered to the optimization oracle's sample reservoirs, by outcome.",
      labelNames: ['app', 'component', 'outcome'],
      registers,
    }),
    oracleCandidates: new Counter({
      name: 'uhlp_oracle_candidates_total',
      help: 'Generated candidates judged on held-back samples, by outcome.',
      labelNames: ['app', 'component', 'outcome'],
      registers,
    }),
    oracleStage: new Gauge({
      name: 'uhlp_oracle_stage',
      help: 'Oracle stage of a component: 0 sampling, 1 generating, 2 suggested, 3 shadow, 4 canary, 5 full; -1 rolled back, -2 rejected, -3 failed, -4 refused.',
      labelNames: ['app', 'component'],
      registers,
    }),
    oracleComparisons: new Counter({
      name: 'uhlp_oracle_comparisons_total',
      help: 'Live comparisons of generated code with the LLM, by stage and outcome.',
      labelNames: ['app', 'component', 'stage', 'outcome'],
      registers,
    }),
    oracleDisagreements: new Counter({
      name: 'uhlp_oracle_disagreements_total',
      help: 'Live comparisons where generated code answered otherwise than the LLM, or failed.',
      labelNames: ['app', 'component', 'stage'],
      registers,
    }),
    oracleTokensSaved: new Counter({
      name: 'uhlp_oracle_tokens_saved_total',
      help: "LLM tokens the generated code's answers saved.",
      labelNames: ['app', 'component'],
      registers,
    }),
    oracleTokens: new Counter({
      name: 'uhlp_oracle_tokens_total',
      help: 'Tokens spent on code generation, by kind (prompt, completion).',
      labelNames: ['app', 'component', 'kind'],
      registers,
    }),
    turnSeconds: new HotHistogram({
      name: 'uhlp_turn_duration_seconds',
      help: 'One turn, from the turn pipeline to the answer, by app, component and outcome (ok, error, failed).',
      labelNames: ['app', 'component', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    traceSpansDropped: new Counter({
      name: 'uhlp_trace_spans_dropped_total',
      help: 'Ended spans not exported: the export queue was full (the backend is slower than the spans come) or its worker had gone.',
      registers,
    }),
    poolExhausted: new Counter({
      name: 'uhlp_pool_exhausted_total',
      help: 'Requests refused for want of a sandbox (pool exhausted past the acquire wait, or its wait queue full).',
      labelNames: ['app', 'pool'],
      registers,
    }),
    stateUp: new Gauge({
      name: 'uhlp_state_up',
      help: '1 when the runtime state store answered its last probe, else 0.',
      labelNames: ['kind'],
      registers,
      // prom-client awaits an async collect before it reads the gauge.
      async collect() {
        await Promise.all([...stateProbes].map((probe) => probe()));
      },
    }),
    redisCommandSeconds: new HotHistogram({
      name: 'uhlp_redis_command_duration_seconds',
      help: 'One Redis command round trip, by client (blocking reads not timed).',
      labelNames: ['client'],
      buckets: REDIS_BUCKETS,
      registers,
    }),
    redisCommandErrors: new Counter({
      name: 'uhlp_redis_command_errors_total',
      help: 'Redis commands that failed, by client and failure (reply, unavailable, timeout, connection).',
      labelNames: ['client', 'failure'],
      registers,
    }),
    redisReconnects: new Counter({
      name: 'uhlp_redis_reconnects_total',
      help: 'Redis connections ready again after a drop, by client.',
      labelNames: ['client'],
      registers,
    }),
    redisFailovers: new Counter({
      name: 'uhlp_redis_failovers_total',
      help: 'Redis connections ready again at another address (a Sentinel failover), by client.',
      labelNames: ['client'],
      registers,
    }),
    ledgerTurns: new HotCounter({
      name: 'uhlp_ledger_turns_total',
      help: 'Turns handed to the ledger, by plane (deployment mode).',
      labelNames: ['plane'],
      registers,
    }),
    ledgerWriteErrors: new Counter({
      name: 'uhlp_ledger_write_errors_total',
      help: 'Ledger writes that failed.',
      registers,
    }),
    llmBudgetUsedRatio: new Gauge({
      name: 'uhlp_llm_budget_used_ratio',
      help: "Share of an app's tokensPerDay spent on the current UTC day, as of its last LLM call.",
      labelNames: ['app'],
      registers,
    }),
    operatorQueueDepth: new Gauge({
      name: 'uhlp_operator_queue_depth',
      help: 'Keys waiting in an operator work queue for a worker, by resource kind.',
      labelNames: ['kind'],
      registers: operatorRegisters,
      collect() {
        for (const collect of operatorQueueCollectors) collect();
      },
    }),
  };
}
