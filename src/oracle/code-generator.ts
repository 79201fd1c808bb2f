/**
 * Asks the code-generation model for candidates and judges each on the
 * held-back samples (candidate-verifier.ts), within a budget of attempts and
 * tokens per llm revision. A failed candidate is re-asked in the same
 * conversation with the samples it got wrong; those samples are then no longer
 * held back, so no later candidate is judged on an answer it was shown.
 * Every candidate, its figures and its verdict are kept (runtime store,
 * newest first) for `uhlp optimize status`.
 *
 * The model is called through the core's provider directly, not through
 * `core.llm.generate`: its tokens are the core's, counted apart in
 * `uhlp_oracle_tokens_total` and never charged to the app's budget.
 */
import { createHash } from 'node:crypto';
import type { ComponentSpec, OptimizeSpec } from '../apps/schema/app-definition-schema.js';
import { hashPayload, type ExternalCall } from '../ledger/ledger-entry.js';
import type { LlmMessage } from '../contract/llm-messages.js';
import type { LlmProvider } from '../llm/llm-provider.js';
import type { Metrics } from '../metrics.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { codegenMessages, extractModule, feedbackMessage, type Disagreement } from './codegen-prompt.js';
import { verifyCandidate, type CandidateRunner, type SampleOutcome, type Verdict } from './candidate-verifier.js';
import { generatedScript } from './git-promotion.js';
import type { OracleSample } from './oracle-sample.js';
import type { ComponentDefinition } from './sample-recorder.js';
import { MAX_TRAINING_SHOWN, MIN_HELD_BACK, splitSamples } from './sample-split.js';

/** A candidate as it is kept and shown. */
export interface CandidateRecord {
  readonly hash: string;
  readonly script: string;
  readonly revision: string;
  readonly attempt: number;
  readonly model: string;
  readonly tokens: { prompt: number; completion: number };
  readonly verdict: Verdict;
  readonly reason?: string;
  readonly agreement: number;
  readonly coverage: number;
  /** Held-back samples it was judged on, and training samples it was shown. */
  readonly heldBack: number;
  readonly training: number;
  readonly outcomes: Partial<Record<SampleOutcome, number>>;
  /** A few samples it got wrong. */
  readonly disagreements: readonly Disagreement[];
  readonly at: string;
  /** The module, as it would be committed. */
  readonly source: string;
}

export interface GenerationInput {
  readonly app: LoadedApp;
  /** The LLM component (its llm block). */
  readonly component: ComponentSpec;
  readonly optimize: OptimizeSpec;
  readonly definition: ComponentDefinition;
  readonly samples: readonly OracleSample[];
  readonly model: string;
  readonly maxTokens: number;
  /** Attempts and tokens spent at this revision already. */
  readonly spent: { readonly attempts: number; readonly tokens: number };
  readonly run: CandidateRunner;
}

export interface GenerationOutcome {
  /** The candidate that passed, if one did. */
  readonly passed?: CandidateRecord;
  /** Every candidate of this run, in order. */
  readonly candidates: readonly CandidateRecord[];
  readonly attempts: number;
  readonly tokens: number;
  /** Why no candidate passed (the budget, too few samples, the last verdict). */
  readonly reason?: string;
  /** The model calls, for the ledger. */
  readonly calls: readonly ExternalCall[];
}

export interface GeneratorDeps {
  readonly provider: LlmProvider;
  readonly metrics: Metrics;
  /** Told of each candidate as soon as it is judged. */
  onCandidate(candidate: CandidateRecord): Promise<void>;
}

export async function generateCandidates(input: GenerationInput, deps: GeneratorDeps): Promise<GenerationOutcome> {
  const { app, component, optimize, definition } = input;
  const labels = { app: app.id, component: component.id };
  const shown = new Set<string>();
  const candidates: CandidateRecord[] = [];
  const calls: ExternalCall[] = [];
  let attempts = input.spent.attempts;
  let tokens = input.spent.tokens;
  let messages: LlmMessage[] | undefined;
  let reason: string | undefined;

  while (attempts < optimize.maxAttempts) {
    if (tokens >= optimize.maxCodegenTokens) {
      reason = `code generation spent its ${optimize.maxCodegenTokens} tokens`;
      break;
    }
    const split = splitSamples(input.samples, optimize.holdout, shown);
    if (split.heldBack.length < MIN_HELD_BACK) {
      reason = `${split.heldBack.length} held-back samples are left unseen; at least ${MIN_HELD_BACK} are needed to judge a candidate`;
      break;
    }
    messages ??= codegenMessages({ appId: app.id, componentId: component.id, definition, tools: component.llm?.tools ?? [], training: split.training.slice(0, MAX_TRAINING_SHOWN) });
    attempts += 1;
    const started = performance.now();
    const answer = await deps.provider.generate({ model: input.model, messages, maxTokens: input.maxTokens, temperature: 0 });
    tokens += answer.usage.prompt + answer.usage.completion;
    deps.metrics.oracleTokens.inc({ ...labels, kind: 'prompt' }, answer.usage.prompt);
    deps.metrics.oracleTokens.inc({ ...labels, kind: 'completion' }, answer.usage.completion);
    calls.push({
      kind: 'llm',
      target: deps.provider.kind,
      status: 'ok',
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      model: input.model,
      prompt_hash: hashPayload(messages),
      answer_hash: hashPayload({ text: answer.text, toolCalls: answer.toolCalls }),
      tokens: { prompt: answer.usage.prompt, completion: answer.usage.completion },
    });
    messages = [...messages, { role: 'assistant', content: answer.text ?? '' }];

    const extracted = extractModule(answer.text);
    const base = {
      revision: definition.revision,
      attempt: attempts,
      model: input.model,
      tokens: { prompt: answer.usage.prompt, completion: answer.usage.completion },
      training: Math.min(split.training.length, MAX_TRAINING_SHOWN),
      at: new Date().toISOString(),
    };
    let candidate: CandidateRecord;
    if ('problem' in extracted) {
      const hash = createHash('sha256').update(answer.text ?? '').digest('hex');
      candidate = { ...base, hash, script: generatedScript(component.id, hash), verdict: 'invalid', reason: extracted.problem, agreement: 0, coverage: 0, heldBack: 0, outcomes: {}, disagreements: [], source: (answer.text ?? '').slice(0, 4096) };
    } else {
      const source = `// Generated by the uhlp optimization oracle for ${app.id}/${component.id} (llm revision ${definition.revision}), model ${input.model}, attempt ${attempts}.\n// It was judged on held-back samples it never saw; the promotion commit holds the evidence.\n${extracted.source}`;
      const hash = createHash('sha256').update(source).digest('hex');
      const verification = await verifyCandidate(source, split.heldBack, {
        run: input.run,
        validate: definition.validate,
        tools: component.llm?.tools ?? [],
        agreement: optimize.agreement,
        minCoverage: optimize.minCoverage,
      });
      candidate = {
        ...base,
        hash,
        script: generatedScript(component.id, hash),
        verdict: verification.verdict,
        ...(verification.reason !== undefined ? { reason: verification.reason } : {}),
        agreement: verification.agreement,
        coverage: verification.coverage,
        heldBack: verification.judged,
        outcomes: verification.outcomes,
        disagreements: verification.disagreements.slice(0, 5),
        source,
      };
    }
    candidates.push(candidate);
    deps.metrics.oracleCandidates.inc({ ...labels, outcome: candidate.verdict });
    await deps.onCandidate(candidate);
    if (candidate.verdict === 'passed') return { passed: candidate, candidates, attempts, tokens, calls };

    reason = `candidate ${candidate.hash.slice(0, 12)} ${candidate.verdict}: ${candidate.reason ?? ''}`.trim();
    // The samples shown as feedback are seen from now on: later candidates are judged without them.
    for (const disagreement of candidate.disagreements) {
      const held = split.heldBack.find((sample) => sample.inputs === disagreement.inputs);
      if (held !== undefined) shown.add(held.inputHash);
    }
    messages = [...messages, feedbackMessage(candidate.reason ?? candidate.verdict, candidate.disagreements)];
  }
  return { candidates, attempts, tokens, calls, reason: reason ?? `no candidate passed in ${optimize.maxAttempts} attempts` };
}
