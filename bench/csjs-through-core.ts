/**
 * cs-js through the core (part of BENCH_ONLY=csjs): one `uhlp dev` on the Redis
 * store, as replicas run it, serving the same small function four ways: a cs-js
 * component whose bundle is named by `latest`, by an alias, and pinned by its
 * sha256, and a plain JIT script (the floor: what the core costs with no bundle
 * to name). Each route is loaded with one connection (c1) for `durationMs`, the
 * four interleaved in every round, so a noisy spell of the shared machine hits
 * them all.
 *
 * Target (issue 27): a cs-js component <= +0.1 ms p50 over the plain JIT script,
 * whichever way its bundle is named.
 *
 * BENCH_CPU_PROF=<dir> writes the core's CPU profile there (node --cpu-prof).
 */
import { buildBundle } from '../src/contract/cs-bundle/function-bundle.js';
import { RedisRuntimeStore } from '../src/state/redis-runtime-store.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../test/helpers/redis-url.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { writeBenchApp } from './lib/bench-app.js';
import type { LoadResult } from './lib/load.js';
import { loadThroughCore } from './lib/dispatch-load.js';

/** The same answer from both runners: the cs-js handler's event is the JIT script's. */
const SOURCE = `export default async function handle(event) {
  return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sum: 5, name: event.httpDetails.pathParameters.name }) };
}
`;
const JIT_SOURCE = `export const sum = (event) => ({ statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sum: 5, name: event.httpDetails.pathParameters.name }) });\n`;
const MANIFEST = JSON.stringify({ schema: 'cs.function.script.v1', runtime: 'cs-js', entry: 'function.js', handler: 'default', limits: { timeoutMs: 3000, memoryMb: 32 } });

export type CsjsCorePath = 'jit' | 'cs-sha256' | 'cs-latest' | 'cs-alias';
const PATHS: readonly CsjsCorePath[] = ['jit', 'cs-sha256', 'cs-latest', 'cs-alias'];

export interface CsjsCoreRow {
  readonly path: CsjsCorePath;
  /** Every round's result, in order. */
  readonly rounds: readonly LoadResult[];
  /** The round with the median p50. */
  readonly result: LoadResult;
  /** p50 over the plain JIT script's, each from its median round, ms. */
  readonly overJitP50Ms: number;
}

function app(sha256: string): string {
  return `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools:
    - { name: cs, runner: csjs, minWarm: 1, maxSize: 1, maxUses: 100000000, limits: { timeoutMs: 5000, memoryMb: 256 } }
    - { name: js, minWarm: 1, maxSize: 1, maxUses: 100000000, limits: { timeoutMs: 5000 } }
  components:
    - { id: jit, handler: JIT, pool: js, jit: { script: scripts/sum.mjs, function: sum } }
    - { id: sha, handler: JIT, pool: cs, cs: { sha256: ${sha256} } }
    - { id: latest, handler: JIT, pool: cs, cs: { function: bench/sum } }
    - { id: alias, handler: JIT, pool: cs, cs: { function: bench/sum, ref: prod } }
  routes:
    - { http: { method: GET, path: /jit/:name }, component: jit }
    - { http: { method: GET, path: /sha/:name }, component: sha }
    - { http: { method: GET, path: /latest/:name }, component: latest }
    - { http: { method: GET, path: /alias/:name }, component: alias }
  capabilities:
    functions: { namespaces: [bench] }
`;
}

const ROUTE: Record<CsjsCorePath, string> = { jit: '/bench/jit/{{id}}', 'cs-sha256': '/bench/sha/{{id}}', 'cs-latest': '/bench/latest/{{id}}', 'cs-alias': '/bench/alias/{{id}}' };

export async function benchCsjsThroughCore(options: { durationMs: number; rounds: number }): Promise<CsjsCoreRow[]> {
  const prefix = uniqueKeyPrefix('bench-csjs');
  const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix });
  const bundle = buildBundle({ functionJs: SOURCE, manifestJson: MANIFEST });
  const profileDir = process.env.BENCH_CPU_PROF;
  try {
    await store.functions.putBundle('bench', bundle.sha256, bundle.bytes);
    const { version } = await store.functions.publishVersion('bench', 'bench', 'sum', bundle.sha256);
    await store.functions.setAlias('bench', 'bench', 'sum', 'prod', version);
    const defs = writeBenchApp(app(bundle.sha256), { 'scripts/sum.mjs': JIT_SOURCE });
    const core = await startUhlpDev(defs, ['--state', TEST_REDIS_URL, '--log-level', 'error'], 60_000, undefined, {
      UHLP_STATE_PREFIX: prefix,
      ...(profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
    });
    try {
      const samples = new Map<CsjsCorePath, LoadResult[]>(PATHS.map((p) => [p, []]));
      for (let round = 0; round < options.rounds; round++) {
        for (const p of PATHS) {
          const result = await loadThroughCore(core.url, ROUTE[p], 1, options.durationMs);
          if (result.errors > 0 && result.requests === 0) throw new Error(`${p}: every request failed through the core`);
          samples.get(p)!.push(result);
        }
      }
      const median = (results: LoadResult[]): LoadResult => [...results].sort((a, b) => a.p50Ms - b.p50Ms)[Math.floor(results.length / 2)]!;
      const jit = median(samples.get('jit')!);
      return PATHS.map((p) => {
        const result = median(samples.get(p)!);
        return { path: p, rounds: samples.get(p)!, result, overJitP50Ms: Math.round((result.p50Ms - jit.p50Ms) * 1000) / 1000 };
      });
    } finally {
      await core.stop();
    }
  } finally {
    await store.deleteAllKeys();
    await store.close();
  }
}

export function csjsCoreTable(rows: readonly CsjsCoreRow[]): string {
  const label: Record<CsjsCorePath, string> = {
    jit: 'plain JIT script (the floor)',
    'cs-sha256': 'cs-js bundle pinned by sha256',
    'cs-latest': 'cs-js bundle by ref `latest`',
    'cs-alias': 'cs-js bundle by alias `prod`',
  };
  return rows
    .map((row) => {
      const { p50Ms, p99Ms, rps, errors } = row.result;
      const over = row.path === 'jit' ? '' : `  ${row.overJitP50Ms >= 0 ? '+' : ''}${row.overJitP50Ms} ms p50 over JIT (target <= +0.1: ${row.overJitP50Ms <= 0.1 ? 'ok' : 'MISSED'})`;
      return `${label[row.path].padEnd(34)} c1 p50 ${p50Ms.toFixed(3).padStart(7)} ms  p99 ${p99Ms.toFixed(3).padStart(7)} ms  ${String(rps).padStart(6)} req/s${errors > 0 ? `  ${errors} errors` : ''}${over}  rounds p50 ${row.rounds.map((r) => r.p50Ms).join(' / ')}`;
    })
    .join('\n');
}
