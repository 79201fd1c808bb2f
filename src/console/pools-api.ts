/**
 * The console's pools: warm, busy and starting sandboxes per pool (what
 * /readyz reports), the driver, recent claims (acquires) with their p50 and
 * p99 and hit share, and sandbox ends by cause. Claims and ends are read from
 * the core's own metrics (uhlp_sandbox_acquire_seconds,
 * uhlp_sandbox_destroyed_total), so the page and a Prometheus scrape agree;
 * "recent" is the last CLAIM_WINDOW_MS, as the difference between the
 * histogram now and a snapshot kept from about that long ago.
 *
 * - `GET api/pools` -> `{driver, isolation, windowMs, pools: [...], ends: [...]}`
 */
import type { FastifyInstance } from 'fastify';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';

/** How far back "recent claims" reach. */
export const CLAIM_WINDOW_MS = 5 * 60_000;

interface MetricValue {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName?: string;
}

/** Cumulative bucket counts of one (app, pool) series, by upper bound. */
type Buckets = Map<number, number>;

interface Snapshot {
  readonly at: number;
  readonly series: Map<string, { buckets: Buckets; hits: number; count: number }>;
}

export function registerPoolsApi(app: FastifyInstance, context: ConsoleContext): void {
  const snapshots: Snapshot[] = [];

  app.get(`${CONSOLE_API}/pools`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const now = Date.now();
    const current = await claimSeries(context);
    snapshots.push({ at: now, series: current });
    // Keep one snapshot older than the window (the baseline) and the ones after it.
    while (snapshots.length > 1 && now - snapshots[1]!.at >= CLAIM_WINDOW_MS) snapshots.shift();
    if (snapshots.length > 120) snapshots.splice(1, snapshots.length - 120);
    const baseline = snapshots[0]!.at <= now - CLAIM_WINDOW_MS ? snapshots[0]! : undefined;
    const readiness = context.sandboxes.readiness();
    const runners = new Map<string, string>();
    for (const loaded of context.registry.snapshot.apps.values()) for (const pool of loaded.pools.values()) runners.set(`${loaded.id}/${pool.name}`, pool.runner);
    const pools = readiness.pools.map((pool) => {
      const key = `${pool.app}/${pool.pool}`;
      const claims = windowed(current.get(key), baseline?.series.get(key));
      return { ...pool, runner: runners.get(key) ?? 'jit', driver: context.sandboxes.driverName, claims };
    });
    return reply.send({
      driver: context.sandboxes.driverName,
      isolation: context.sandboxes.isolation,
      windowMs: baseline !== undefined ? now - baseline.at : now - snapshots[0]!.at,
      sinceStart: baseline === undefined,
      pools,
      ends: await sandboxEnds(context),
    });
  });
}

async function values(context: ConsoleContext, name: string): Promise<MetricValue[]> {
  const metric = context.metrics.registry.getSingleMetric(name);
  if (metric === undefined) return [];
  return ((await metric.get()) as { values: MetricValue[] }).values;
}

async function claimSeries(context: ConsoleContext): Promise<Snapshot['series']> {
  const series: Snapshot['series'] = new Map();
  for (const value of await values(context, 'uhlp_sandbox_acquire_seconds')) {
    const key = `${String(value.labels['app'])}/${String(value.labels['pool'])}`;
    let entry = series.get(key);
    if (entry === undefined) series.set(key, (entry = { buckets: new Map(), hits: 0, count: 0 }));
    const name = value.metricName ?? '';
    if (name.endsWith('_bucket')) {
      const le = value.labels['le'] === '+Inf' ? Number.POSITIVE_INFINITY : Number(value.labels['le']);
      entry.buckets.set(le, (entry.buckets.get(le) ?? 0) + value.value);
    } else if (name.endsWith('_count')) {
      entry.count += value.value;
      if (value.labels['outcome'] === 'hit') entry.hits += value.value;
    }
  }
  return series;
}

/** Claims in the window: count, hit share, and p50/p99 (seconds) as Prometheus' histogram_quantile estimates them. */
export function windowed(
  now: { buckets: Buckets; hits: number; count: number } | undefined,
  before: { buckets: Buckets; hits: number; count: number } | undefined,
): { count: number; hits: number; p50: number | null; p99: number | null } {
  if (now === undefined) return { count: 0, hits: 0, p50: null, p99: null };
  const buckets = [...now.buckets.entries()].map(([le, count]) => [le, count - (before?.buckets.get(le) ?? 0)] as const).sort((a, b) => a[0] - b[0]);
  const count = now.count - (before?.count ?? 0);
  return { count, hits: now.hits - (before?.hits ?? 0), p50: quantile(0.5, buckets), p99: quantile(0.99, buckets) };
}

/** histogram_quantile over cumulative buckets: linear within the bucket the rank falls in; the last finite bound past it. */
export function quantile(q: number, buckets: ReadonlyArray<readonly [number, number]>): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lowerBound;
      const inBucket = count - lowerCount;
      return inBucket <= 0 ? le : lowerBound + ((le - lowerBound) * (rank - lowerCount)) / inBucket;
    }
    lowerBound = le;
    lowerCount = count;
  }
  return lowerBound;
}

async function sandboxEnds(context: ConsoleContext): Promise<Array<{ app: string; pool: string; cause: string; count: number }>> {
  return (await values(context, 'uhlp_sandbox_destroyed_total'))
    .filter((value) => value.value > 0)
    .map((value) => ({ app: String(value.labels['app']), pool: String(value.labels['pool']), cause: String(value.labels['cause']), count: value.value }))
    .sort((a, b) => b.count - a.count);
}
