/**
 * `npm run bench:console`: the time to first paint of the console's runs page
 * with 10,000 runs, beside the same page with 100 runs (the ratio tells what
 * the list's length costs), measured in Debian's Chromium against `uhlp dev`
 * on Redis state that holds the runs.
 *
 * Runs are seeded through the core's own run service and run index (the
 * records and the summaries the console lists), under a key prefix of their
 * own, before each core starts. Per page load, in a fresh browser profile each
 * time (cold: nothing cached) and then reloaded (warm: the hashed assets
 * cached):
 * - first-contentful-paint (the shell),
 * - rows: the first page of runs on screen (the page's `uhlp-runs-rendered` mark),
 * - the API's first page (`GET api/runs?limit=100`, resource timing).
 * Also the built assets' sizes, raw and gzipped.
 *
 * Printed: JSON (also under bench/results/) and a table. BENCH_LOADS loads per
 * case (default 5); medians are reported.
 */
/// <reference lib="dom" />
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import { launchConsoleBrowser } from '../test/helpers/console-browser.js';
import { copyFixture, REPO_ROOT, startUhlpDev } from '../test/helpers/uhlp-process.js';
import { TEST_REDIS_URL } from '../test/helpers/redis-url.js';
import { createLogger } from '../src/logger.js';
import { RedisRuntimeStore } from '../src/state/redis-runtime-store.js';
import { RedisRunIndex } from '../src/workflow-runs/redis-run-index.js';
import { RunService } from '../src/workflow-runs/run-service.js';
import { newRunId } from '../src/workflow-runs/run-record.js';
import { table } from './lib/load.js';

const LOADS = Number(process.env['BENCH_LOADS'] ?? 5);
const CASES = [100, 10_000];
const TTL_MS = 7 * 86_400_000;

interface Load {
  readonly fcpMs: number;
  readonly rowsMs: number;
  readonly apiMs: number;
}

async function seed(prefix: string, count: number): Promise<void> {
  const logger = createLogger('warn');
  const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix, timeoutMs: 5000 });
  const index = await RedisRunIndex.connect({ url: TEST_REDIS_URL, keyPrefix: prefix, ttlMs: TTL_MS, logger });
  const runs = new RunService({ store: store.runs, ttlMs: TTL_MS, maxBytes: 1024 * 1024, index });
  const apps = ['helpdesk', 'billing', 'returns'];
  for (let i = 0; i < count; i += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, count - i) }, (_, j) =>
        runs.create({
          id: newRunId(),
          appId: apps[(i + j) % apps.length]!,
          componentId: 'desk',
          workflowId: 'desk',
          revision: 'seeded',
          persistence: { requested: 'redis', actual: 'redis' },
          sessionId: null,
          input: { text: `question ${i + j}` },
          blackboard: { input: { text: `question ${i + j}` } },
          start: 'classify',
          timeoutMs: 60_000,
          allowedTools: [],
        }),
      ),
    );
  }
  await index.close();
  await store.close();
}

async function dropPrefix(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}

async function measure(url: string): Promise<{ cold: Load[]; warm: Load[] }> {
  const cold: Load[] = [];
  const warm: Load[] = [];
  for (let i = 0; i < LOADS; i++) {
    const browser = await launchConsoleBrowser();
    try {
      for (const into of [cold, warm]) {
        if (into === cold) await browser.page.goto(url);
        else await browser.page.reload();
        await browser.page.locator('table.runs tbody tr a').first().waitFor({ timeout: 30_000 });
        into.push(
          await browser.page.evaluate(() => {
            const fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN;
            const rows = performance.getEntriesByName('uhlp-runs-rendered')[0]?.startTime ?? NaN;
            const api = (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).find((entry) => entry.name.includes('/api/runs?'));
            return { fcpMs: fcp, rowsMs: rows, apiMs: api !== undefined ? api.responseEnd - api.startTime : NaN };
          }),
        );
      }
    } finally {
      await browser.close();
    }
  }
  return { cold, warm };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]! * 10) / 10;
}

function assetSizes(): Array<{ file: string; bytes: number; gzipBytes: number }> {
  const dir = path.join(REPO_ROOT, 'dist', 'console-assets');
  const out: Array<{ file: string; bytes: number; gzipBytes: number }> = [];
  const walk = (relative: string): void => {
    for (const name of readdirSync(path.join(dir, relative))) {
      const file = path.posix.join(relative, name);
      if (statSync(path.join(dir, file)).isDirectory()) walk(file);
      else {
        const body = readFileSync(path.join(dir, file));
        out.push({ file: file.replace(/-[A-Za-z0-9_-]{8}\./, '.'), bytes: body.length, gzipBytes: gzipSync(body).length });
      }
    }
  };
  walk('');
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

async function main(): Promise<void> {
  const results: Record<string, { runs: number; cold: Load; warm: Load }> = {};
  for (const count of CASES) {
    const prefix = `uhlp-bench-console-${process.pid}-${count}:`;
    await dropPrefix(prefix);
    const seededAt = Date.now();
    await seed(prefix, count);
    process.stderr.write(`seeded ${count} runs in ${Date.now() - seededAt} ms\n`);
    const core = await startUhlpDev(copyFixture('console'), ['--driver', 'process'], 90_000, undefined, { UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix, UHLP_ORACLE: 'off' });
    try {
      const { cold, warm } = await measure(`${core.operatorUrl}/_uhlp/console/#/runs`);
      const summarize = (loads: Load[]): Load => ({ fcpMs: median(loads.map((l) => l.fcpMs)), rowsMs: median(loads.map((l) => l.rowsMs)), apiMs: median(loads.map((l) => l.apiMs)) });
      results[String(count)] = { runs: count, cold: summarize(cold), warm: summarize(warm) };
    } finally {
      await core.stop();
      await dropPrefix(prefix);
    }
  }
  const assets = assetSizes();
  const big = results[String(CASES[1])]!;
  const small = results[String(CASES[0])]!;
  const report = {
    loads: LOADS,
    machine: { cpus: (await import('node:os')).cpus().length },
    runsPage: results,
    ratio10kTo100: { coldRowsMs: Math.round((big.cold.rowsMs / small.cold.rowsMs) * 100) / 100, warmRowsMs: Math.round((big.warm.rowsMs / small.warm.rowsMs) * 100) / 100 },
    assets,
    assetsTotal: { bytes: assets.reduce((sum, a) => sum + a.bytes, 0), gzipBytes: assets.reduce((sum, a) => sum + a.gzipBytes, 0) },
  };
  console.log(JSON.stringify(report, null, 2));
  console.log('');
  console.log(
    table(
      Object.values(results).flatMap((result) =>
        (['cold', 'warm'] as const).map((cache) => ({
          runs: result.runs,
          cache,
          'first paint ms': result[cache].fcpMs,
          'rows on screen ms': result[cache].rowsMs,
          'api first page ms': result[cache].apiMs,
        })),
      ),
    ),
  );
  console.log('');
  console.log(table(assets.map((a) => ({ asset: a.file, bytes: a.bytes, gzip: a.gzipBytes }))));
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/bench-console-${Date.now()}.json`, JSON.stringify(report, null, 2));
}

await main();
