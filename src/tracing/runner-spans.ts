/**
 * What a runner timed of an execution (`metrics.timings` of its /execute
 * answer; a sandbox has no network to export spans itself) as child spans of
 * the execution's span: `uhlp.runner.script_load`, `uhlp.runner.run`, and
 * `uhlp.runner.tool_call <tool>` per tool call, placed from when the core sent
 * the request. The runner is not trusted: its figures only time spans, cut to
 * what it may report.
 */
import type { RunnerTimings } from '../contract/execute-contract.js';
import { epochMs, recordSpan } from './spans.js';
import { tracingActive } from './tracing-active.js';

export function recordRunnerTimings(timings: RunnerTimings | undefined, sentAt: number, answeredAt: number): void {
  if (!tracingActive() || timings === undefined) return;
  const origin = epochMs(sentAt);
  // Nothing the runner says may end after its answer came back.
  const latest = epochMs(answeredAt);
  const place = (name: string, start: number, duration: number, attributes: Record<string, string | number>, error?: string): void => {
    const from = Math.min(origin + start, latest);
    recordSpan(name, from, Math.min(from + duration, latest), attributes, error !== undefined ? { error } : {});
  };
  if (timings.script_load !== undefined) place('uhlp.runner.script_load', timings.script_load.start_ms, timings.script_load.duration_ms, {});
  if (timings.run !== undefined) place('uhlp.runner.run', timings.run.start_ms, timings.run.duration_ms, {});
  for (const call of timings.tool_calls ?? []) {
    place(`uhlp.runner.tool_call ${call.tool.slice(0, 128)}`, call.start_ms, call.duration_ms, { 'gen_ai.tool.name': call.tool.slice(0, 128), 'uhlp.tool.outcome': call.outcome }, call.outcome === 'ok' ? undefined : call.outcome);
  }
}
