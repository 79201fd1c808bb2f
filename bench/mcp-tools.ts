/**
 * MCP tool calls through `uhlp dev`, side by side in one run: `core.kv.get` by
 * the runner's one-POST client (what `ctx.tools.call` does, on 2026-07-28) and by
 * the official SDK v2 client on the same revision, and `core.linux.executeCommand ["true"]` through the endpoint
 * spine and the std-body host. One connection each, back to back.
 *
 *   npm run -s build && BENCH_SECONDS=5 npx tsx bench/mcp-tools.ts
 */
import os from 'node:os';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ExecutionTools } from '../src/runners/kit/tools-client.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { writeBenchApp } from './lib/bench-app.js';
import { runLoad, table, type LoadResult } from './lib/load.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);

function benchApp(): string {
  return writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools: [{ name: p, minWarm: 0, maxSize: 1 }]
  components: [{ id: noop, handler: JIT, pool: p, jit: { script: scripts/noop.mjs } }]
  capabilities:
    kv: { prefixes: ["b:"], ops: [get] }
    shell: { allow: [["true"]] }
`,
    { 'scripts/noop.mjs': 'export default () => null;\n' },
  );
}

const core = await startUhlpDev(benchApp());
const rows: Array<{ path: string; result: LoadResult }> = [];
try {
  const minted = (await (
    await fetch(`${core.operatorUrl}/_uhlp/dev/mcp-token`, { method: 'POST', body: JSON.stringify({ appId: 'bench' }), headers: { 'content-type': 'application/json' } })
  ).json()) as { mcp_url: string; token: string };

  const direct = new ExecutionTools({ endpoint: minted.mcp_url, token: minted.token });
  const sdk = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await sdk.connect(new StreamableHTTPClientTransport(new URL(minted.mcp_url), { requestInit: { headers: { Authorization: `Bearer ${minted.token}` } } }));

  const kvGet = { key: 'b:x' };
  // Warm both paths (JIT, connections) before anything is measured.
  await runLoad(async () => (await direct.call('core.kv.get', kvGet))['value'] === null, 1, 1000);
  await runLoad(async () => (await sdk.callTool({ name: 'core.kv.get', arguments: kvGet })).isError !== true, 1, 1000);
  rows.push({ path: 'kv.get ctx.tools (1 POST)', result: await runLoad(async () => (await direct.call('core.kv.get', kvGet))['value'] === null, 1, seconds * 1000) });
  rows.push({
    path: 'kv.get official SDK v2 client',
    result: await runLoad(async () => (await sdk.callTool({ name: 'core.kv.get', arguments: kvGet })).isError !== true, 1, seconds * 1000),
  });
  rows.push({
    path: 'shell ["true"] via spine',
    result: await runLoad(async () => (await direct.call('core.linux.executeCommand', { argv: ['true'] }))['outcome'] === 'applied', 1, seconds * 1000),
  });
  await sdk.close();
} finally {
  await core.stop();
}

const [raw, official] = [rows[0]!.result, rows[1]!.result];
process.stdout.write(`${JSON.stringify({ node: process.version, cpus: os.cpus().length, seconds, rows })}\n\n`);
process.stdout.write(
  `${table(rows.map((r) => ({ path: r.path, 'calls/s': r.result.rps, 'p50 ms': r.result.p50Ms, 'p99 ms': r.result.p99Ms, errors: r.result.errors })))}\n\n` +
    `official SDK / ctx.tools on kv.get: p50 x${Math.round((official.p50Ms / raw.p50Ms) * 100) / 100}, calls/s x${Math.round((official.rps / raw.rps) * 100) / 100}\n`,
);
