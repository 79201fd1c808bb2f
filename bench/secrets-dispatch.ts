/**
 * A web credential's cost (BENCH_ONLY=secrets of bench/run.ts): a warm JIT call
 * whose script makes one `tool.web.fetch` to a loopback API that the core adds
 * a bearer token to (capabilities.web.inject, from the app's secrets file),
 * beside the same call to a path no credential matches. One core, one warm
 * sandbox, the two paths measured in turn in every round.
 *
 *   npm run -s build && BENCH_ONLY=secrets BENCH_SECONDS=5 npx tsx bench/run.ts
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { writeBenchApp } from './lib/bench-app.js';
import { runLoad, table, type LoadResult } from './lib/load.js';
import { median, round3 } from './lib/numbers.js';

export interface SecretsBenchRow {
  readonly path: 'injected' | 'plain';
  readonly round: number;
  readonly result: LoadResult;
}

export interface SecretsBenchReport {
  readonly rows: SecretsBenchRow[];
  /** Injected minus plain, medians over rounds, ms. */
  readonly injectionAddedMs: { p50: number; p99: number };
}

const TOKEN = 'bench-token-0123456789';

export async function benchSecrets(durationMs: number, rounds: number): Promise<SecretsBenchReport> {
  const api = http.createServer((req, res) => {
    const ok = req.url?.startsWith('/plain/') === true || req.headers.authorization === `Bearer ${TOKEN}`;
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(ok ? '{"ok":true}' : '{"ok":false}');
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const port = (api.address() as AddressInfo).port;
  const dir = writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools: [{ name: p, minWarm: 1, maxSize: 1 }]
  components: [{ id: call, handler: JIT, pool: p, jit: { script: scripts/call.mjs, function: call } }]
  routes: [{ http: { method: GET, path: "/call/:kind" }, component: call }]
  secrets: [{ name: api }]
  capabilities:
    web:
      allowHosts: [127.0.0.1]
      allowPrivate: ["127.0.0.1:${port}"]
      inject: [{ url: "http://127.0.0.1:${port}/v1/", header: Authorization, scheme: bearer, secretRef: { name: api, key: token } }]
`,
    {
      'scripts/call.mjs': `export async function call(event, ctx) {
  const kind = event.httpDetails.pathParameters.kind;
  const answer = await ctx.tools.call('tool.web.fetch', { url: 'http://127.0.0.1:${port}/' + (kind === 'injected' ? 'v1' : 'plain') + '/x' });
  return { status: answer.status };
}
`,
    },
  );
  // Outside the definitions directory, which the core commits: a secrets file is never in Git.
  const secrets = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-secrets-')), 'secrets.yaml');
  writeFileSync(secrets, `apps:\n  bench:\n    api: { token: ${TOKEN} }\n`);
  const core = await startUhlpDev(path.join(dir), [], 60_000, undefined, { UHLP_SECRETS_FILE: secrets });
  const rows: SecretsBenchRow[] = [];
  try {
    const send = (kind: 'injected' | 'plain') => async (): Promise<boolean> => {
      const response = await fetch(`${core.url}/bench/call/${kind}`);
      const body = (await response.json()) as { status?: number };
      return response.status === 200 && body.status === 200;
    };
    for (const kind of ['injected', 'plain'] as const) await runLoad(send(kind), 1, 1000);
    for (let round = 0; round < rounds; round++) {
      for (const kind of ['injected', 'plain'] as const) rows.push({ path: kind, round, result: await runLoad(send(kind), 1, durationMs) });
    }
  } finally {
    await core.stop();
    await new Promise((resolve) => api.close(resolve));
  }
  const of = (kind: string, field: 'p50Ms' | 'p99Ms'): number => median(rows.filter((row) => row.path === kind).map((row) => row.result[field]));
  return { rows, injectionAddedMs: { p50: round3(of('injected', 'p50Ms') - of('plain', 'p50Ms')), p99: round3(of('injected', 'p99Ms') - of('plain', 'p99Ms')) } };
}

export function secretsBenchTable(report: SecretsBenchReport): string {
  return (
    `${table(report.rows.map((row) => ({ path: row.path, round: row.round, 'calls/s': row.result.rps, 'p50 ms': row.result.p50Ms, 'p99 ms': row.result.p99Ms, errors: row.result.errors })))}\n\n` +
    `injected - plain (medians over rounds): p50 ${signed(report.injectionAddedMs.p50)} ms, p99 ${signed(report.injectionAddedMs.p99)} ms\n`
  );
}

function signed(value: number): string {
  return value >= 0 ? `+${value}` : `${value}`;
}
