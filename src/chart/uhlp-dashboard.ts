/**
 * The Grafana dashboard of uhlp, built with Grafana's foundation SDK from the table
 * below (rows of panels, each with its PromQL). `npm run generate` writes it to
 * charts/uhlp/dashboards/uhlp.json, which the chart also ships as a ConfigMap for
 * Grafana's dashboard sidecar. test/helm/dashboard-prometheus.test.ts evaluates every
 * query on a real Prometheus scraping a real core and operator; metric-references.test.ts
 * checks every metric it names exists.
 *
 * Still to come: an optimizer row (stage per component, agreement, tokens saved), once
 * the dashboard's test load drives a component through the optimization oracle.
 */
import { DashboardBuilder, DatasourceVariableBuilder, QueryVariableBuilder, RowBuilder, VariableRefresh, VariableSort } from '@grafana/grafana-foundation-sdk/dashboard';
import type { Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';

export const DASHBOARD_UID = 'uhlp-overview';
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** Selectors every query starts from; `$x` are the dashboard variables (All is `.*`). */
const NS = 'namespace=~"$namespace"';
const APP = `${NS}, app=~"$app"`;
const COMPONENT = `${APP}, component=~"$component"`;
const POOL = `${APP}, pool=~"$pool"`;
const RI = '[$__rate_interval]';

export interface PanelQuery {
  readonly expr: string;
  readonly legend: string;
}

export interface PanelSpec {
  readonly title: string;
  readonly description: string;
  readonly unit: string;
  readonly kind: 'timeseries' | 'stat';
  readonly queries: readonly PanelQuery[];
}

export interface RowSpec {
  readonly title: string;
  readonly panels: readonly PanelSpec[];
}

export interface VariableSpec {
  readonly name: string;
  readonly label: string;
  /** `label_values(<series selector>, <label>)`, Grafana's Prometheus variable query. */
  readonly series: string;
  readonly labelName: string;
}

export const VARIABLES: readonly VariableSpec[] = [
  { name: 'namespace', label: 'Namespace', series: 'uhlp_apps_loaded', labelName: 'namespace' },
  { name: 'app', label: 'App', series: `uhlp_http_requests_total{${NS}, app!=""}`, labelName: 'app' },
  { name: 'component', label: 'Component', series: `uhlp_turn_duration_seconds_count{${APP}}`, labelName: 'component' },
  { name: 'pool', label: 'Pool', series: `uhlp_pool_sandboxes{${APP}}`, labelName: 'pool' },
];

const quantile = (q: number, metric: string, selector: string, by: string): string =>
  `histogram_quantile(${q}, sum by (le, ${by}) (rate(${metric}_bucket{${selector}}${RI})))`;

export const ROWS: readonly RowSpec[] = [
  {
    title: 'Traffic',
    panels: [
      {
        title: 'Requests by app',
        description: 'HTTP requests answered at ingress, per second.',
        unit: 'reqps',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app) (rate(uhlp_http_requests_total{${APP}}${RI}))`, legend: '{{app}}' }],
      },
      {
        title: 'Error ratio (5xx) by app',
        description: 'Share of answers that were 5xx: the core, a sandbox or the pool failed.',
        unit: 'percentunit',
        kind: 'timeseries',
        queries: [
          {
            expr: `sum by (app) (rate(uhlp_http_requests_total{${APP}, status=~"5.."}${RI})) / sum by (app) (rate(uhlp_http_requests_total{${APP}}${RI}))`,
            legend: '{{app}}',
          },
        ],
      },
      {
        title: 'Answers by status',
        description: 'Every answer by HTTP status (unrouted requests have no app).',
        unit: 'reqps',
        kind: 'timeseries',
        queries: [{ expr: `sum by (status) (rate(uhlp_http_requests_total{${APP}}${RI}))`, legend: '{{status}}' }],
      },
      {
        title: 'Turn latency p50 / p99 by component',
        description: 'One turn from the pipeline to the answer: session, sandbox, ledger.',
        unit: 's',
        kind: 'timeseries',
        queries: [
          { expr: quantile(0.5, 'uhlp_turn_duration_seconds', COMPONENT, 'app, component'), legend: 'p50 {{app}}/{{component}}' },
          { expr: quantile(0.99, 'uhlp_turn_duration_seconds', COMPONENT, 'app, component'), legend: 'p99 {{app}}/{{component}}' },
        ],
      },
      {
        title: 'Turns by component and outcome',
        description: 'ok: an answer; error: the component answered an error; failed: no answer (timeout, dead sandbox, pool exhausted).',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, component, outcome) (rate(uhlp_turn_duration_seconds_count{${COMPONENT}}${RI}))`, legend: '{{app}}/{{component}} {{outcome}}' }],
      },
      {
        title: 'Rate-limited and replayed requests',
        description: '429s from an app requestsPerSecond limit, and stored answers replayed for a repeated Idempotency-Key.',
        unit: 'reqps',
        kind: 'timeseries',
        queries: [
          { expr: `sum by (app) (rate(uhlp_rate_limited_requests_total{${APP}}${RI}))`, legend: 'rate-limited {{app}}' },
          { expr: `sum by (app) (rate(uhlp_idempotent_replays_total{${APP}}${RI}))`, legend: 'replayed {{app}}' },
        ],
      },
    ],
  },
  {
    title: 'Sandboxes',
    panels: [
      {
        title: 'Sandboxes by pool and state',
        description: 'Starting, idle (warm) and busy sandboxes of each pool.',
        unit: 'short',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, pool, state) (uhlp_pool_sandboxes{${POOL}})`, legend: '{{app}}/{{pool}} {{state}}' }],
      },
      {
        title: 'Warm hits vs misses',
        description: 'Sandbox acquisitions: hit (a warm sandbox), miss (one started on demand), error.',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (outcome) (rate(uhlp_sandbox_acquire_seconds_count{${POOL}}${RI}))`, legend: '{{outcome}}' }],
      },
      {
        title: 'Cold start time p50 / p99',
        description: 'From starting a sandbox to its first readiness answer.',
        unit: 's',
        kind: 'timeseries',
        queries: [
          { expr: quantile(0.5, 'uhlp_sandbox_start_seconds', POOL, 'app, pool'), legend: 'p50 {{app}}/{{pool}}' },
          { expr: quantile(0.99, 'uhlp_sandbox_start_seconds', POOL, 'app, pool'), legend: 'p99 {{app}}/{{pool}}' },
        ],
      },
      {
        title: 'Sandbox ends by cause',
        description: 'recycled, idle and shutdown are the pool at work; crash, oom, heap-limit, timeout, unhealthy are deaths.',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, pool, cause) (rate(uhlp_sandbox_destroyed_total{${POOL}}${RI}))`, legend: '{{app}}/{{pool}} {{cause}}' }],
      },
      {
        title: '/execute latency p99 by pool',
        description: 'The round trip to a sandbox, by outcome.',
        unit: 's',
        kind: 'timeseries',
        queries: [{ expr: quantile(0.99, 'uhlp_sandbox_execute_duration_seconds', POOL, 'app, pool, outcome'), legend: '{{app}}/{{pool}} {{outcome}}' }],
      },
      {
        title: 'Waiting and refused for want of a sandbox',
        description: 'Requests waiting for a sandbox now, and requests refused (pool exhausted or its wait queue full).',
        unit: 'short',
        kind: 'timeseries',
        queries: [
          { expr: `sum by (app, pool) (uhlp_pool_waiting_requests{${POOL}})`, legend: 'waiting {{app}}/{{pool}}' },
          { expr: `sum by (app, pool) (rate(uhlp_pool_exhausted_total{${POOL}}${RI}))`, legend: 'refused/s {{app}}/{{pool}}' },
        ],
      },
    ],
  },
  {
    title: 'LLM',
    panels: [
      {
        title: 'LLM calls by model and outcome',
        description: 'core.llm.generate calls past the capability check: ok, or the error code (budget refusals included).',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (model, outcome) (rate(uhlp_llm_calls_total{${COMPONENT}}${RI}))`, legend: '{{model}} {{outcome}}' }],
      },
      {
        title: 'Tokens by model',
        description: 'Prompt and completion tokens spent per second.',
        unit: 'short',
        kind: 'timeseries',
        queries: [{ expr: `sum by (model, kind) (rate(uhlp_llm_tokens_total{${COMPONENT}}${RI}))`, legend: '{{model}} {{kind}}' }],
      },
      {
        title: 'Answer cache hits',
        description: 'Calls answered from the answer cache: no tokens spent.',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, component) (rate(uhlp_llm_cache_hits_total{${COMPONENT}}${RI}))`, legend: '{{app}}/{{component}}' }],
      },
      {
        title: 'Daily token budget used',
        description: "Share of each app's tokensPerDay spent today (UTC).",
        unit: 'percentunit',
        kind: 'stat',
        queries: [{ expr: `max by (app) (uhlp_llm_budget_used_ratio{${APP}})`, legend: '{{app}}' }],
      },
      {
        title: 'Provider call latency p99 by model',
        description: 'One call to the provider, retries included.',
        unit: 's',
        kind: 'timeseries',
        queries: [{ expr: quantile(0.99, 'uhlp_llm_call_duration_seconds', COMPONENT, 'model'), legend: '{{model}}' }],
      },
    ],
  },
  {
    title: 'Queues, cron and triggers',
    panels: [
      {
        title: 'Backlog by route',
        description: 'Messages of each queue, cron, callback and trigger route waiting or running, retries included.',
        unit: 'short',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, source, name) (uhlp_queue_depth{${APP}})`, legend: '{{app}} {{source}}/{{name}}' }],
      },
      {
        title: 'Oldest message age by route',
        description: 'How long the oldest waiting message of a route has waited: a consumer that falls behind shows here first.',
        unit: 's',
        kind: 'timeseries',
        queries: [{ expr: `max by (app, source, name) (uhlp_queue_oldest_age_seconds{${APP}})`, legend: '{{app}} {{source}}/{{name}}' }],
      },
      {
        title: 'Deliveries by outcome',
        description: 'ok: acknowledged; retry: failed, tried again after the backoff; dead: out of attempts; expired: past maxAgeSeconds.',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, source, outcome) (rate(uhlp_deliveries_total{${APP}}${RI}))`, legend: '{{app}} {{source}} {{outcome}}' }],
      },
      {
        title: 'Dead letters by reason',
        description: 'Messages moved to the dead letters (failed, expired); `uhlp queues dlq` lists them, `uhlp queues redrive` sends them again.',
        unit: 'short',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, source, reason) (increase(uhlp_dead_letters_total{${APP}}${RI}))`, legend: '{{app}} {{source}} {{reason}}' }],
      },
      {
        title: 'Cron fires by job',
        description: 'Cron slots this installation fired (each slot by one core).',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, job) (rate(uhlp_cron_fires_total{${APP}}${RI}))`, legend: '{{app}}/{{job}}' }],
      },
      {
        title: 'Cron lateness p99',
        description: 'From a slot\'s scheduled time to its message on the delivery stream; catch-up runs after downtime show as late.',
        unit: 's',
        kind: 'timeseries',
        queries: [{ expr: quantile(0.99, 'uhlp_cron_lateness_seconds', APP, 'app'), legend: 'p99 {{app}}' }],
      },
    ],
  },
  {
    title: 'Tools and capabilities',
    panels: [
      {
        title: 'MCP tool calls by tool and outcome',
        description: 'Tool calls from sandboxes, by tool and outcome (ok or the error code).',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (tool, outcome) (rate(uhlp_mcp_calls_total{${APP}}${RI}))`, legend: '{{tool}} {{outcome}}' }],
      },
      {
        title: 'Capability refusals',
        description: "Calls refused by an app's capabilities: what a script tried and may not do.",
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (app, capability) (rate(uhlp_capability_refusals_total{${APP}}${RI}))`, legend: '{{app}} {{capability}}' }],
      },
    ],
  },
  {
    title: 'State and ledger',
    panels: [
      {
        title: 'Runtime state store up',
        description: '1 when the store (memory or Redis) answered the last scrape-time ping.',
        unit: 'short',
        kind: 'stat',
        queries: [{ expr: `min by (instance, kind) (uhlp_state_up{${NS}})`, legend: '{{instance}} {{kind}}' }],
      },
      {
        title: 'Ledger turns and write failures',
        description: 'Turns handed to the ledger by plane, and ledger writes that failed.',
        unit: 'ops',
        kind: 'timeseries',
        queries: [
          { expr: `sum by (plane) (rate(uhlp_ledger_turns_total{${NS}}${RI}))`, legend: '{{plane}}' },
          { expr: `sum(rate(uhlp_ledger_write_errors_total{${NS}}${RI}))`, legend: 'write failures' },
        ],
      },
      {
        title: 'Apps loaded, held back, refused',
        description: 'Apps routable; apps kept at their last valid revision; definition files refused at the last load.',
        unit: 'short',
        kind: 'stat',
        queries: [
          { expr: `sum(uhlp_apps_loaded{${NS}})`, legend: 'loaded' },
          { expr: `sum(uhlp_definition_apps_held_back{${NS}})`, legend: 'held back' },
          { expr: `sum(uhlp_definition_errors{${NS}})`, legend: 'refused files' },
        ],
      },
    ],
  },
  {
    title: 'Redis',
    panels: [
      {
        title: 'Redis command latency p50 / p99 by client',
        description: "One command's round trip from the core, by client: runtime (sessions, kv, once-only records, leases…), delivery (queues, cron), run-index. Blocking stream reads are not timed.",
        unit: 's',
        kind: 'timeseries',
        queries: [
          { expr: quantile(0.5, 'uhlp_redis_command_duration_seconds', NS, 'client'), legend: 'p50 {{client}}' },
          { expr: quantile(0.99, 'uhlp_redis_command_duration_seconds', NS, 'client'), legend: 'p99 {{client}}' },
        ],
      },
      {
        title: 'Redis commands and failures',
        description:
          'Commands per second by client, and failed commands by failure: reply (Redis refused it: a bug), unavailable (READONLY, LOADING, NOREPLICAS: a failover or a lagging replica), timeout, connection (no connection or it dropped).',
        unit: 'ops',
        kind: 'timeseries',
        queries: [
          { expr: `sum by (client) (rate(uhlp_redis_command_duration_seconds_count{${NS}}${RI}))`, legend: '{{client}}' },
          { expr: `sum by (client, failure) (rate(uhlp_redis_command_errors_total{${NS}}${RI}))`, legend: 'failed {{client}} {{failure}}' },
        ],
      },
      {
        title: 'Redis reconnects and failovers',
        description: 'Connections ready again after a drop, and those that came back to another address: the master the sentinels name moved.',
        unit: 'short',
        kind: 'timeseries',
        queries: [
          { expr: `sum by (instance) (increase(uhlp_redis_reconnects_total{${NS}}${RI}))`, legend: 'reconnects {{instance}}' },
          { expr: `sum by (instance) (increase(uhlp_redis_failovers_total{${NS}}${RI}))`, legend: 'failovers {{instance}}' },
        ],
      },
    ],
  },
  {
    title: 'Operator',
    panels: [
      {
        title: 'Reconciles by kind and outcome',
        description: 'Reconciles of AppDefinitions and SandboxPools, ok or error.',
        unit: 'ops',
        kind: 'timeseries',
        queries: [{ expr: `sum by (kind, outcome) (rate(uhlp_operator_reconciles_total{${NS}}${RI}))`, legend: '{{kind}} {{outcome}}' }],
      },
      {
        title: 'Reconcile latency p99',
        description: 'One reconcile, by kind.',
        unit: 's',
        kind: 'timeseries',
        queries: [{ expr: quantile(0.99, 'uhlp_operator_reconcile_duration_seconds', NS, 'kind'), legend: '{{kind}}' }],
      },
      {
        title: 'Work queue depth',
        description: 'Keys waiting for a worker, by kind.',
        unit: 'short',
        kind: 'timeseries',
        queries: [{ expr: `sum by (kind) (uhlp_operator_queue_depth{${NS}})`, legend: '{{kind}}' }],
      },
      {
        title: 'Leaders',
        description: 'Operators holding the leader Lease: 1 is healthy.',
        unit: 'short',
        kind: 'stat',
        queries: [{ expr: `sum(uhlp_operator_leader{${NS}})`, legend: 'leaders' }],
      },
    ],
  },
  {
    title: 'Processes',
    panels: [
      {
        title: 'CPU',
        description: 'CPU of each core and operator process, in cores.',
        unit: 'short',
        kind: 'timeseries',
        queries: [{ expr: `sum by (job, instance) (rate(uhlp_process_cpu_seconds_total{${NS}}${RI}))`, legend: '{{job}} {{instance}}' }],
      },
      {
        title: 'Resident memory',
        description: 'Resident set size of each process.',
        unit: 'bytes',
        kind: 'timeseries',
        queries: [{ expr: `sum by (job, instance) (uhlp_process_resident_memory_bytes{${NS}})`, legend: '{{job}} {{instance}}' }],
      },
      {
        title: 'Heap used',
        description: 'V8 heap in use.',
        unit: 'bytes',
        kind: 'timeseries',
        queries: [{ expr: `sum by (job, instance) (uhlp_nodejs_heap_size_used_bytes{${NS}})`, legend: '{{job}} {{instance}}' }],
      },
      {
        title: 'Event loop lag p99',
        description: 'How late the event loop runs: a busy core answers late.',
        unit: 's',
        kind: 'timeseries',
        queries: [{ expr: `max by (job, instance) (uhlp_nodejs_eventloop_lag_p99_seconds{${NS}})`, legend: '{{job}} {{instance}}' }],
      },
    ],
  },
];

/** The dashboard model Grafana imports. */
export function buildDashboard(): Dashboard {
  const builder = new DashboardBuilder('uhlp')
    .uid(DASHBOARD_UID)
    .description('uhlp core and operator: traffic, sandboxes, LLM, tools, state and ledger, operator, processes.')
    .tags(['uhlp'])
    .editable()
    .refresh('30s')
    .time({ from: 'now-1h', to: 'now' })
    .timezone('browser')
    .withVariable(new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'));
  for (const variable of VARIABLES) {
    builder.withVariable(
      new QueryVariableBuilder(variable.name)
        .label(variable.label)
        .datasource(DATASOURCE)
        .query(`label_values(${variable.series}, ${variable.labelName})`)
        .definition(`label_values(${variable.series}, ${variable.labelName})`)
        .refresh(VariableRefresh.OnTimeRangeChanged)
        .sort(VariableSort.AlphabeticalAsc)
        .multi(true)
        .includeAll(true)
        .allValue('.*'),
    );
  }
  for (const row of ROWS) {
    builder.withRow(new RowBuilder(row.title));
    for (const panel of row.panels) {
      const targets = panel.queries.map((query, index) =>
        new DataqueryBuilder()
          .expr(query.expr)
          .legendFormat(query.legend)
          .refId(String.fromCharCode(65 + index))
          .datasource(DATASOURCE),
      );
      const built =
        panel.kind === 'stat'
          ? new StatPanelBuilder().title(panel.title).description(panel.description).unit(panel.unit).datasource(DATASOURCE).height(6).span(6)
          : new TimeseriesPanelBuilder().title(panel.title).description(panel.description).unit(panel.unit).datasource(DATASOURCE).height(8).span(8);
      for (const target of targets) built.withTarget(target);
      builder.withPanel(built);
    }
  }
  return builder.build();
}

/** Every PromQL expression of the dashboard's panels, with where it is. */
export function dashboardQueries(): Array<{ row: string; panel: string; expr: string }> {
  return ROWS.flatMap((row) => row.panels.flatMap((panel) => panel.queries.map((query) => ({ row: row.title, panel: panel.title, expr: query.expr }))));
}
