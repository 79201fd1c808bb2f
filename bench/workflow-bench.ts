/**
 * Workflows (BENCH_ONLY=workflow), in one core started by `uhlp dev`:
 *
 * 1. Engine overhead per step: a workflow of 20 no-op JIT steps (each one a
 *    `core.component.invoke` through the core's pipeline plus a checkpoint)
 *    beside 20 direct HTTP calls of the same JIT component through the core,
 *    one after the other, BENCH_WORKFLOW_RUNS times each, interleaved. The
 *    overhead per step is (workflow p50 - 20 direct calls p50) / 20.
 *    Its floor, interleaved with both: a JIT script that makes 20 MCP calls
 *    of the cheapest core tool (core.framework.getConfigValue) in one call
 *    through the core. A step is one MCP call from the orchestrator that runs
 *    the JIT component, so one MCP round trip from a sandbox is what a step
 *    costs at least over a direct call; what is above it is the engine's.
 * 2. Time to first streamed byte: a one-agent workflow whose agent streams,
 *    asked with `Accept: text/event-stream`, until the first NODE_STREAM
 *    event, beside the provider's own time to its first chunk. The provider
 *    (a local OpenAI-compatible server) sends its first chunk at once and the
 *    rest over STREAM_MS, so a first byte that waited for the end would show.
 *    Each run through the core comes after the provider's own answer (the
 *    core and its sandboxes idle for STREAM_MS), and once more right after a
 *    run (no idle gap): a process woken after a while idle pays more per hop
 *    on a shared machine, whatever runs in it. Its floor, interleaved: the
 *    same hops between bare processes (bench/lib/bare-stream-relay.ts:
 *    client, a front in the core's place, a brain in the orchestrator's that
 *    asks the front for the completion, the provider). BENCH_WORKFLOW_BEFORE=<tree>
 *    runs that tree's core (built) as well, its runs interleaved with this
 *    tree's one by one, for a before/after of the first byte in one run.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { startBareStreamRelay } from './lib/bare-stream-relay.js';
import { writeBenchApp } from './lib/bench-app.js';
import { processTreeCpu } from './lib/process-cpu.js';
import { round3 } from './lib/numbers.js';

const STEPS = 20;
const STREAM_CHUNKS = 20;
const STREAM_MS = 400;

export interface WorkflowBenchResult {
  readonly runs: number;
  readonly workflow20: Percentiles;
  readonly direct20: Percentiles;
  /** (workflow p50 - direct p50) / 20, ms. */
  readonly perStepOverheadP50Ms: number;
  /** A JIT step's own time as the trace records it (core.component.invoke), ms: the rest of a step is the checkpoint and the engine. */
  readonly jitStepInTrace: Percentiles;
  /**
   * CPU per step, ms, of the core process and of its sandboxes (the orchestrator
   * and the JIT runner): in the workflow, in the direct calls, and what the
   * workflow adds per step (both together). Steadier than latency on a shared machine.
   */
  readonly cpuPerStep: { readonly workflow: CpuSplit; readonly direct: CpuSplit; readonly overheadMs: number };
  /** The floor: 20 MCP calls from a JIT script in one call through the core. */
  readonly mcp20: Percentiles;
  /** One MCP call from a sandbox, ms: latency ((mcp20 p50 - direct p50 / 20) / 20) and CPU of the core and its sandboxes. */
  readonly mcpCall: { readonly p50Ms: number; readonly cpuMs: number };
  /** What the engine adds per step above one MCP call, ms: latency p50 and CPU. */
  readonly aboveMcpFloor: { readonly p50Ms: number; readonly cpuMs: number };
  readonly firstByte: {
    readonly provider: Percentiles;
    readonly throughCore: Percentiles;
    readonly providerWholeAnswer: Percentiles;
    /** The same request right after a streamed run through the core ended: no idle gap. */
    readonly throughCoreBackToBack?: Percentiles;
    /** The floor: the same hops between bare processes, interleaved with the core's runs. */
    readonly bareRelay?: { readonly afterIdle: Percentiles; readonly backToBack: Percentiles };
    /** BENCH_WORKFLOW_BEFORE's core, its runs interleaved with these. */
    readonly before?: { readonly throughCore: Percentiles; readonly throughCoreBackToBack: Percentiles };
  };
}

interface CpuSplit {
  readonly core: number;
  readonly sandboxes: number;
}

interface Percentiles {
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly minMs: number;
}

function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 1000) / 1000;
  return { p50Ms: at(0.5), p90Ms: at(0.9), minMs: at(0) };
}

function benchApp(): string {
  const nodes = Array.from({ length: STEPS }, (_, i) => `  s${i}: { type: jit, component: noop, inputs_map: { n: input.n }, output: out.s${i}, next: ${i + 1 < STEPS ? `s${i + 1}` : 'done'} }`).join('\n');
  return writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools:
    - { name: brain, runner: llm, minWarm: 1, maxSize: 1, maxUses: 100000000, limits: { timeoutMs: 30000 } }
    - { name: main, minWarm: 1, maxSize: 1, maxUses: 100000000, limits: { timeoutMs: 5000 } }
  components:
    - { id: noop, handler: JIT, pool: main, jit: { script: scripts/noop.mjs, function: noop } }
    - { id: mcp20, handler: JIT, pool: main, jit: { script: scripts/noop.mjs, function: mcp20 } }
    - { id: steps, handler: WORKFLOW, pool: brain, workflow: { workflowId: steps } }
    - { id: streamed, handler: WORKFLOW, pool: brain, workflow: { workflowId: streamed } }
  routes:
    - { http: { method: POST, path: /noop }, component: noop }
    - { http: { method: POST, path: /mcp20 }, component: mcp20 }
    - { http: { method: POST, path: /steps }, component: steps }
    - { http: { method: POST, path: /streamed }, component: streamed }
  capabilities:
    llm: { models: [small], maxTokens: 64 }
`,
    {
      'scripts/noop.mjs': `export const noop = () => null;\nexport const mcp20 = async (_event, ctx) => {\n  for (let i = 0; i < ${STEPS}; i++) await ctx.tools.call('core.framework.getConfigValue', { key: 'k' });\n  return null;\n};\n`,
      'workflows/steps.yaml': `start: s0\nnodes:\n${nodes}\n  done: { type: end, output: out.s0 }\n`,
      'workflows/streamed.yaml': 'start: say\nnodes:\n  say: { type: agent, prompt: prompts/say.njk, output: said, stream: default, next: done }\n  done: { type: end, output: said }\n',
      'prompts/say.njk': 'Say something.\n',
    },
  );
}

/** An OpenAI-compatible server whose streamed answer comes as a first chunk at once, then the rest over STREAM_MS. */
async function slowStreamServer(): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const streamed = (JSON.parse(body || '{}') as { stream?: boolean }).stream === true;
      const piece = (content: string, finish: string | null = null): string =>
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'small', choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;
      if (!streamed) {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 0, model: 'small', choices: [{ index: 0, message: { role: 'assistant', content: 'word '.repeat(STREAM_CHUNKS) }, finish_reason: 'stop' }] }));
        }, STREAM_MS);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(piece('word '));
      let sent = 1;
      const timer = setInterval(() => {
        if (sent++ < STREAM_CHUNKS) {
          res.write(piece('word '));
          return;
        }
        clearInterval(timer);
        res.end(`${piece('', 'stop')}data: [DONE]\n\n`);
      }, STREAM_MS / STREAM_CHUNKS);
      res.on('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** ms until `predicate` holds of the text received so far, then the rest is read. */
async function timeToFirst(url: string, init: RequestInit, predicate: (text: string) => boolean): Promise<{ first: number; whole: number }> {
  const started = performance.now();
  const response = await fetch(url, init);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let first = -1;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (first < 0 && predicate(text)) first = performance.now() - started;
  }
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return { first, whole: performance.now() - started };
}

export async function benchWorkflow(runs: number): Promise<WorkflowBenchResult> {
  const provider = await slowStreamServer();
  const coreEnv = { UHLP_LLM_BASE_URL: provider.baseUrl, UHLP_LLM_MAX_RETRIES: '0' };
  const core = await startUhlpDev(benchApp(), ['--log-level', 'error'], 60_000, undefined, coreEnv);
  const relay = await startBareStreamRelay(provider.baseUrl);
  const beforeTree = process.env.BENCH_WORKFLOW_BEFORE;
  const beforeCore = beforeTree !== undefined ? await startUhlpDev(benchApp(), ['--log-level', 'error'], 60_000, undefined, coreEnv, path.join(path.resolve(beforeTree), 'bin', 'uhlp.js')) : undefined;
  try {
    const post = (path: string, extra: Record<string, string> = {}): Promise<Response> =>
      fetch(`${core.url}/bench${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...extra }, body: '{"n":1}' });
    const stepMs: number[] = [];
    let lastRun = '';
    const workflowOnce = async (): Promise<number> => {
      const started = performance.now();
      const response = await post('/steps');
      const text = await response.text();
      if (response.status !== 200) throw new Error(`workflow answered ${response.status}: ${text.slice(0, 300)}`);
      lastRun = response.headers.get('x-uhlp-run-id') ?? '';
      return performance.now() - started;
    };
    const directOnce = async (): Promise<number> => {
      const started = performance.now();
      for (let i = 0; i < STEPS; i++) {
        const response = await post('/noop');
        await response.text();
        if (response.status !== 200) throw new Error(`noop answered ${response.status}`);
      }
      return performance.now() - started;
    };
    const mcpOnce = async (): Promise<number> => {
      const started = performance.now();
      const response = await post('/mcp20');
      const text = await response.text();
      if (response.status !== 200) throw new Error(`mcp20 answered ${response.status}: ${text.slice(0, 300)}`);
      return performance.now() - started;
    };
    // Warm the paths (templates, scripts, connections) before measuring.
    for (let i = 0; i < 3; i++) {
      await workflowOnce();
      await directOnce();
      await mcpOnce();
    }
    const workflow: number[] = [];
    const direct: number[] = [];
    const mcp: number[] = [];
    const cpu = { workflow: { core: 0, sandboxes: 0 }, direct: { core: 0, sandboxes: 0 }, mcp: { core: 0, sandboxes: 0 } };
    // The CPU the core and its sandboxes used during `once`, added to `into`.
    const counted = async (into: { core: number; sandboxes: number }, once: () => Promise<number>): Promise<number> => {
      const before = processTreeCpu(core.child.pid!);
      const ms = await once();
      const after = processTreeCpu(core.child.pid!);
      into.core += after.selfMs - before.selfMs;
      into.sandboxes += after.descendantsMs - before.descendantsMs;
      return ms;
    };
    for (let i = 0; i < runs; i++) {
      workflow.push(await counted(cpu.workflow, workflowOnce));
      direct.push(await counted(cpu.direct, directOnce));
      mcp.push(await counted(cpu.mcp, mcpOnce));
      // How long each step's own work took (the JIT call through the core), from the run's trace.
      const trace = (await (await fetch(`${core.url}/_uhlp/runs/${lastRun}/trace`)).json()) as { steps: Array<{ type: string; durationMs: number }> };
      for (const step of trace.steps) if (step.type === 'jit') stepMs.push(step.durationMs);
    }

    const providerFirst: number[] = [];
    const providerWhole: number[] = [];
    const chat = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'small', stream: true, messages: [{ role: 'user', content: 'Say something.' }] }) };
    const sse = { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: '{}' };
    /** One core's streamed runs: after an idle gap, and back to back. */
    const streamedSide = (side: { url: string }) => {
      const idle: number[] = [];
      const backToBack: number[] = [];
      const once = async (): Promise<number> => (await timeToFirst(`${side.url}/bench/streamed`, sse, (text) => text.includes('event: NODE_STREAM'))).first;
      return {
        idle,
        backToBack,
        warm: once,
        round: async (): Promise<void> => {
          idle.push(await once());
          backToBack.push(await once());
        },
      };
    };
    const after = streamedSide(core);
    const bare = streamedSide(relay);
    const before = beforeCore !== undefined ? streamedSide(beforeCore) : undefined;
    const sides = before === undefined ? [after, bare] : [after, bare, before];
    for (const side of sides) await side.warm();
    for (let i = 0; i < Math.max(5, Math.ceil(runs / 2)); i++) {
      // Each side's runs come after the provider's own answer, during which the others are idle; the order turns each round.
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(i + k) % sides.length]!;
        const own = await timeToFirst(`${provider.baseUrl}/chat/completions`, chat, (text) => text.includes('"content":"word'));
        providerFirst.push(own.first);
        providerWhole.push(own.whole);
        await side.round();
      }
    }
    const workflow20 = percentiles(workflow);
    const direct20 = percentiles(direct);
    const perStep = (split: { core: number; sandboxes: number }): CpuSplit => ({ core: round3(split.core / (runs * STEPS)), sandboxes: round3(split.sandboxes / (runs * STEPS)) });
    const cpuPerStep = {
      workflow: perStep(cpu.workflow),
      direct: perStep(cpu.direct),
      overheadMs: round3((cpu.workflow.core + cpu.workflow.sandboxes - cpu.direct.core - cpu.direct.sandboxes) / (runs * STEPS)),
    };
    const mcp20 = percentiles(mcp);
    const perStepOverheadP50Ms = round3((workflow20.p50Ms - direct20.p50Ms) / STEPS);
    const sum = (split: { core: number; sandboxes: number }): number => split.core + split.sandboxes;
    // One call of the JIT script is one direct call's worth of work besides its MCP calls.
    const mcpCall = { p50Ms: round3((mcp20.p50Ms - direct20.p50Ms / STEPS) / STEPS), cpuMs: round3((sum(cpu.mcp) - sum(cpu.direct) / STEPS) / (runs * STEPS)) };
    return {
      runs,
      workflow20,
      direct20,
      perStepOverheadP50Ms,
      jitStepInTrace: percentiles(stepMs),
      cpuPerStep,
      mcp20,
      mcpCall,
      aboveMcpFloor: { p50Ms: round3(perStepOverheadP50Ms - mcpCall.p50Ms), cpuMs: round3(cpuPerStep.overheadMs - mcpCall.cpuMs) },
      firstByte: {
        provider: percentiles(providerFirst),
        throughCore: percentiles(after.idle),
        providerWholeAnswer: percentiles(providerWhole),
        throughCoreBackToBack: percentiles(after.backToBack),
        bareRelay: { afterIdle: percentiles(bare.idle), backToBack: percentiles(bare.backToBack) },
        ...(before !== undefined ? { before: { throughCore: percentiles(before.idle), throughCoreBackToBack: percentiles(before.backToBack) } } : {}),
      },
    };
  } finally {
    await core.stop();
    await beforeCore?.stop();
    await relay.close();
    await provider.close();
  }
}

