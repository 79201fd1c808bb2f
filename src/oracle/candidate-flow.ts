/**
 * The candidate flow of the oracle (docs/oracle.md, steps 2-3): a component
 * claimed for generation gets candidates from the code-generation model, each
 * judged on held-back samples in a JIT sandbox of the app (code-generator.ts,
 * candidate-runner.ts); a passing one is committed as its mode says
 * (git-promotion.ts): to the served branch (auto: the component enters shadow
 * once hot reload serves it) or to a branch of its own (suggest: nothing
 * served changes). No candidate, or too many tries, sends the component back
 * to sampling or stops it. Every step is a decision in the app's ledger.
 */
import type { OracleConfig } from '../config.js';
import type { ComponentSpec, OptimizeSpec, PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { activeOptimize } from '../contract/llm-component-schema.js';
import type { ComponentExecutor } from '../execution/component-executor.js';
import type { ExternalCall } from '../ledger/ledger-entry.js';
import type { LlmProvider } from '../llm/llm-provider.js';
import type { Logger } from '../logger.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { Metrics } from '../metrics.js';
import { UhlpError, isUhlpError } from '../shared/errors.js';
import type { OracleSampleStats } from '../state/oracle-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { candidateRunner } from './candidate-runner.js';
import { generateCandidates, type CandidateRecord } from './code-generator.js';
import { codePool } from './eligibility.js';
import { suggestionBranch, type PromotionWriter } from './git-promotion.js';
import type { DecisionKind, OracleDecisions } from './oracle-decisions.js';
import { enterStage, type OracleRecord, type OracleStage, type RecordCandidate } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import type { OracleSample } from './oracle-sample.js';
import type { SampleRecorder } from './sample-recorder.js';

/** Candidates kept per component. */
const KEPT_CANDIDATES = 20;
/** How long one core may hold a component's generation before another may take it over. */
export const GENERATION_LEASE_MS = 15 * 60_000;

/** The runtime-store lease of the core generating code for a component. */
export function generationLease(appId: string, componentId: string): string {
  return `oracle-generate:${appId}/${componentId}`;
}

export interface CandidateFlowDeps {
  readonly config: OracleConfig;
  /** The oracle's state, and the generation lease it holds while a candidate is made. */
  readonly store: Pick<RuntimeStore, 'oracle' | 'leases'>;
  readonly records: OracleRecords;
  readonly recorder: SampleRecorder;
  readonly decisions: OracleDecisions;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The provider code generation calls. */
  readonly provider: LlmProvider;
  /** Runs candidates in JIT sandboxes of the app. */
  readonly executor: ComponentExecutor;
  /** Tokens for the candidates' MCP calls. @defaultValue none: candidates get no tools */
  readonly mcp?: McpExecutions;
  mcpEndpoint(): string;
  /** Where promotions are committed; undefined when apps come from Kubernetes (promotions are refused). */
  readonly promotions?: PromotionWriter;
  /** Holder of the generation leases: this core. */
  readonly owner: string;
}

export class CandidateFlow {
  constructor(private readonly deps: CandidateFlowDeps) {}

  /** Generates and judges candidates for a component this core claimed for generation, commits a passing one, and gives the lease back. */
  async generate(app: LoadedApp, component: ComponentSpec, optimize: OptimizeSpec, record: OracleRecord, samples: OracleSample[], stats: OracleSampleStats): Promise<void> {
    const { store, logger } = this.deps;
    const tier = app.document.spec.deploymentMode;
    const decide = (kind: DecisionKind, summary: string, details: Record<string, unknown>, externalCalls?: ExternalCall[]): void =>
      this.deps.decisions.record({ kind, appId: app.id, tier, componentId: component.id, summary, details, ...(externalCalls ? { externalCalls } : {}) });
    try {
      const pool = codePool(app.document.spec, optimize) as PoolSpec;
      const definition = await this.deps.recorder.definition(app, component);
      const model = this.codegenModel(app, component);
      const outcome = await generateCandidates(
        {
          app,
          component,
          optimize,
          definition,
          samples,
          model,
          maxTokens: this.deps.config.codegenMaxTokens,
          spent: { attempts: record.attempts, tokens: record.codegenTokens },
          run: candidateRunner({ executor: this.deps.executor, ...(this.deps.mcp ? { mcp: this.deps.mcp } : {}), mcpEndpoint: this.deps.mcpEndpoint }, app, component, pool),
        },
        {
          provider: this.deps.provider,
          metrics: this.deps.metrics,
          onCandidate: async (candidate) => {
            await store.oracle.addOracleCandidate(app.id, component.id, JSON.stringify(candidate), KEPT_CANDIDATES);
            const { source: _source, disagreements: _d, ...figures } = candidate;
            decide('candidate', `candidate ${candidate.hash.slice(0, 12)} of ${app.id}/${component.id} ${candidate.verdict}${candidate.reason ? `: ${candidate.reason}` : ''}`, { ...figures });
          },
        },
      );
      const spent = { attempts: outcome.attempts, codegenTokens: outcome.tokens };
      const counters = await store.oracle.getOracleCounters(app.id, component.id);
      const passed = outcome.passed;
      if (passed === undefined) {
        const exhausted = outcome.attempts >= optimize.maxAttempts || outcome.tokens >= optimize.maxCodegenTokens;
        await this.deps.records.update(app.id, component.id, (current) =>
          current?.stage === 'generating' ? { ...enterStage(current, exhausted ? 'failed' : 'sampling', counters, new Date(), outcome.reason), ...spent } : undefined,
        );
        decide('give-up', exhausted ? `no candidate for ${app.id}/${component.id}: ${outcome.reason}` : `no candidate yet for ${app.id}/${component.id}: ${outcome.reason}`, { ...spent, reason: outcome.reason }, [...outcome.calls]);
        return;
      }
      const fresh = samples.filter((sample) => sample.tokens > 0);
      const candidate: RecordCandidate = {
        hash: passed.hash,
        script: passed.script,
        agreement: passed.agreement,
        coverage: passed.coverage,
        heldBack: passed.heldBack,
        model: passed.model,
        tokensPerAnswer: fresh.length > 0 ? fresh.reduce((sum, sample) => sum + sample.tokens, 0) / fresh.length : 0,
      };
      const evidence = { candidate: passed.hash, script: passed.script, model: passed.model, attempt: passed.attempt, heldBack: passed.heldBack, training: passed.training, agreement: passed.agreement, coverage: passed.coverage, samples: stats, revision: definition.revision };
      await this.commitCandidate(app, component, optimize, { ...record, ...spent, candidate }, passed, evidence, pool, outcome.calls);
    } catch (error) {
      logger.error({ err: error, app: app.id, component: component.id }, 'oracle code generation failed');
      const counters = await store.oracle.getOracleCounters(app.id, component.id).catch(() => record.stageBase);
      await this.deps.records
        .update(app.id, component.id, (current) =>
          current?.stage === 'generating' ? enterStage(current, 'sampling', counters, new Date(), `code generation failed: ${isUhlpError(error) ? `${error.code}: ` : ''}${(error as Error).message}`) : undefined,
        )
        .catch(() => undefined);
    } finally {
      await store.leases.releaseLease(generationLease(app.id, component.id), this.deps.owner).catch(() => false);
    }
  }

  /** Commits a passing candidate as the mode says (or records why it cannot be). */
  private async commitCandidate(
    app: LoadedApp,
    component: ComponentSpec,
    optimize: OptimizeSpec,
    record: OracleRecord,
    passed: CandidateRecord,
    evidence: Record<string, unknown>,
    pool: PoolSpec,
    calls: readonly ExternalCall[],
  ): Promise<void> {
    const tier = app.document.spec.deploymentMode;
    const counters = await this.deps.store.oracle.getOracleCounters(app.id, component.id);
    const suggest = optimize.mode === 'suggest';
    const branch = suggest ? suggestionBranch(app.id, component.id) : undefined;
    const promotions = this.deps.promotions;
    const write = async (stage: OracleStage, extra: Partial<OracleRecord>, reason?: string): Promise<void> => {
      await this.deps.records.update(app.id, component.id, (current) =>
        current !== undefined && current.revision === record.revision && (current.stage === 'generating' || current.stage === 'suggested' || current.stage === 'refused')
          ? { ...enterStage({ ...current, attempts: record.attempts, codegenTokens: record.codegenTokens, candidate: record.candidate! }, stage, counters, new Date(), reason), ...extra }
          : undefined,
      );
    };
    if (promotions === undefined) {
      const reason = `app "${app.id}" comes from a Kubernetes AppDefinition: its spec is the resource, which the core does not write, and the core holds no push access to its Git source; apply generated code ${passed.script} by hand (uhlp optimize status shows it)`;
      await write('refused', {}, reason);
      this.deps.decisions.record({ kind: 'refuse', appId: app.id, tier, componentId: component.id, summary: `promotion of ${app.id}/${component.id} refused: ${reason}`, details: evidence, externalCalls: calls });
      return;
    }
    try {
      const { commit } = await promotions.promote({
        appId: app.id,
        componentId: component.id,
        revision: record.revision,
        script: passed.script,
        source: passed.source,
        codePool: pool.name,
        message: promotionMessage(app.id, component.id, passed, evidence, optimize, suggest),
        ...(branch !== undefined ? { branch } : {}),
      });
      const promotion = { commit, ...(branch !== undefined ? { branch } : {}), at: new Date().toISOString() };
      await write(suggest ? 'suggested' : 'shadow', { promotion });
      this.deps.decisions.record({
        kind: suggest ? 'suggest' : 'promote',
        appId: app.id,
        tier,
        componentId: component.id,
        summary: suggest
          ? `${app.id}/${component.id}: generated code ${passed.hash.slice(0, 12)} suggested on branch ${branch} (${commit.slice(0, 12)}); nothing served changes`
          : `${app.id}/${component.id} promoted to generated code ${passed.hash.slice(0, 12)} (${commit.slice(0, 12)}); it enters shadow`,
        details: { ...evidence, commit, ...(branch !== undefined ? { branch } : {}) },
        externalCalls: calls,
      });
    } catch (error) {
      const reason = `${isUhlpError(error) ? `${error.code}: ` : ''}${(error as Error).message}`;
      await write('refused', {}, reason);
      this.deps.decisions.record({ kind: 'refuse', appId: app.id, tier, componentId: component.id, summary: `promotion of ${app.id}/${component.id} not committed: ${reason}`, details: evidence, externalCalls: calls });
    }
  }

  /** Commits a suggested (or refused) candidate to the served branch. */
  async promoteSuggestion(app: LoadedApp, component: ComponentSpec, record: OracleRecord): Promise<void> {
    const optimize = activeOptimize(component.llm);
    const pool = optimize !== undefined ? codePool(app.document.spec, optimize) : undefined;
    if (optimize === undefined || pool === undefined) throw new UhlpError('UHLP_ORACLE_NOTHING_TO_DO', `${app.id}/${component.id} is not optimized any more`);
    const kept = (await this.deps.store.oracle.listOracleCandidates(app.id, component.id))
      .map((json) => JSON.parse(json) as CandidateRecord)
      .find((candidate) => candidate.hash === record.candidate!.hash);
    if (kept === undefined) throw new UhlpError('UHLP_ORACLE_NOTHING_TO_DO', `candidate ${record.candidate!.hash.slice(0, 12)} is no longer kept; let the oracle judge a new one`);
    const evidence = { candidate: kept.hash, script: kept.script, model: kept.model, attempt: kept.attempt, heldBack: kept.heldBack, agreement: kept.agreement, coverage: kept.coverage, revision: record.revision, promotedBy: 'operator' };
    await this.commitCandidate(app, component, { ...optimize, mode: 'auto' }, record, kept, evidence, pool, []);
    const after = (await this.deps.records.read(app.id, component.id)).record;
    if (after?.stage === 'refused') throw new UhlpError('UHLP_ORACLE_PROMOTION_REFUSED', after.reason ?? 'the promotion was refused');
  }

  private codegenModel(app: LoadedApp, component: ComponentSpec): string {
    return (
      this.deps.config.codegenModel ??
      this.deps.provider.defaultModel ??
      component.llm?.model ??
      app.document.spec.capabilities?.llm?.models[0] ??
      'default'
    );
  }
}

function promotionMessage(appId: string, componentId: string, candidate: CandidateRecord, evidence: Record<string, unknown>, optimize: OptimizeSpec, suggest: boolean): string {
  const samples = evidence['samples'] as OracleSampleStats | undefined;
  return [
    `oracle: ${suggest ? 'suggest' : 'promote'} generated code for ${appId}/${componentId} (${candidate.hash.slice(0, 12)})`,
    '',
    `The LLM component ${componentId} is answered by ${candidate.script}; its llm block stays as the`,
    'fallback for the inputs the code declines and as the reference of the live comparisons.',
    suggest ? 'Merge this branch to serve it; it then starts in shadow.' : 'It starts in shadow: the LLM answers and the code is compared.',
    '',
    'Evidence:',
    `  candidate:          ${candidate.hash}`,
    `  model:              ${candidate.model} (attempt ${candidate.attempt} of ${optimize.maxAttempts})`,
    `  held-back samples:  ${candidate.heldBack}, never shown to the model`,
    `  agreement:          ${candidate.agreement} (required ${optimize.agreement})`,
    `  coverage:           ${candidate.coverage} (required ${optimize.minCoverage})`,
    `  training samples:   ${candidate.training} shown`,
    ...(samples ? [`  samples:            ${samples.stored} held of ${samples.seen} distinct inputs; ${samples.repeats} repeats, ${samples.unstable} unstable`] : []),
    `  llm revision:       ${String(evidence['revision'])}`,
    `  stages:             shadow ${optimize.shadowRequests} comparisons, canary ${optimize.canaryPercent}% for ${optimize.canaryRequests}, then full`,
  ].join('\n');
}
