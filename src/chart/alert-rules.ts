/**
 * The alerts of the chart's PrometheusRule, as a Prometheus rule file
 * (charts/uhlp/files/alert-rules.yaml, generated). Each alert is on something a person
 * must act on; `promtool check rules` loads the file in the tests, and every metric it
 * names must exist in the core's registry (metric-references.test.ts).
 *
 * Still to come: the optimizer's disagreement rate (promotions already roll back by
 * themselves on it; an alert would tell a person that one did).
 */
import { stringify } from 'yaml';

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  /** How long the condition must hold. */
  readonly for: string;
  readonly severity: 'critical' | 'warning' | 'info';
  readonly summary: string;
  readonly description: string;
}

/** Abnormal sandbox ends; `recycled`, `idle` and `shutdown` are the pool at work. */
const ABNORMAL_CAUSES = 'crash|oom|heap-limit|timeout|unhealthy|bad-response|start-failed';

export const ALERT_RULES: readonly AlertRule[] = [
  {
    alert: 'UhlpHighErrorRatio',
    expr:
      'sum by (namespace, app) (rate(uhlp_http_requests_total{status=~"5.."}[5m]))\n' +
      '  / sum by (namespace, app) (rate(uhlp_http_requests_total[5m])) > 0.05',
    for: '10m',
    severity: 'warning',
    summary: 'More than 5% of the requests of app {{ $labels.app }} fail with a 5xx.',
    description: '{{ $value | humanizePercentage }} of the answers of {{ $labels.app }} in {{ $labels.namespace }} were 5xx over 5 minutes.',
  },
  {
    alert: 'UhlpPoolExhausted',
    expr: 'sum by (namespace, app, pool) (increase(uhlp_pool_exhausted_total[5m])) > 0',
    for: '10m',
    severity: 'warning',
    summary: 'Pool {{ $labels.app }}/{{ $labels.pool }} keeps refusing requests for want of a sandbox.',
    description: 'Requests got 503 UHLP_POOL_EXHAUSTED or UHLP_POOL_QUEUE_FULL for 10 minutes: raise the pool maxSize, or its concurrency.',
  },
  {
    alert: 'UhlpSandboxDeaths',
    expr: `sum by (namespace, app, pool, cause) (increase(uhlp_sandbox_destroyed_total{cause=~"${ABNORMAL_CAUSES}"}[15m])) > 5`,
    for: '0m',
    severity: 'warning',
    summary: 'Sandboxes of {{ $labels.app }}/{{ $labels.pool }} die of {{ $labels.cause }}.',
    description: '{{ $value }} sandboxes ended with cause {{ $labels.cause }} in 15 minutes (oom and heap-limit: raise limits.memoryMb; timeout: the component is slower than limits.timeoutMs).',
  },
  {
    alert: 'UhlpDeadLetters',
    expr: 'sum by (namespace, app, source) (increase(uhlp_dead_letters_total[15m])) > 0',
    for: '0m',
    severity: 'warning',
    summary: 'Messages of {{ $labels.app }} ({{ $labels.source }}) go to the dead letters.',
    description: '{{ $value }} messages failed every attempt or expired in 15 minutes: `uhlp queues dlq {{ $labels.app }}` shows why, `uhlp queues redrive` sends them again once fixed.',
  },
  {
    alert: 'UhlpRedisUnavailable',
    expr: 'min by (namespace, instance) (uhlp_state_up{kind="redis"}) == 0',
    for: '1m',
    severity: 'critical',
    summary: 'The core {{ $labels.instance }} cannot reach Redis.',
    description: 'Requests that need runtime state fail with 503 UHLP_STATE_UNAVAILABLE and /readyz answers 503 until Redis answers again.',
  },
  {
    alert: 'UhlpRedisFailover',
    expr: 'sum by (namespace, instance) (increase(uhlp_redis_failovers_total[5m])) > 0',
    for: '0m',
    severity: 'warning',
    summary: "The core {{ $labels.instance }} followed a Redis failover.",
    description:
      'Its Redis connections came back to another master within 5 minutes. Writes refused during the switch answered 503 UHLP_STATE_UNAVAILABLE and were retried by callers; find out why the master went (SENTINEL failover log, the old master host), and whether it keeps happening.',
  },
  {
    alert: 'UhlpLedgerWriteErrors',
    expr: 'sum by (namespace, instance) (increase(uhlp_ledger_write_errors_total[10m])) > 0',
    for: '0m',
    severity: 'critical',
    summary: 'The core {{ $labels.instance }} failed to write turn ledgers.',
    description: 'Turns are missing from their ledgers (a full or read-only data volume?); `uhlp ledger verify` will report the gap.',
  },
  {
    alert: 'UhlpOperatorNoLeader',
    expr: 'sum by (namespace) (uhlp_operator_leader) < 1',
    for: '5m',
    severity: 'critical',
    summary: 'No uhlp operator leads in {{ $labels.namespace }}: AppDefinitions are not reconciled.',
    description: 'No operator has held the leader Lease for 5 minutes; new and changed AppDefinitions are not served.',
  },
  {
    alert: 'UhlpAppWatchDown',
    expr: 'min by (namespace, instance) (uhlp_app_watch_up) == 0',
    for: '10m',
    severity: 'warning',
    summary: 'The core {{ $labels.instance }} does not follow the AppDefinitions of the API server.',
    description:
      'It serves the apps it last listed and stays ready, but new, changed and deleted AppDefinitions do not reach it until its watch is back: is the API server away (an upgrade, an outage), or does a NetworkPolicy or RBAC keep the core from it? /readyz says why (appWatch.reason).',
  },
  {
    alert: 'UhlpOperatorReconcileErrors',
    expr:
      'sum by (namespace, kind) (rate(uhlp_operator_reconciles_total{outcome="error"}[10m]))\n' +
      '  / sum by (namespace, kind) (rate(uhlp_operator_reconciles_total[10m])) > 0.2',
    for: '15m',
    severity: 'warning',
    summary: 'More than 20% of the {{ $labels.kind }} reconciles fail.',
    description: 'The operator log says why (`reconcile failed; requeued`); the failing objects are retried with backoff.',
  },
  {
    alert: 'UhlpOperatorQueueBacklog',
    expr: 'max by (namespace, kind) (uhlp_operator_queue_depth) > 100',
    for: '15m',
    severity: 'warning',
    summary: 'The operator falls behind on {{ $labels.kind }} objects.',
    description: '{{ $value }} keys have waited in the {{ $labels.kind }} work queue for 15 minutes.',
  },
  {
    alert: 'UhlpLlmBudgetNearlySpent',
    expr: 'max by (namespace, app) (uhlp_llm_budget_used_ratio) > 0.9',
    for: '0m',
    severity: 'info',
    summary: 'App {{ $labels.app }} has spent {{ $value | humanizePercentage }} of its daily LLM token budget.',
    description: 'Past capabilities.llm.tokensPerDay its LLM calls get 429 UHLP_LLM_BUDGET_EXCEEDED until the UTC day ends.',
  },
];

/** The rule file: one group, in Prometheus's format (a PrometheusRule's spec is the same). */
export function renderAlertRules(): string {
  const document = {
    groups: [
      {
        name: 'uhlp',
        rules: ALERT_RULES.map((rule) => ({
          alert: rule.alert,
          expr: rule.expr,
          for: rule.for,
          labels: { severity: rule.severity },
          annotations: { summary: rule.summary, description: rule.description },
        })),
      },
    ],
  };
  return `# Generated by \`npm run generate\` from src/chart/alert-rules.ts. Do not edit by hand.\n${stringify(document, { lineWidth: 0 })}`;
}
