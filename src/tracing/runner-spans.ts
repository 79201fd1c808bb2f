/**
 * What a runner timed of an execution (`metrics.timings` of its /execute
 * answer; a sandbox has no network to export spans itself) on the execution's
 * span: the script's own run time as its attribute `uhlp.runner.run_ms`, and as
 * child spans, placed from when the core sent the request, the script's first
 * load `uhlp.runner.script_load`, each tool call as the script saw it
 * `uhlp.runner.tool_call <tool>`, and — only when there are tool calls, which it
 * frames — the run `uhlp.runner.run`. A plain run is an attribute, not a span:
 * a span is most of what tracing costs a turn. The runner is not trusted: its
 * figures only time spans, cut to what it may report.
 */
import type { RunnerTimings } from '../contract/execute-contract.js';
import { epochMs, recordSpan, recordsUnder, trace } from './spans.js';

export function recordRunnerTimings(timings: RunnerTimings | undefined, sentAt: number, answeredAt: number): void {
  if (timings === undefined || !recordsUnder()) return;
  const origin = epochMs(sentAt);
  // Nothing the runner says may end after its answer came back.
  const latest = epochMs(answeredAt);
  const place = (name: string, start: number, duration: number, attributes: Record<string, string | number>, error?: string): void => {
    const from = Math.min(origin + start, latest);
    recordSpan(name, from, Math.min(from + duration, latest), attributes, error !== undefined ? { error } : {});
  };
  if (timings.script_load !== undefined) place('uhlp.runner.script_load', timings.script_load.start_ms, timings.script_load.duration_ms, {});
  const toolCalls = timings.tool_calls ?? [];
  if (timings.run !== undefined) {
    // Cut as a span would be: never longer than the round trip.
    const runMs = Math.max(0, Math.min(timings.run.duration_ms, latest - Math.min(origin + timings.run.start_ms, latest)));
    trace.getActiveSpan()?.setAttribute('uhlp.runner.run_ms', Math.round(runMs * 1000) / 1000);
    if (toolCalls.length > 0) place('uhlp.runner.run', timings.run.start_ms, timings.run.duration_ms, {});
  }
  for (const call of toolCalls) {
    place(`uhlp.runner.tool_call ${call.tool.slice(0, 128)}`, call.start_ms, call.duration_ms, { 'gen_ai.tool.name': call.tool.slice(0, 128), 'uhlp.tool.outcome': call.outcome }, call.outcome === 'ok' ? undefined : call.outcome);
  }
}
