/**
 * The python runner (BENCH_ONLY=python), on process sandboxes (bubblewrap), side by side:
 *
 * - a warm call: the same work as a Python script (python runner) and as a Node
 *   script (jit-runner), each POST /execute straight to its runner, interleaved in
 *   blocks of 100 so both see the same machine;
 * - a pool miss: a python sandbox created and its first answer (what a request
 *   that finds no warm sandbox waits for), beside a bare Python start (python3
 *   doing the same work and printing it, no sandbox, no runner), the same
 *   interpreter started in the same bubblewrap sandbox with no runner (what the
 *   sandbox adds), and a Node pool miss of the jit-runner for reference.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ExecuteRequest } from '../src/contract/execute-contract.js';
import { DEFAULT_PYTHON_PATH, IMAGE_PYTHON_PATH, PYTHON_FLAGS } from '../src/images/python-runtime.js';
import { prepareProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { SandboxClient } from '../src/sandbox/sandbox-client.js';
import type { SandboxDriver } from '../src/sandbox/sandbox-driver.js';
import { poolSpec } from '../test/helpers/pool-spec.js';
import { makeProcessDriver } from '../test/helpers/process-driver.js';
import type { Percentiles } from './csjs-dispatch.js';

const REVISION = 'b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0';
/** The work: a small order priced line by line, answered as JSON (what a JIT component typically does). */
const PYTHON_SOURCE = `def quote(event, ctx):
    items = event["triggerDetails"]["payload"]["items"]
    lines = [{"item": name, "count": count, "amount": round(count * 0.25 * (index + 1), 2)} for index, (name, count) in enumerate(sorted(items.items()))]
    return {"lines": lines, "total": round(sum(line["amount"] for line in lines), 2)}
`;
const NODE_SOURCE = `export function quote(event) {
  const items = event.triggerDetails.payload.items;
  const lines = Object.entries(items).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([item, count], index) => ({ item, count, amount: Math.round(count * 0.25 * (index + 1) * 100) / 100 }));
  return { lines, total: Math.round(lines.reduce((sum, line) => sum + line.amount, 0) * 100) / 100 };
}
`;
const ITEMS = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`item-${String(i).padStart(2, '0')}`, i + 1]));
/** The same work for a bare interpreter: no event, no runner, printed. */
const BARE_PYTHON = `import json\nitems = ${JSON.stringify(ITEMS)}\n${PYTHON_SOURCE}print(json.dumps(quote({"triggerDetails": {"payload": {"items": items}}}, None)))`;

export interface PythonBench {
  readonly warm: { readonly python: Percentiles; readonly node: Percentiles; readonly ratioP50: number; readonly ratioP99: number };
  readonly miss: {
    readonly pythonPoolMiss: Percentiles;
    readonly barePython: Percentiles;
    readonly barePythonInSandbox: Percentiles;
    readonly nodePoolMiss: Percentiles;
    readonly ratioP50: number;
  };
}

function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), mean: round(sorted.reduce((s, v) => s + v, 0) / sorted.length) };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function body(requestId: string, script: string): string {
  const request: ExecuteRequest = {
    requestId,
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'bench', triggerEvent: 'quote', payload: { items: ITEMS } } },
    context: {
      appId: 'bench',
      componentId: 'quote',
      mcp_endpoint: 'http://127.0.0.1:1/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'production' },
      taskDetails: { handler: 'JIT', revision: REVISION, script, function: 'quote' },
    },
  };
  return JSON.stringify(request);
}

async function timed(client: SandboxClient, requestId: string, text: string): Promise<number> {
  const started = performance.now();
  const raw = await client.execute(text, requestId, 5000);
  const elapsed = performance.now() - started;
  const answer = JSON.parse(raw.body.toString('utf8')) as { resultType: string; data: { total?: number } };
  if (raw.status !== 200 || answer.resultType !== 'generic' || answer.data.total !== 717.5) throw new Error(`unexpected answer: ${raw.body.toString('utf8').slice(0, 300)}`);
  return elapsed;
}

/** A sandbox made and its first answer: what a request that finds no warm sandbox waits for. */
async function poolMiss(driver: SandboxDriver, definitionsRoot: string, runner: 'python' | 'jit', script: string, id: string): Promise<number> {
  const started = performance.now();
  const handle = await driver.create({ appId: 'bench', pool: poolSpec({ name: runner, runner, limits: { memoryMb: 128, cpus: 1, timeoutMs: 5000 } }), definitionsRoot, labels: {} });
  const client = new SandboxClient(handle.endpoint);
  try {
    await timed(client, id, body(id, script));
    return performance.now() - started;
  } finally {
    client.close();
    await driver.destroy(handle, 'shutdown');
  }
}

/** Runs `file args`, writing `fd3` to its fd 3 when given; resolves with the time to its exit, checking what it printed. */
function timedRun(file: string, args: readonly string[], fd3?: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe', fd3 ? 'pipe' : 'ignore'], env: {} });
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    if (fd3) (child.stdio[3] as NodeJS.WritableStream).end(fd3);
    child.once('exit', (code) => {
      const elapsed = performance.now() - started;
      if (code !== 0 || !out.includes('"total": 717.5')) reject(new Error(`bare start failed (${code}): ${err.slice(0, 300)}`));
      else resolve(elapsed);
    });
  });
}

export async function benchPython(options: { warmCalls: number; misses: number }): Promise<PythonBench> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-python-'));
  const definitions = path.join(dataDir, 'definitions');
  mkdirSync(path.join(definitions, REVISION, 'scripts'), { recursive: true });
  writeFileSync(path.join(definitions, REVISION, 'scripts', 'quote.py'), PYTHON_SOURCE);
  writeFileSync(path.join(definitions, REVISION, 'scripts', 'quote.mjs'), NODE_SOURCE);
  const driver = await makeProcessDriver({ dataDir });
  const limits = { memoryMb: 256, cpus: 1, timeoutMs: 5000 };
  const pythonHandle = await driver.create({ appId: 'bench', pool: poolSpec({ name: 'py', runner: 'python', limits }), definitionsRoot: definitions, labels: {} });
  const nodeHandle = await driver.create({ appId: 'bench', pool: poolSpec({ name: 'node', runner: 'jit', limits }), definitionsRoot: definitions, labels: {} });
  const python = new SandboxClient(pythonHandle.endpoint);
  const node = new SandboxClient(nodeHandle.endpoint);
  try {
    // Warm both: the script loaded, the connections open, the code paths run.
    for (let i = 0; i < 200; i++) {
      await timed(python, `wp${i}`, body(`wp${i}`, 'scripts/quote.py'));
      await timed(node, `wn${i}`, body(`wn${i}`, 'scripts/quote.mjs'));
    }
    const pythonSamples: number[] = [];
    const nodeSamples: number[] = [];
    for (let block = 0; block < options.warmCalls / 100; block++) {
      for (let i = 0; i < 100; i++) pythonSamples.push(await timed(python, `p${block}-${i}`, body(`p${block}-${i}`, 'scripts/quote.py')));
      for (let i = 0; i < 100; i++) nodeSamples.push(await timed(node, `n${block}-${i}`, body(`n${block}-${i}`, 'scripts/quote.mjs')));
    }
    python.close();
    node.close();
    await driver.destroy(pythonHandle, 'shutdown');
    await driver.destroy(nodeHandle, 'shutdown');

    // The same bubblewrap sandbox with the interpreter alone: the runner's command cut before its program.
    const sandbox = await prepareProcessSandbox({ stateDir: path.join(dataDir, 'runtime') });
    const bareDirs = { socketDir: mkdtempSync(path.join(dataDir, 's-')), definitionsDir: definitions, workDir: mkdtempSync(path.join(dataDir, 'w-')) };
    const launch = sandbox.launch({ ...bareDirs, runner: 'python', memoryMb: 128, concurrency: 1, niceness: 0 });
    const interpreterAt = launch.args.indexOf(IMAGE_PYTHON_PATH, launch.args.indexOf('--'));
    const bareInSandbox = [...launch.args.slice(0, interpreterAt + 1), ...PYTHON_FLAGS, '-c', BARE_PYTHON];

    const samples = { pythonPoolMiss: [] as number[], barePython: [] as number[], barePythonInSandbox: [] as number[], nodePoolMiss: [] as number[] };
    for (let i = 0; i < options.misses; i++) {
      samples.pythonPoolMiss.push(await poolMiss(driver, definitions, 'python', 'scripts/quote.py', `mp${i}`));
      samples.barePython.push(await timedRun(DEFAULT_PYTHON_PATH, [...PYTHON_FLAGS, '-c', BARE_PYTHON]));
      samples.barePythonInSandbox.push(await timedRun(launch.file, bareInSandbox, launch.fd3));
      samples.nodePoolMiss.push(await poolMiss(driver, definitions, 'jit', 'scripts/quote.mjs', `mn${i}`));
    }
    const pythonP = percentiles(pythonSamples);
    const nodeP = percentiles(nodeSamples);
    const miss = {
      pythonPoolMiss: percentiles(samples.pythonPoolMiss),
      barePython: percentiles(samples.barePython),
      barePythonInSandbox: percentiles(samples.barePythonInSandbox),
      nodePoolMiss: percentiles(samples.nodePoolMiss),
    };
    return {
      warm: { python: pythonP, node: nodeP, ratioP50: round(pythonP.p50 / nodeP.p50), ratioP99: round(pythonP.p99 / nodeP.p99) },
      miss: { ...miss, ratioP50: round(miss.pythonPoolMiss.p50 / miss.barePython.p50) },
    };
  } finally {
    python.close();
    node.close();
    await driver.close();
  }
}

export function pythonTable(result: PythonBench): string {
  const row = (name: string, p: Percentiles): string => `${name.padEnd(52)} p50 ${p.p50.toFixed(3).padStart(8)} ms  p99 ${p.p99.toFixed(3).padStart(8)} ms  (n=${p.n})`;
  return [
    row('warm call, Python script (python runner)', result.warm.python),
    row('warm call, the same work in Node (jit-runner)', result.warm.node),
    `${'Python / Node'.padEnd(52)} p50 x${result.warm.ratioP50}  p99 x${result.warm.ratioP99}`,
    row('pool miss: python sandbox made + first answer', result.miss.pythonPoolMiss),
    row('bare Python start: python3 -c, the same work', result.miss.barePython),
    row('  the same in the bubblewrap sandbox, no runner', result.miss.barePythonInSandbox),
    row('pool miss: jit-runner sandbox + first answer', result.miss.nodePoolMiss),
    `${'python pool miss / bare Python start'.padEnd(52)} p50 x${result.miss.ratioP50}`,
  ].join('\n');
}
