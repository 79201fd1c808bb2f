/**
 * One turn: who it was for, how it ended, where its time went (a meter per
 * stage), its error with the script's stack (preformatted text), its tool and
 * model calls, its ledger entries in words, and a link to its trace where a
 * trace UI is configured. Every value is text: an error message or a stack is
 * whatever a script threw, and is shown as such.
 */
import { api } from '../api.js';
import { ErrorBox, JsonBlock, Loading, Section, useLoad } from '../components/common.js';
import { duration, time } from '../format.js';
import { href } from '../router.js';
import type { TurnDetail, TurnJournalEntry } from '../types.js';

const STAGES: Array<[keyof TurnJournalEntry['timing'], string]> = [
  ['limitMs', 'Rate limit'],
  ['flowMs', 'Waiting at flow gates'],
  ['claimMs', 'Once-only claim'],
  ['sessionMs', 'Session'],
  ['executionMs', 'Execution'],
  ['ledgerMs', 'Ledger'],
];

export function RequestPage({ id }: { id: string }) {
  const { data, error } = useLoad(() => api<TurnDetail>(`/requests/${encodeURIComponent(id)}`), [id]);
  if (error !== undefined) return <ErrorBox error={error} />;
  if (data === undefined) return <Loading />;
  const { turn, ledger, traceUrl } = data;
  return (
    <>
      <Section
        title={`Request ${turn.id}`}
        actions={
          <a class="button button-plain" href={href('requests')}>
            All requests
          </a>
        }
      >
        <dl class="facts">
          <dt>Source</dt>
          <dd>{turn.source}</dd>
          <dt>App / component</dt>
          <dd>
            {turn.app} / {turn.component}
          </dd>
          <dt>Route</dt>
          <dd class="mono">{turn.route === '' ? '–' : turn.route}</dd>
          <dt>Status</dt>
          <dd>
            <span class={`badge ${turn.status >= 400 ? 'badge-failed' : 'badge-completed'}`}>{turn.status}</span>
            {turn.code !== undefined ? <span class="mono"> {turn.code}</span> : null}
            {turn.replayed === true ? <span class="muted"> (a stored answer, replayed)</span> : null}
          </dd>
          <dt>Started</dt>
          <dd>{time(new Date(turn.startedAt).toISOString())}</dd>
          <dt>Duration</dt>
          <dd>{duration(turn.durationMs)}</dd>
          <dt>Core</dt>
          <dd class="mono">{turn.core}</dd>
          {turn.runId !== undefined ? (
            <>
              <dt>Workflow run</dt>
              <dd>
                <a href={href('runs', turn.runId)}>{turn.runId}</a>
              </dd>
            </>
          ) : null}
          <dt>Trace</dt>
          <dd>
            {traceUrl !== undefined ? (
              <a href={traceUrl} target="_blank" rel="noopener noreferrer">
                {turn.traceId}
              </a>
            ) : (
              <span class="muted">{turn.traceId ?? 'none'}</span>
            )}
          </dd>
        </dl>
      </Section>
      <Section title="Timing">
        <table class="timing">
          <tbody>
            {STAGES.filter(([stage]) => turn.timing[stage] !== undefined).map(([stage, label]) => (
              <tr>
                <th scope="row">{label}</th>
                <td>
                  <meter min={0} max={Math.max(turn.durationMs, 0.001)} value={turn.timing[stage] ?? 0} aria-label={`${label} of the turn's time`} />
                </td>
                <td>{duration(turn.timing[stage])}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      {turn.error !== undefined ? (
        <Section title="Error">
          <p class="mono">{turn.error.code}</p>
          <p class="error" data-testid="error-message">
            {turn.error.message}
          </p>
          {turn.error.stack !== undefined ? (
            <pre class="code" aria-label="stack" data-testid="error-stack" tabIndex={0}>
              {turn.error.stack}
            </pre>
          ) : null}
        </Section>
      ) : null}
      <Section title={`Calls (${turn.toolCalls} tool, ${turn.modelCalls} model)`}>
        {turn.calls.length === 0 ? <p class="muted">The turn called no tool and no model.</p> : null}
        {turn.calls.length > 0 ? (
          <table class="calls">
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col">Name</th>
                <th scope="col">Outcome</th>
                <th scope="col">Duration</th>
                <th scope="col">Tokens</th>
              </tr>
            </thead>
            <tbody>
              {turn.calls.map((call) => (
                <tr>
                  <td>{call.kind}</td>
                  <td class="mono">{call.name}</td>
                  <td>{call.outcome}</td>
                  <td>{duration(call.durationMs)}</td>
                  <td>{call.tokens !== undefined ? `${call.tokens.prompt} in · ${call.tokens.completion} out` : '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {turn.toolCalls + turn.modelCalls > turn.calls.length ? <p class="muted">The first {turn.calls.length} calls are shown.</p> : null}
      </Section>
      <Section title="Ledger">
        {ledger === null ? <p class="muted">No ledger entries for this turn (the ledger is off, or its session's sampling left it out).</p> : <LedgerEntries ledger={ledger} turn={turn} />}
      </Section>
    </>
  );
}

function LedgerEntries({ ledger, turn }: { ledger: NonNullable<TurnDetail['ledger']>; turn: TurnJournalEntry }) {
  if (ledger.exec.length === 0 && ledger.evidence.length === 0) {
    return <p class="muted">No entries found yet for turn {turn.ledger?.turnNumber} of session {turn.ledger?.sessionId}.</p>;
  }
  return (
    <>
      <p class="muted">
        Turn {turn.ledger?.turnNumber} of session <span class="mono">{turn.ledger?.sessionId}</span> ({turn.ledger?.tier})
      </p>
      {ledger.exec.map((entry) => (
        <div class="ledger-entry">
          <h3>Execution</h3>
          <dl class="facts">
            <dt>Status</dt>
            <dd>{text(entry['status'])}</dd>
            <dt>Written</dt>
            <dd>{time(text(entry['timestamp']))}</dd>
            <dt>Request id</dt>
            <dd class="mono">{text(entry['request_id'])}</dd>
            <dt>Query hash</dt>
            <dd class="mono">{text(entry['query_hash'])}</dd>
            <dt>Result hash</dt>
            <dd class="mono">{text(entry['result_hash']) || 'none (no result)'}</dd>
            <dt>Entry hash</dt>
            <dd class="mono">{text(entry['entry_hash'])}</dd>
            <dt>Chained to</dt>
            <dd class="mono">{text(entry['previous_hash']) || 'the start of the ledger'}</dd>
          </dl>
        </div>
      ))}
      {ledger.evidence.map((entry) => (
        <div class="ledger-entry">
          <h3>Evidence</h3>
          <dl class="facts">
            <dt>Status</dt>
            <dd>{text(entry['status'])}</dd>
            <dt>Declared writes</dt>
            <dd>{paths(entry['declared_writes'])}</dd>
            <dt>Writes made</dt>
            <dd>{paths(entry['realized_writes'])}</dd>
            <dt>External calls</dt>
            <dd>{calls(entry['external_calls'])}</dd>
            <dt>Capability refusals</dt>
            <dd>{refusals(entry['capability_violations'])}</dd>
            <dt>Entry hash</dt>
            <dd class="mono">{text(entry['entry_hash'])}</dd>
          </dl>
        </div>
      ))}
      <details>
        <summary>Entries as stored</summary>
        <JsonBlock value={ledger} label="ledger entries as stored" />
      </details>
    </>
  );
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

function list(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value) ? (value.filter((item) => typeof item === 'object' && item !== null) as Array<Record<string, unknown>>) : [];
}

function paths(value: unknown): string {
  const items = list(value);
  return items.length === 0 ? 'none' : items.map((item) => `${text(item['path'])}${item['size'] !== undefined ? ` (${text(item['size'])} bytes)` : ''}`).join(', ');
}

function calls(value: unknown): string {
  const items = list(value);
  return items.length === 0 ? 'none' : items.map((item) => `${text(item['kind'])} ${text(item['model'] ?? item['target'])}: ${text(item['status'] ?? 'ok')}`).join('; ');
}

function refusals(value: unknown): string {
  const items = list(value);
  return items.length === 0 ? 'none' : items.map((item) => `${text(item['operation'])} (${text(item['capability'])})`).join('; ');
}
