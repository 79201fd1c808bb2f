/**
 * Self time of a V8 `--cpu-prof` profile within a window of the monotonic
 * clock (the profile's own, in microseconds), summed by function and by
 * module: the tables of the profiling benches (profile-core.ts, profile-llm.ts).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Samples in the window that were not idle. */
  readonly busy: number;
  /** Every module's URL the profile saw (to tell one process's profile from another's). */
  readonly urls: ReadonlySet<string>;
  readonly byFunction: ReadonlyMap<string, number>;
  readonly byModule: ReadonlyMap<string, number>;
  /** Mean µs between samples. */
  readonly intervalUs: number;
}

/** The monotonic clock in µs, the profiles' clock. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Summarizes the samples of `file` taken between `from` and `to` (monotonicUs readings). */
export function summarizeProfile(file: string, from: number, to: number): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const urls = new Set(profile.nodes.map((node) => node.callFrame.url));
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  let busy = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!;
    if (at < from || at > to) continue;
    const frame = byId.get(profile.samples[i]!)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += 1;
    const where = frame.url.replace(/^file:\/\/.*?\/(dist|node_modules|src|bench)\//, '$1/');
    const fn = `${frame.functionName || '(anonymous)'} ${where ? `${where}:${frame.lineNumber + 1}` : '(native)'}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + 1);
    const module = where || `(native) ${frame.functionName}`;
    byModule.set(module, (byModule.get(module) ?? 0) + 1);
  }
  const span = profile.timeDeltas.reduce((sum, delta) => sum + delta, 0);
  return { busy, urls, byFunction, byModule, intervalUs: profile.samples.length > 0 ? span / profile.samples.length : 0 };
}

/** The `n` largest counts as shares of `busy` (and µs a turn when `turns` is given). */
export function topShares(counts: ReadonlyMap<string, number>, busy: number, n: number, usPerSample?: number, turns?: number): string {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, count]) => {
      const perTurn = usPerSample !== undefined && turns ? `  ${((count * usPerSample) / turns).toFixed(1).padStart(7)} µs/turn` : '';
      return `${((100 * count) / busy).toFixed(1).padStart(5)} %${perTurn}  ${name}`;
    })
    .join('\n');
}
