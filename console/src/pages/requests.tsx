/**
 * The requests page: the last turns of every source (HTTP, queue, cron,
 * callback, trigger, workflow steps and resumes, views) from the turn journal,
 * filtered and paged on the server, newest first. Filters live in the URL
 * (#/requests?app=...&status=5xx), so a filtered list can be linked; a row
 * opens the turn (request.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { ErrorBox, Section } from '../components/common.js';
import { choiceField, FilterForm, filterValues, sinceField } from '../components/filter-form.js';
import { duration, time } from '../format.js';
import { href, type Route } from '../router.js';
import { TURN_SOURCES, type TurnJournalEntry, type TurnPage } from '../types.js';

const PAGE = 50;
const FILTERS = [
  { name: 'app', label: 'App' },
  { name: 'route', label: 'Route' },
  { name: 'status', label: 'Status', placeholder: '200, 5xx, UHLP_…' },
  choiceField('source', 'Source', TURN_SOURCES),
  sinceField([
    [5, 'last 5 minutes'],
    [60, 'last hour'],
    [1440, 'last day'],
  ]),
];

export function RequestsPage({ route }: { route: Route }) {
  const filters = filterValues(route, FILTERS);
  const key = JSON.stringify(filters);
  const [turns, setTurns] = useState<TurnJournalEntry[]>([]);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [size, setSize] = useState<number | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(false);

  const load = async (cursor: string | undefined): Promise<void> => {
    setLoading(true);
    try {
      const since = filters.since !== '' ? String(Date.now() - Number(filters.since) * 60_000) : undefined;
      const page = await api<TurnPage>(`/requests${query({ app: filters.app, route: filters.route, status: filters.status, source: filters.source, since, limit: PAGE, cursor })}`);
      setTurns((current) => (cursor === undefined ? page.turns : [...current, ...page.turns]));
      setNext(page.next);
      setSize(page.size);
      setError(undefined);
    } catch (failure) {
      setError(failure);
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    void load(undefined);
  }, [key]);

  return (
    <Section
      title="Requests"
      actions={
        <span class="muted" aria-live="polite">
          {turns.length} shown{size !== undefined ? ` · the last ${size} of each app on each core are kept` : ''}{' '}
          <button type="button" class="button button-plain" onClick={() => void load(undefined)}>
            Refresh
          </button>
        </span>
      }
    >
      <FilterForm page="requests" route={route} fields={FILTERS} />
      <ErrorBox error={error} />
      <table class="requests">
        <thead>
          <tr>
            <th scope="col">Request</th>
            <th scope="col">Source</th>
            <th scope="col">App</th>
            <th scope="col">Route</th>
            <th scope="col">Status</th>
            <th scope="col">Duration</th>
            <th scope="col">Calls</th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {turns.map((turn) => (
            <tr key={`${turn.core}/${turn.id}`} data-request={turn.id}>
              <td>
                <a href={href('requests', turn.id)}>{turn.id}</a>
              </td>
              <td>{turn.source}</td>
              <td>
                {turn.app} / {turn.component}
              </td>
              <td class="mono">{turn.route}</td>
              <td>
                <span class={`badge ${turn.status >= 400 ? 'badge-failed' : 'badge-completed'}`}>{turn.status}</span>
                {turn.code !== undefined ? <span class="muted"> {turn.code}</span> : null}
              </td>
              <td>{duration(turn.durationMs)}</td>
              <td>{turn.toolCalls + turn.modelCalls > 0 ? `${turn.toolCalls} tool · ${turn.modelCalls} model` : '–'}</td>
              <td>{time(new Date(turn.startedAt).toISOString())}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {loading && turns.length === 0 ? (
        <p class="muted" role="status">
          Loading…
        </p>
      ) : null}
      {!loading && turns.length === 0 && error === undefined ? <p class="muted">No requests match.</p> : null}
      {next !== undefined ? (
        <button type="button" class="button button-plain" disabled={loading} onClick={() => void load(next)}>
          Older requests
        </button>
      ) : null}
    </Section>
  );
}
