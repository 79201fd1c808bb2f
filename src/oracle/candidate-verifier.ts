/**
 * Judges a candidate on held-back samples, each run in a JIT sandbox of the
 * app's pool (never in the core) with the component's capabilities and no
 * more (candidate-runner.ts). An answer agrees when it passes the output
 * schema and its canonical JSON equals the sample's output. The candidate
 * passes when it answers (does not decline) at least `minCoverage` of the
 * samples and agrees on at least `agreement` of those it answers.
 *
 * A tool call outside the component's tools, or a run past the pool's
 * timeout, refuses the candidate at once: the first is a breach of what
 * generated code may do, the second would cost every request its timeout.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import type { UhlpError } from '../shared/errors.js';
import { DECLINED_CODE } from '../contract/generated-code.js';
import type { Disagreement } from './codegen-prompt.js';
import { sameOutput, type OracleSample } from './oracle-sample.js';

/** One run of a candidate on one sample's inputs, as the runner reports it. */
export interface CandidateRun {
  /** The sandbox's answer; absent when the execution failed (`error`). */
  readonly response?: ExecuteResponse;
  readonly error?: UhlpError;
  /** The MCP tools the run called, in order. */
  readonly toolCalls: readonly string[];
  /** Calls the capabilities refused. */
  readonly violations: number;
}

export type CandidateRunner = (source: string, inputs: Record<string, unknown>) => Promise<CandidateRun>;

export type SampleOutcome = 'agree' | 'disagree' | 'declined' | 'invalid' | 'error' | 'timeout' | 'capability';

export type Verdict = 'passed' | 'disagreed' | 'declined' | 'error' | 'timeout' | 'capability' | 'invalid';

export interface Verification {
  readonly verdict: Verdict;
  /** Agreeing share of the answered samples (0 when none was answered). */
  readonly agreement: number;
  /** Answered share of the samples run. */
  readonly coverage: number;
  /** Held-back samples run (fewer than given when a refusal stopped the run). */
  readonly judged: number;
  readonly outcomes: Partial<Record<SampleOutcome, number>>;
  /** Why it did not pass, in a line. */
  readonly reason?: string;
  readonly disagreements: Disagreement[];
}

export interface VerifyOptions {
  readonly run: CandidateRunner;
  readonly validate: ValidateFunction | undefined;
  /** The tools the candidate may call. */
  readonly tools: readonly string[];
  readonly agreement: number;
  readonly minCoverage: number;
}

export async function verifyCandidate(source: string, heldBack: readonly OracleSample[], options: VerifyOptions): Promise<Verification> {
  const outcomes: Partial<Record<SampleOutcome, number>> = {};
  const disagreements: Disagreement[] = [];
  let judged = 0;
  let stop: { verdict: Verdict; reason: string } | undefined;
  for (const sample of heldBack) {
    const run = await options.run(source, sample.inputs);
    judged += 1;
    const { outcome, got } = judgeRun(run, sample, options);
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    if (outcome !== 'agree' && outcome !== 'declined') disagreements.push({ inputs: sample.inputs, expected: sample.output, got });
    if (outcome === 'capability') stop = { verdict: 'capability', reason: `it called tools outside the component's capabilities (${String(got)})` };
    else if (outcome === 'timeout') stop = { verdict: 'timeout', reason: 'it ran past the pool timeout' };
    if (stop) break;
  }
  const declined = outcomes.declined ?? 0;
  const answered = judged - declined;
  const agreed = outcomes.agree ?? 0;
  const agreement = answered > 0 ? agreed / answered : 0;
  const coverage = judged > 0 ? answered / judged : 0;
  const figures = { agreement: round(agreement), coverage: round(coverage), judged, outcomes, disagreements };
  if (stop) return { verdict: stop.verdict, reason: stop.reason, ...figures };
  if (coverage < options.minCoverage) {
    return { verdict: 'declined', reason: `it answered ${answered} of ${judged} held-back samples, under minCoverage ${options.minCoverage}`, ...figures };
  }
  if (agreement < options.agreement) {
    const errors = (outcomes.error ?? 0) + (outcomes.invalid ?? 0);
    const verdict: Verdict = errors === answered ? 'error' : 'disagreed';
    return { verdict, reason: `it agreed on ${agreed} of ${answered} answered held-back samples (${round(agreement)}), under agreement ${options.agreement}`, ...figures };
  }
  return { verdict: 'passed', ...figures };
}

function judgeRun(run: CandidateRun, sample: OracleSample, options: VerifyOptions): { outcome: SampleOutcome; got: unknown } {
  const outside = run.toolCalls.filter((tool) => !options.tools.includes(tool));
  if (run.violations > 0 || outside.length > 0) return { outcome: 'capability', got: outside.length > 0 ? outside.join(', ') : 'a refused call' };
  if (run.error !== undefined) {
    return { outcome: run.error.code === 'UHLP_SANDBOX_TIMEOUT' ? 'timeout' : 'error', got: { error: run.error.code, message: run.error.message } };
  }
  const response = run.response!;
  if (response.resultType === 'error') {
    const data = response.data as { code?: unknown; message?: unknown };
    if (data.code === DECLINED_CODE) return { outcome: 'declined', got: undefined };
    return { outcome: 'error', got: { error: data.code, message: data.message } };
  }
  if (response.resultType !== 'generic') return { outcome: 'invalid', got: { resultType: response.resultType } };
  if (options.validate !== undefined && !options.validate(response.data)) {
    return { outcome: 'invalid', got: { output: response.data, schemaErrors: (options.validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`) } };
  }
  return { outcome: sameOutput(response.data, sample.output) ? 'agree' : 'disagree', got: response.data };
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
