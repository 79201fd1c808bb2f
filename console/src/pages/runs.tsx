/**
 * The runs list: filtered and paged on the server (the run index), shown as a
 * windowed table, only the rows in view are in the DOM, so ten thousand runs
 * cost what forty do. The next page is fetched as the end of the loaded rows
 * comes into view. Filters live in the URL (#/runs?app=...), so a filtered list
 * can be linked.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { ErrorBox, Section, StatusBadge } from '../components/common.js';
import { choiceField, FilterForm, filterValues, sinceField } from '../components/filter-form.js';
import { time } from '../format.js';
import { href, type Route } from '../router.js';
import { RUN_STATUSES, type RunPage, type RunSummary } from '../types.js';

const PAGE = 100;
const ROW_HEIGHT = 36;
/** Rows rendered above and below the visible ones. */
const OVERSCAN = 10;
const FILTERS = [
  { name: 'app', label: 'App' },
  { name: 'component', label: 'Component' },
  choiceField('status', 'State', RUN_STATUSES),
  sinceField([
    [15, 'last 15 minutes'],
    [60, 'last hour'],
    [1440, 'last day'],
    [10080, 'last week'],
  ]),
];

export function RunsPage({ route }: { route: Route }) {
  const filters = filterValues(route, FILTERS);
  const key = JSON.stringify(filters);
  const [runs, setRuns] = useState<RunSummary[]>([]);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [total, setTotal] = useState<{ count: number; capped: boolean } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(false);
  const loadingRef = useRef(false);

  const load = async (cursor: string | undefined, reset: boolean): Promise<void> => {
    if (loadingRef.current && !reset) return;
    loadingRef.current = true;
    setLoading(true);
    try {
      const since = filters.since !== '' ? String(Date.now() - Number(filters.since) * 60_000) : undefined;
      const page = await api<RunPage>(`/runs${query({ app: filters.app, component: filters.component, status: filters.status, since, limit: PAGE, cursor })}`);
      setRuns((current) => (reset ? page.runs : [...current, ...page.runs]));
      setNext(page.next);
      if (page.total !== undefined) setTotal({ count: page.total, capped: page.countCapped === true });
      setError(undefined);
      if (reset) performance.mark('uhlp-runs-rendered');
    } catch (failure) {
      setError(failure);
    } finally {
      loadingRef.current = false;
      setLoading(false);
    }
  };

  useEffect(() => {
    void load(undefined, true);
    // A list that shows running runs stays fresh.
    const timer = setInterval(() => void load(undefined, true), 10_000);
    return () => clearInterval(timer);
  }, [key]);

  return (
    <Section title="Runs" actions={<span class="muted" aria-live="polite">{total !== undefined ? `${total.count}${total.capped ? '+' : ''} runs` : ''}</span>}>
      <FilterForm page="runs" route={route} fields={FILTERS} />
      <ErrorBox error={error} />
      <RunTable runs={runs} onNearEnd={() => next !== undefined && void load(next, false)} />
      {loading && runs.length === 0 ? (
        <p class="muted" role="status">
          Loading…
        </p>
      ) : null}
      {!loading && runs.length === 0 && error === undefined ? <p class="muted">No runs match.</p> : null}
    </Section>
  );
}

function RunTable({ runs, onNearEnd }: { runs: RunSummary[]; onNearEnd: () => void }) {
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  useEffect(() => {
    const element = scroller.current;
    if (element === null) return;
    const update = (): void => setView({ top: element.scrollTop, height: element.clientHeight });
    update();
    element.addEventListener('scroll', update, { passive: true });
    window.addEventListener('resize', update);
    return () => {
      element.removeEventListener('scroll', update);
      window.removeEventListener('resize', update);
    };
  }, []);
  const first = Math.max(0, Math.floor(view.top / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(runs.length, Math.ceil((view.top + view.height) / ROW_HEIGHT) + OVERSCAN);
  useEffect(() => {
    if (last >= runs.length - OVERSCAN && runs.length > 0) onNearEnd();
  }, [last, runs.length]);
  const visible = useMemo(() => runs.slice(first, last), [runs, first, last]);
  const topPad = useRef<HTMLTableCellElement>(null);
  const bottomPad = useRef<HTMLTableCellElement>(null);
  // Heights set through the CSSOM: the page's policy allows no inline style attribute.
  useEffect(() => {
    if (topPad.current !== null) topPad.current.style.height = `${first * ROW_HEIGHT}px`;
    if (bottomPad.current !== null) bottomPad.current.style.height = `${(runs.length - last) * ROW_HEIGHT}px`;
  });
  return (
    <div class="scroller" ref={scroller} tabIndex={0} aria-label="runs">
      <table class="runs" aria-rowcount={runs.length + 1}>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">App</th>
            <th scope="col">Component</th>
            <th scope="col">State</th>
            <th scope="col">Steps</th>
            <th scope="col">Started</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          <tr class="pad" aria-hidden="true">
            <td ref={topPad} colSpan={7} />
          </tr>
          {visible.map((run, offset) => (
            <tr key={run.id} aria-rowindex={first + offset + 2}>
              <td>
                <a href={href('runs', run.id)}>{run.id}</a>
              </td>
              <td>{run.app}</td>
              <td>{run.component}</td>
              <td>
                <StatusBadge status={run.status} />
                {run.errorCode !== undefined ? <span class="muted"> {run.errorCode}</span> : null}
              </td>
              <td>{run.steps}</td>
              <td>{time(run.createdAt)}</td>
              <td>{time(run.updatedAt)}</td>
            </tr>
          ))}
          <tr class="pad" aria-hidden="true">
            <td ref={bottomPad} colSpan={7} />
          </tr>
        </tbody>
      </table>
    </div>
  );
}
