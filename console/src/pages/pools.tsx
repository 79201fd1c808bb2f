/** The pools: warm (idle), busy and starting sandboxes per pool and driver, recent claims with p50/p99, and sandbox ends by cause. */
import { api } from '../api.js';
import { ErrorBox, Loading, Section, useLoad } from '../components/common.js';
import { duration, percent } from '../format.js';

interface PoolsAnswer {
  driver: string;
  isolation: string;
  windowMs: number;
  sinceStart: boolean;
  pools: Array<{
    app: string;
    pool: string;
    runner: string;
    driver: string;
    ready: boolean;
    minWarm: number;
    maxSize: number;
    starting: number;
    idle: number;
    busy: number;
    waiting: number;
    lastStartError?: string;
    claims: { count: number; hits: number; p50: number | null; p99: number | null };
  }>;
  ends: Array<{ app: string; pool: string; cause: string; count: number }>;
}

export function PoolsPage() {
  const { data, error } = useLoad(() => api<PoolsAnswer>('/pools'), [], 5000);
  if (error !== undefined) return <ErrorBox error={error} />;
  if (data === undefined) return <Loading />;
  const window = data.sinceStart ? 'since the console first looked' : `last ${duration(data.windowMs)}`;
  return (
    <>
      <Section title="Pools" actions={<span class="muted">driver {data.driver} · isolation {data.isolation}</span>}>
        <table>
          <thead>
            <tr>
              <th scope="col">App / pool</th>
              <th scope="col">Runner</th>
              <th scope="col">Ready</th>
              <th scope="col">Warm</th>
              <th scope="col">Busy</th>
              <th scope="col">Starting</th>
              <th scope="col">Waiting</th>
              <th scope="col">Min / max</th>
              <th scope="col">Claims ({window})</th>
              <th scope="col">Hits</th>
              <th scope="col">p50</th>
              <th scope="col">p99</th>
            </tr>
          </thead>
          <tbody>
            {data.pools.map((pool) => (
              <tr>
                <td>
                  {pool.app} / {pool.pool}
                  {pool.lastStartError !== undefined ? <p class="error">{pool.lastStartError}</p> : null}
                </td>
                <td>{pool.runner}</td>
                <td>{pool.ready ? 'yes' : 'no'}</td>
                <td>{pool.idle}</td>
                <td>{pool.busy}</td>
                <td>{pool.starting}</td>
                <td>{pool.waiting}</td>
                <td>
                  {pool.minWarm} / {pool.maxSize}
                </td>
                <td>{pool.claims.count}</td>
                <td>{pool.claims.count > 0 ? percent(pool.claims.hits / pool.claims.count) : '–'}</td>
                <td>{pool.claims.p50 === null ? '–' : duration(pool.claims.p50 * 1000)}</td>
                <td>{pool.claims.p99 === null ? '–' : duration(pool.claims.p99 * 1000)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      <Section title="Sandbox ends by cause">
        {data.ends.length === 0 ? <p class="muted">No sandbox has ended yet.</p> : null}
        {data.ends.length > 0 ? (
          <table>
            <thead>
              <tr>
                <th scope="col">App / pool</th>
                <th scope="col">Cause</th>
                <th scope="col">Sandboxes</th>
              </tr>
            </thead>
            <tbody>
              {data.ends.map((end) => (
                <tr>
                  <td>
                    {end.app} / {end.pool}
                  </td>
                  <td>{end.cause}</td>
                  <td>{end.count}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Section>
    </>
  );
}
