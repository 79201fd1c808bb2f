/**
 * A closed-loop load generator: `connections` workers, each sending its next
 * request as soon as the previous one is answered, for a fixed time. Latencies
 * are measured per request with the monotonic clock.
 */
export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** One request; resolves true when the answer is the expected one. */
export type Send = (worker: number, sequence: number) => Promise<boolean>;

export async function runLoad(send: Send, connections: number, durationMs: number): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: connections }, async (_, worker) => {
      for (let sequence = 0; performance.now() < deadline; sequence++) {
        const t0 = performance.now();
        let ok = false;
        try {
          ok = await send(worker, sequence);
        } catch {
          ok = false;
        }
        if (ok) latencies.push(performance.now() - t0);
        else errors += 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN);
  return {
    requests: latencies.length,
    errors,
    seconds: round(seconds),
    rps: Math.round(latencies.length / seconds),
    p50Ms: at(0.5),
    p90Ms: at(0.9),
    p99Ms: at(0.99),
    maxMs: round(latencies[latencies.length - 1] ?? NaN),
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** Prints rows as an aligned text table. */
export function table(rows: Array<Record<string, string | number>>): string {
  const columns = Object.keys(rows[0] ?? {});
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]): string => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ');
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => String(r[c]))))].join('\n');
}

/** Warm-dispatch rows (core vs direct, per connection count) as a table. */
export function dispatchTable(rows: ReadonlyArray<{ path: string; connections: number; result: LoadResult }>): string {
  return table(
    rows.map((r) => ({
      path: r.path,
      conns: r.connections,
      'req/s': r.result.rps,
      'p50 ms': r.result.p50Ms,
      'p90 ms': r.result.p90Ms,
      'p99 ms': r.result.p99Ms,
      errors: r.result.errors,
    })),
  );
}
