/**
 * What a plain HTTP → JIT turn costs the core, stage by stage: each stage run
 * alone, on the request thread, with the real module and the inputs a warm turn
 * of the dispatch benchmark gives it (`GET /bench/hello/<n>` of bench-app.ts's
 * hello app, an ambient session, no Idempotency-Key, no declared outputs, a
 * clean work tree). The stages are alternated in rounds in one process, and
 * each one's cost is the request thread's own CPU (process.threadCpuUsage) per
 * turn, the median of the rounds: the ledger thread's work is not in it, the
 * request thread's part of handing a turn over is.
 *
 *   npm run -s build && npx tsx bench/turn-stages.ts [rounds] [turns per round]
 *
 * With BEFORE=<a built worktree of another commit>, that commit's ledger thread
 * (its turn-ledger-thread.ts and dist/ledger/ledger-worker.js) is measured
 * beside this one's, alternated in the same rounds: the ledger post before/after.
 *
 * Prints a table and writes the figures as JSON (stdout's last line, and
 * bench/results/turn-stages.json). "floor" stages are made by the bare forwarder
 * too (the same HTTP server and sandbox client); "core" stages are the core's
 * own. The sandbox round trip's I/O (the client's write and read) is floor and
 * is not run here.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { AppSnapshot } from '../src/apps/app-snapshot.js';
import type { LoadedApp } from '../src/apps/app-snapshot.js';
import { loadAppDefinitions } from '../src/apps/load-app-definitions.js';
import { validateExecuteResponse, type ExecuteResponse } from '../src/contract/execute-contract.js';
import { ExecuteContextWriter } from '../src/execution/execute-context.js';
import { turnDeclaredOutputs } from '../src/execution/declared-outputs.js';
import { interpretResult } from '../src/execution/result-interpreter.js';
import { TurnWriteSurface } from '../src/execution/write-surface.js';
import { newTurnEvidence } from '../src/ledger/turn-evidence.js';
import { TurnLedgerThread } from '../src/ledger/turn-ledger-thread.js';
import { createLogger } from '../src/logger.js';
import { McpTokenService } from '../src/mcp/mcp-token-service.js';
import { createMetrics } from '../src/metrics.js';
import { createWorkTree } from '../src/sandbox/work-tree.js';
import { responseHead } from '../src/shared/http1/response-head.js';
import { HttpIngress } from '../src/sources/http/http-ingress.js';
import { httpRequestDataJson } from '../src/sources/http/http-details.js';
import { checkIdempotencyKey } from '../src/turns/idempotency.js';
import { checkTurnInputDepth } from '../src/turns/json-depth.js';
import { sessionChoiceOf, TurnKeeper, type Turn } from '../src/turns/turn-keeper.js';
import { TurnJournal } from '../src/turns/turn-journal.js';
import type { TurnEvent } from '../src/turns/turn-event.js';
import { MemorySessionStore } from '../src/state/memory-session-store.js';
import { writeHelloApp } from './lib/bench-app.js';

const [rounds = 7, perRound = 20_000] = process.argv.slice(2).map(Number);

// The hello app, loaded as the core loads it.
const defsDir = writeHelloApp('minWarm: 1, maxSize: 1, concurrency: 1');
const loaded = await loadAppDefinitions({ apps: [{ name: 'bench', dir: path.join(defsDir, 'apps', 'bench') }], badNames: [] });
if (loaded.problems.length > 0) throw new Error(JSON.stringify(loaded.problems));
const snapshot = new AppSnapshot('0123456789abcdef0123456789abcdef01234567', loaded.documents, []);
const app: LoadedApp = snapshot.apps.get('bench')!;
const component = app.components.get('hello')!;
const pool = app.pools.get(component.pool)!;
const metrics = createMetrics();
const logger = createLogger('error');

// What the load generator sends (loadThroughCore: GET with a host and no body).
const headers = { host: '127.0.0.1:8080', connection: 'keep-alive' };
const target = (i: number): string => `/bench/hello/${i}`;
const REQUEST_ID = HttpIngress.requestId({});
const resolved = snapshot.resolve(headers.host, target(1))!;
const match = app.routes.match('GET', resolved.appPath)!;
const requestDataJson = httpRequestDataJson({ method: 'GET', appPath: resolved.appPath, query: '', routePattern: match.route.pattern.source, pathParameters: match.pathParameters, headers, body: undefined });
const event: TurnEvent = { app, component, pool, requestId: REQUEST_ID, source: 'http', route: `GET ${match.route.pattern.source}`, requestDataJson, session: undefined, declaredOutputs: [] };
// What the hello script's runner answers (a warm JIT turn).
const answerText = (i: number): string =>
  `{"requestId":"${REQUEST_ID}","resultType":"generic","data":{"hello":"${i}","pid":4242},"metrics":{"execution_time_ms":0.041,"memory_used_mb":61.2}}`;

// A clean work tree, settled (the write surface's shortcut counts only a tree unchanged for 2 s).
const treeRoot = mkdtempSync(path.join(os.tmpdir(), 'uhlp-stages-'));
const { hostDir } = createWorkTree(treeRoot, 's1');
const tree = { hostDir, sandboxDir: '/work' };
const keeperNoLedger = new TurnKeeper({ store: new MemorySessionStore({ now: Date.now, assertOpen: () => undefined }), sessionTtlMs: 60_000 });
const ambient = keeperNoLedger.begin(app.id, app.document.spec.deploymentMode, undefined, { requestId: REQUEST_ID }) as Turn;
TurnWriteSurface.begin(tree, ambient.sessionId).discard();
await new Promise((resolve) => setTimeout(resolve, 2_200));

// The ledger: the real thread, async durability (the default).
const ledgerDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-stages-ledger-'));
const ledger = new TurnLedgerThread({ dataDir: ledgerDir, logger, durability: 'async' });
const keeper = new TurnKeeper({ store: new MemorySessionStore({ now: Date.now, assertOpen: () => undefined }), sessionTtlMs: 60_000, ledger, metrics });
const ledgerTurn = await keeper.begin(app.id, app.document.spec.deploymentMode, undefined, { requestId: REQUEST_ID });

// Another commit's ledger thread, for a before/after in one run.
const beforeRoot = process.env.BEFORE;
const before =
  beforeRoot === undefined
    ? undefined
    : await (async () => {
        const module = (await import(path.resolve(beforeRoot, 'src/ledger/turn-ledger-thread.ts'))) as { TurnLedgerThread: typeof TurnLedgerThread };
        const thread = new module.TurnLedgerThread({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'uhlp-stages-before-')), logger, durability: 'async', entry: path.resolve(beforeRoot, 'dist/ledger/ledger-worker.js') });
        const beforeKeeper = new TurnKeeper({ store: new MemorySessionStore({ now: Date.now, assertOpen: () => undefined }), sessionTtlMs: 60_000, ledger: thread, metrics });
        const turn = await beforeKeeper.begin(app.id, app.document.spec.deploymentMode, undefined, { requestId: REQUEST_ID });
        return { thread: thread as unknown as TurnLedgerThread, keeper: beforeKeeper, turn };
      })();

const tokens = new McpTokenService();
const contexts = new ExecuteContextWriter();
const journal = new TurnJournal({ size: 1000, core: 'core-1' });

// The answer's socket: a TCP connection whose reader is another thread, as a client's is another process.
const sink = new Worker(
  `const net = require('node:net'); const { parentPort } = require('node:worker_threads');
   const server = net.createServer((s) => s.on('data', () => {})).listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
  { eval: true },
);
const sinkPort = await new Promise<number>((resolve) => sink.once('message', resolve));
const socket = net.connect(sinkPort, '127.0.0.1');
await new Promise((resolve) => socket.once('connect', resolve));

interface Stage {
  readonly name: string;
  readonly module: string;
  /** Made by the bare forwarder too. */
  readonly floor: boolean;
  /** One turn's worth; may return a promise (then awaited, its wait not counted as CPU). */
  run(i: number): unknown;
}

const stages: Stage[] = [
  {
    name: 'request id (X-Request-ID absent: a UUID)',
    module: 'sources/http/http-ingress.ts requestId()',
    floor: false,
    run: () => HttpIngress.requestId(headers),
  },
  {
    name: 'routing: app by host/prefix, route match, routing metric',
    module: 'apps/app-snapshot.ts resolve(), route-table.ts match()',
    floor: false,
    run: (i) => {
      const arrived = performance.now();
      const r = snapshot.resolve(headers.host, target(i))!;
      const m = r.app.routes.match('GET', r.appPath)!;
      metrics.routingSeconds.labels(r.app.id).observe((performance.now() - arrived) / 1000);
      return m;
    },
  },
  {
    name: 'turn event: request JSON, session choice, declared outputs, key check, depth check',
    module: 'sources/http/http-details.ts httpRequestDataJson(), turns/json-depth.ts',
    floor: false,
    run: (i) => {
      const json = httpRequestDataJson({ method: 'GET', appPath: `/hello/${i}`, query: '', routePattern: match.route.pattern.source, pathParameters: { name: String(i) }, headers, body: undefined });
      checkIdempotencyKey(undefined);
      sessionChoiceOf(headers);
      turnDeclaredOutputs(component.declaredOutputs, undefined);
      checkTurnInputDepth(json);
      return json;
    },
  },
  {
    name: 'session: the ambient turn',
    module: 'turns/turn-keeper.ts begin()',
    floor: false,
    run: () => keeperNoLedger.begin(app.id, app.document.spec.deploymentMode, undefined, { requestId: REQUEST_ID, policy: app.document.spec.ledger }),
  },
  {
    name: 'MCP token: mint and revoke',
    module: 'mcp/mcp-token-service.ts mint(), revoke()',
    floor: false,
    run: () => {
      const token = tokens.mint(
        { appId: app.id, componentId: component.id, requestId: REQUEST_ID, revision: app.revision, capabilities: app.document.spec.capabilities ?? {}, configuration: app.document.spec.configuration ?? {} },
        15_000,
      );
      return tokens.revoke(token)?.calls.snapshot();
    },
  },
  {
    name: 'sandbox request: context JSON and /execute body',
    module: 'execution/execute-context.ts json(), sandbox-execution.ts',
    floor: false,
    run: () => {
      const context = contexts.json(app, component, { mcpEndpoint: 'http://127.0.0.1:8080/mcp', timeoutMs: 5000, sessionId: ambient.sessionId, turnNumber: 7, mcpToken: 'tok_0123456789abcdef0123456789abcdef' });
      return `{"requestId":${JSON.stringify(REQUEST_ID)},"requestData":${requestDataJson},"context":${context}}`;
    },
  },
  {
    name: 'write surface: begin, the clean walk, discard',
    module: 'execution/write-surface.ts, shared/work-tree-walk.ts',
    floor: false,
    run: () => {
      const surface = TurnWriteSurface.begin(tree, ambient.sessionId);
      const check = surface.check([]);
      if (check instanceof Promise) throw new Error('the clean walk took the slow path');
      return surface.discard();
    },
  },
  {
    name: 'answer: JSON.parse, contract validation, result mapping',
    module: 'execution/component-executor.ts parseResponse(), contract/execute-contract.ts, result-interpreter.ts',
    floor: false,
    run: (i) => {
      const value = JSON.parse(answerText(i)) as ExecuteResponse;
      if (validateExecuteResponse(value) !== undefined) throw new Error('invalid answer');
      return interpretResult(value, REQUEST_ID);
    },
  },
  {
    name: 'journal: open, answered',
    module: 'turns/turn-journal.ts',
    floor: false,
    run: () => {
      const draft = journal.open(event);
      journal.answered(draft, { status: 200, headers: {}, body: '' });
    },
  },
  {
    name: 'metrics: acquire, execute, turn, requests',
    module: 'metrics.ts (hot-histogram.ts, prom-client Counter)',
    floor: false,
    run: () => {
      metrics.sandboxAcquireSeconds.labels(app.id, pool.name, 'hit').observe(0.00001);
      metrics.sandboxExecuteSeconds.labels(app.id, pool.name, 'ok').observe(0.0003);
      metrics.turnSeconds.labels(app.id, component.id, 'ok').observe(0.0004);
      metrics.requests.inc({ app: app.id, route: match.route.pattern.source, status: '200' });
    },
  },
  {
    name: 'ledger post, back to back (c16: batches of 256)',
    module: 'turns/turn-keeper.ts record(), ledger/turn-ledger-thread.ts',
    floor: false,
    run: (i) => keeper.record(ledgerTurn, requestDataJson, { status: 'ok', answerJson: answerText(i), evidence: newTurnEvidence() }),
  },
  ...(before === undefined
    ? []
    : [
        {
          name: 'ledger post, back to back (c16), BEFORE',
          module: `${beforeRoot}: turn-ledger-thread.ts`,
          floor: false,
          run: (i: number) => before.keeper.record(before.turn, requestDataJson, { status: 'ok', answerJson: answerText(i), evidence: newTurnEvidence() }),
        },
      ]),
  {
    name: 'answer write: head and body, one TCP write',
    module: 'shared/http1/response-head.ts, http1-server.ts',
    floor: true,
    run: (i) => {
      const body = `{"hello":"${i}","pid":4242}`;
      const head = responseHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': REQUEST_ID }, { contentLength: Buffer.byteLength(body), close: false, http10KeepAlive: false });
      socket.write(head + body);
    },
  },
];

/**
 * The ledger post as a c1 turn makes it: the turns of one batch delay (5 ms at
 * about 0.5 ms a turn: 10), handed to a thread that went idle meanwhile (12 ms
 * apart, so a ring's reader is asleep and the first turn wakes it; a post always
 * wakes the thread's event loop). Only the request thread's synchronous part is
 * timed: the records and, for a batched thread, the post its timer would make.
 */
const pacedLedger = {
  name: 'ledger post, c1: 10 turns, then the thread idle',
  module: 'turns/turn-keeper.ts record(), ledger/turn-ledger-thread.ts',
  floor: false,
};
const PACED_BATCHES = 40;
const PER_BATCH = 10;
const idle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 12));

function cpuUs(): number {
  const { user, system } = process.threadCpuUsage();
  return user + system;
}

async function measure(stage: Stage, turns: number): Promise<number> {
  const from = cpuUs();
  for (let i = 0; i < turns; i++) {
    const result = stage.run(i);
    if (result instanceof Promise) await result;
  }
  return (cpuUs() - from) / turns;
}

async function measurePaced(on: { keeper: TurnKeeper; turn: Turn; thread: TurnLedgerThread }): Promise<number> {
  let used = 0;
  for (let batch = 0; batch < PACED_BATCHES; batch++) {
    const from = cpuUs();
    for (let i = 0; i < PER_BATCH; i++) on.keeper.record(on.turn, requestDataJson, { status: 'ok', answerJson: answerText(i), evidence: newTurnEvidence() });
    // A batching thread's timer would post now; a ring has nothing to flush (flush() is then a no-op).
    (on.thread as unknown as { flush(): void }).flush();
    used += cpuUs() - from;
    await idle();
  }
  return used / (PACED_BATCHES * PER_BATCH);
}

// Warm-up: every stage compiled and its caches made.
for (const stage of stages) await measure(stage, Math.min(perRound, 5_000));
const now = { keeper, turn: ledgerTurn, thread: ledger };
await measurePaced(now);
const pacedBefore = { ...pacedLedger, name: `${pacedLedger.name}, BEFORE`, module: `${beforeRoot}: turn-ledger-thread.ts` };
if (before !== undefined) await measurePaced(before);

const samples = new Map<string, number[]>(stages.map((stage) => [stage.name, []]));
samples.set(pacedLedger.name, []);
samples.set(pacedBefore.name, []);
for (let round = 0; round < rounds; round++) {
  for (const stage of stages) samples.get(stage.name)!.push(await measure(stage, perRound));
  // The paced post less the same loop's own timers.
  samples.get(pacedLedger.name)!.push(await measurePaced(now));
  if (before !== undefined) samples.get(pacedBefore.name)!.push(await measurePaced(before));
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rows = [...stages, pacedLedger, ...(before !== undefined ? [pacedBefore] : [])].map((stage) => ({ stage: stage.name, module: stage.module, floor: stage.floor, cpuUsPerTurn: Math.round(median(samples.get(stage.name)!) * 100) / 100 }));
const own = (name: string): boolean => !name.startsWith('ledger post') && !name.startsWith('answer write');
const coreSum = rows.filter((row) => !row.floor && own(row.stage) && !row.stage.endsWith('BEFORE')).reduce((sum, row) => sum + row.cpuUsPerTurn, 0);
const ledgerC1 = rows.find((row) => row.stage === pacedLedger.name)!.cpuUsPerTurn;
const ledgerC16 = rows.find((row) => row.stage.startsWith('ledger post, back'))!.cpuUsPerTurn;
const summary = {
  rounds,
  turnsPerRound: perRound,
  node: process.version,
  loadAverage: os.loadavg()[0],
  rows,
  coreOwnUsPerTurnC1: Math.round((coreSum + ledgerC1) * 100) / 100,
  coreOwnUsPerTurnC16: Math.round((coreSum + ledgerC16) * 100) / 100,
};

const width = Math.max(...rows.map((row) => row.stage.length));
for (const row of rows) console.log(`${row.stage.padEnd(width)}  ${row.floor ? 'floor' : 'core '}  ${row.cpuUsPerTurn.toFixed(2).padStart(7)} µs  ${row.module}`);
console.log(`${'core stages, c1 (paced ledger post)'.padEnd(width)}         ${summary.coreOwnUsPerTurnC1.toFixed(2).padStart(7)} µs`);
console.log(`${'core stages, c16 (batched ledger post)'.padEnd(width)}         ${summary.coreOwnUsPerTurnC16.toFixed(2).padStart(7)} µs`);
mkdirSync(path.join('bench', 'results'), { recursive: true });
writeFileSync(path.join('bench', 'results', 'turn-stages.json'), `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify(summary));

socket.destroy();
await sink.terminate();
await ledger.close();
await before?.thread.close();
