/**
 * Every path newer than plain HTTP → JIT against its floor (the same work with
 * nothing of uhlp in between) and its target, one line each, from one run's
 * report: what a reader of `npm run bench` checks first. The pod claim's line is
 * printed by bench:k8s (k8s-dispatch.ts), which measures it on the cluster.
 *
 * Built from the report's own fields, so a part that did not run (BENCH_ONLY)
 * has no line, and a figure missing from a part shows as "-".
 */
import { table } from './load.js';
import { median, round3 } from './numbers.js';

export interface PathTarget {
  readonly path: string;
  /** What uhlp adds or costs, as the target is stated. */
  readonly measured: number | undefined;
  /** The floor the figure is taken against, as text (a ratio's denominator, a bare path's p50). */
  readonly floor: string;
  readonly target: string;
  readonly met: boolean | undefined;
}

type Latency = { p50Ms: number; p99Ms: number };
type Row = { path: string; connections: number; sandboxes: number; concurrency: number; result: Latency & { rps: number; cpuMsPerRequest?: { core: number; sandboxes: number } } };

/** The lines of the parts `report` has. */
export function pathTargets(report: Record<string, unknown>): PathTarget[] {
  const out: PathTarget[] = [];
  const add = (path: string, measured: number | undefined, floor: string, target: string, met: (value: number) => boolean): void => {
    out.push({ path, measured, floor, target, met: measured === undefined ? undefined : met(measured) });
  };

  const queue = report.queue as Array<{ path: string; result: { throughput: number; p50Ms: number } }> | undefined;
  const ratio = report.queueRatio as { throughput: number; overOnceFloor?: number; addedP50Ms: number } | undefined;
  if (queue !== undefined && queue.length > 0) {
    const bare = queue.find((row) => row.path === 'bare')?.result;
    add('queue delivery, core/bare throughput', ratio?.throughput, bare ? `bare XREADGROUP loop ${bare.throughput} msg/s` : '-', '>= 0.7x', (v) => v >= 0.7);
    // The same loop with the once-only record as the core keeps it (claimed a read at a time, completed with the batched acknowledgement): what a delivery's own checks cost with nothing of uhlp around them.
    const once = queue.find((row) => row.path === 'bare+once')?.result;
    if (once !== undefined) add('queue delivery, core/bare+once throughput', ratio?.overOnceFloor, `bare loop + once-only record ${once.throughput} msg/s`, '>= 0.7x', (v) => v >= 0.7);
  }

  const llm = (report.llmDispatch as Row[] | undefined) ?? [];
  const c1 = (path: string): Row | undefined => llm.find((row) => row.path === path && row.connections === 1);
  if (llm.length > 0) {
    const core = c1('core');
    const direct = c1('direct');
    add('LLM turn c1, added p50 ms', core && direct ? round3(core.result.p50Ms - direct.result.p50Ms) : undefined, direct ? `straight to the provider p50 ${direct.result.p50Ms} ms` : '-', '<= 1 ms', (v) => v <= 1);
    for (const row of llm.filter((r) => r.path === 'core' && r.result.cpuMsPerRequest !== undefined)) {
      const cpu = row.result.cpuMsPerRequest!;
      // The floor: the bare relay (path forwarder) sending the same completion, its CPU per request in the same shape.
      const relay = llm.find((r) => r.path === 'forwarder' && r.connections === row.connections && r.sandboxes === row.sandboxes)?.result.cpuMsPerRequest;
      // The floor of the design: the turn's hops (client, core, orchestrator, core, provider) between bare processes.
      const hops = llm.find((r) => r.path === 'hops' && r.connections === row.connections && r.sandboxes === row.sandboxes)?.result.cpuMsPerRequest;
      const floor = [
        relay !== undefined ? `bare relay of the same completion ${round3(relay.core + relay.sandboxes)} ms` : "the provider's own work excluded",
        ...(hops !== undefined ? [`the same hops between bare processes ${round3(hops.core + hops.sandboxes)} ms`] : []),
      ].join('; ');
      add(`LLM turn c${row.connections} ${row.sandboxes}x${row.concurrency}, core + orchestrator CPU ms`, round3(cpu.core + cpu.sandboxes), floor, '<= 0.5 ms', (v) => v <= 0.5);
    }
  }

  const csjs = report.csjsCore as Array<{ path: string; result: Latency; overJitP50Ms: number }> | undefined;
  const jit = csjs?.find((row) => row.path === 'jit');
  for (const row of csjs?.filter((r) => r.path !== 'jit') ?? []) {
    add(`cs-js ${row.path.replace(/^cs-/, 'by ')}, added p50 ms`, row.overJitP50Ms, jit ? `plain JIT script p50 ${jit.result.p50Ms} ms` : '-', '<= +0.1 ms', (v) => v <= 0.1);
  }

  const workflow = report.workflow as
    | { perStepOverheadP50Ms: number; direct20: Latency; mcpCall?: { p50Ms: number; cpuMs: number }; firstByte: { provider: Latency; throughCore: Latency; throughCoreBackToBack?: Latency; bareRelay?: { afterIdle: Latency } } }
    | undefined;
  if (workflow !== undefined) {
    // A step is one MCP call from the orchestrator: one MCP call from a sandbox is the least a step adds.
    const mcpFloor = workflow.mcpCall !== undefined ? `; one MCP call from a sandbox p50 ${workflow.mcpCall.p50Ms} ms, CPU ${workflow.mcpCall.cpuMs} ms` : '';
    add('workflow step, added p50 ms', workflow.perStepOverheadP50Ms, `20 direct JIT calls p50 ${workflow.direct20.p50Ms} ms${mcpFloor}`, '<= 0.5 ms', (v) => v <= 0.5);
    const { provider, throughCore, throughCoreBackToBack, bareRelay } = workflow.firstByte;
    // Measured after the core sat idle through the provider's own answer; the same with no idle gap says what the wake-ups cost.
    const backToBack = throughCoreBackToBack !== undefined ? `; through the core with no idle gap before it p50 ${throughCoreBackToBack.p50Ms} ms` : '';
    // The same hops between bare processes: what the path costs with nothing of uhlp in it.
    const hops = bareRelay !== undefined ? `; the same hops between bare processes p50 ${bareRelay.afterIdle.p50Ms} ms (+${round3(bareRelay.afterIdle.p50Ms - provider.p50Ms)})` : '';
    add('workflow first streamed byte, added p50 ms', round3(throughCore.p50Ms - provider.p50Ms), `the provider's first byte p50 ${provider.p50Ms} ms${hops}${backToBack}`, '<= 2 ms', (v) => v <= 2);
  }

  const mcp = report.mcp as { rows: Array<{ path: string; result: Latency }>; coreCallOverFloorMs?: { p50: number } } | undefined;
  if (mcp !== undefined) {
    const floor = mcp.rows.filter((row) => row.path.startsWith('core.kv.get on a bare')).map((row) => row.result.p50Ms);
    add('core.* MCP call, core time p50 ms', mcp.coreCallOverFloorMs?.p50, floor.length > 0 ? `bare HTTP handler p50 ${median(floor)} ms` : '-', '<= 0.15 ms', (v) => v <= 0.15);
  }
  return out;
}

export function pathTargetsTable(rows: readonly PathTarget[]): string {
  return table(
    rows.map((row) => ({
      path: row.path,
      measured: row.measured ?? '-',
      floor: row.floor,
      target: row.target,
      '': row.met === undefined ? '-' : row.met ? 'ok' : 'MISSED',
    })),
  );
}

