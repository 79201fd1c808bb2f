/**
 * The OptimizationOracle (docs/oracle.md): watches the LLM components that opt
 * in (`llm.optimize.mode: suggest | auto`) and, when it is safe, replaces one
 * with generated JIT code that gives the same answers without tokens.
 *
 * 1. Samples: every answer of an optimized component becomes an (inputs,
 *    output) sample in a bounded reservoir per component and llm revision
 *    (oracle-turns.ts, sample-recorder.ts).
 * 2. A scan on an interval finds components that are hot (sampled answers per
 *    minute), have enough distinct samples, and are stable (inputs seen again
 *    answered the same). One core at a time (a runtime-store lease) then asks
 *    the code-generation model for candidates and judges them on held-back
 *    samples in a JIT sandbox of the app (code-generator.ts).
 * 3. A passing candidate is committed (git-promotion.ts): to the served branch
 *    (auto: the component enters shadow once hot reload serves it) or to a
 *    branch of its own (suggest: nothing served changes).
 * 4. Live comparisons move a promoted component through shadow, canary and
 *    full, or roll it back with a revert commit (stage-rules.ts).
 *
 * Every decision is logged and written to the app's ledger (oracle-decisions.ts);
 * `uhlp optimize` reads the status and sends the operator's commands.
 */
import type { OracleConfig } from '../config.js';
import type { ComponentSpec, OptimizeSpec, PoolSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError, isUhlpError } from '../shared/errors.js';
import { ComponentExecutor } from '../execution/component-executor.js';
import type { ExternalCall } from '../ledger/ledger-entry.js';
import type { LlmProvider } from '../llm/llm-provider.js';
import type { Logger } from '../logger.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { Metrics } from '../metrics.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import type { OracleCounters, OracleSampleStats } from '../state/oracle-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';
import { candidateRunner } from './candidate-runner.js';
import { generateCandidates, type CandidateRecord } from './code-generator.js';
import { activeOptimize } from '../contract/llm-component-schema.js';
import { codePool } from './eligibility.js';
import { suggestionBranch, type PromotionWriter } from './git-promotion.js';
import { OracleDecisions, type DecisionKind } from './oracle-decisions.js';
import { enterStage, newRecord, PROMOTED_STAGES, stageCounts, type OracleRecord, type OracleStage, type RecordCandidate } from './oracle-record.js';
import { OracleRecords } from './oracle-records.js';
import { parseSample, type OracleSample } from './oracle-sample.js';
import { OracleTurns } from './oracle-turns.js';
import { SampleRecorder } from './sample-recorder.js';
import { MIN_HELD_BACK, splitSamples } from './sample-split.js';
import { allowedDisagreements, type StageVerdict } from './stage-rules.js';

export interface OptimizationOracleOptions {
  readonly config: OracleConfig;
  readonly registry: ApplicationRegistry;
  /** The oracle's state, and the leases that let one core at a time generate code for a component. */
  readonly store: Pick<RuntimeStore, 'oracle' | 'leases'>;
  readonly sandboxes: SandboxManager;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The provider code generation calls (the core's, behind core.llm.generate too). */
  readonly provider: LlmProvider;
  /** `<dataDir>/app-revisions`. */
  readonly revisionsRoot: string;
  /** Tokens for the candidates' MCP calls. @defaultValue none: candidates get no tools */
  readonly mcp?: McpExecutions;
  mcpEndpoint(): string;
  /** Where promotions are committed; undefined when apps come from Kubernetes (promotions are refused). */
  readonly promotions?: PromotionWriter;
  /** The ledger's turns, for decisions. @defaultValue none: decisions are logged only */
  readonly turns?: TurnKeeper;
  /** Owner name of the generation lease. @defaultValue a random id */
  readonly instanceId?: string;
}

/** What `uhlp optimize status` shows of one component. */
export interface ComponentStatus {
  readonly app: string;
  readonly component: string;
  readonly mode: OptimizeSpec['mode'];
  readonly handler: ComponentSpec['handler'];
  readonly stage: OracleStage;
  readonly reason?: string;
  readonly revision?: string;
  readonly samples?: OracleSampleStats & { readonly perMinute: number; readonly stable: boolean };
  readonly candidate?: RecordCandidate;
  readonly promotion?: OracleRecord['promotion'];
  readonly rollback?: OracleRecord['rollback'];
  /** The current stage's live comparisons. */
  readonly live: { readonly compared: number; readonly agreements: number; readonly disagreements: number; readonly declines: number; readonly agreement: number | null };
  readonly totals: OracleCounters;
  readonly codegen: { readonly attempts: number; readonly tokens: number };
  /**
   * The candidates judged, newest first; asked for one component, each with its
   * module (`source`) and the samples it got wrong, to be read before a promotion.
   */
  readonly candidates: ReadonlyArray<Omit<CandidateRecord, 'source' | 'disagreements'> & Partial<Pick<CandidateRecord, 'source' | 'disagreements'>>>;
}

export type OracleCommand = 'promote' | 'reject' | 'rollback';

/** Candidates kept per component. */
const KEPT_CANDIDATES = 20;
/** How long one core may hold a component's generation before another may take it over. */
const GENERATION_LEASE_MS = 15 * 60_000;

export class OptimizationOracle {
  readonly turns: OracleTurns;
  private readonly records: OracleRecords;
  private readonly recorder: SampleRecorder;
  private readonly decisions: OracleDecisions;
  private readonly executor: ComponentExecutor;
  private readonly owner: string;
  /** Components with work of this core under way (generation, rollback, adoption), by `app\0component`. */
  private readonly busy = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: OptimizationOracleOptions) {
    const { store, metrics, logger } = options;
    this.records = new OracleRecords(store.oracle, metrics, logger);
    this.recorder = new SampleRecorder({ store: store.oracle, metrics, logger, revisionsRoot: options.revisionsRoot });
    this.decisions = new OracleDecisions(logger, options.turns);
    this.executor = new ComponentExecutor(options.sandboxes, metrics, logger);
    this.owner = options.instanceId ?? `oracle-${Math.random().toString(36).slice(2)}`;
    this.turns = new OracleTurns({
      records: this.records,
      recorder: this.recorder,
      store: store.oracle,
      metrics,
      logger,
      maxComparisons: options.config.maxComparisons,
      onVerdict: (app, component, stage, verdict) => this.onVerdict(app, component, stage, verdict),
      onUnknownPromotion: (app, component) => this.adopt(app, component),
    });
  }

  /** Starts the scans. */
  start(): void {
    const tick = (): void => {
      this.scanning = this.scan()
        .catch((error: unknown) => this.options.logger.warn({ err: error }, 'oracle scan failed'))
        .finally(() => {
          this.scanning = undefined;
          if (!this.closed) this.timer = setTimeout(tick, this.options.config.intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, this.options.config.intervalMs).unref();
  }

  /** Stops scanning and waits for the work under way (generations, comparisons) to end. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.scanning;
    await Promise.allSettled([...this.busy.values()]);
    await this.turns.drain();
  }

  /** One pass over the optimized components: new revisions start sampling, hot and stable ones get code. */
  async scan(): Promise<void> {
    for (const app of this.options.registry.snapshot.apps.values()) {
      for (const component of app.components.values()) {
        if (this.closed) return;
        const optimize = activeOptimize(component.llm);
        if (component.handler !== 'LLM' || optimize === undefined) continue;
        await this.scanComponent(app, component, optimize).catch((error: unknown) =>
          this.options.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle scan of a component failed'),
        );
      }
    }
  }

  private async scanComponent(app: LoadedApp, component: ComponentSpec, optimize: OptimizeSpec): Promise<void> {
    const { store } = this.options;
    const definition = await this.recorder.definition(app, component);
    const { record } = await this.records.read(app.id, component.id);
    if (record === undefined || record.revision !== definition.revision) {
      // A new llm definition (or the first look): its samples start from nothing.
      const counters = await store.oracle.getOracleCounters(app.id, component.id);
      await this.records.update(app.id, component.id, (current) =>
        current === undefined || current.revision !== definition.revision ? newRecord(definition.revision, counters, new Date()) : undefined,
      );
      return;
    }
    if (record.stage === 'generating') return this.recoverGeneration(app, component, record);
    if (record.stage !== 'sampling' || this.busy.has(key(app.id, component.id))) return;
    const scope = { appId: app.id, componentId: component.id, revision: definition.revision };
    const { samples, stats } = await store.oracle.getOracleSamples(scope);
    if (!this.ready(app, component, optimize, stats)) return;
    const parsed = samples.map(parseSample).filter((sample): sample is OracleSample => sample !== undefined);
    // The split is by input hash: with too few inputs on the held-back side no candidate could be judged, and
    // generation would end at once, back to sampling, on every scan. Sampling goes on, with no decision, until there are.
    if (splitSamples(parsed, optimize.holdout).heldBack.length < MIN_HELD_BACK) return;
    const lease = await store.leases.acquireLease(leaseName(app.id, component.id), this.owner, GENERATION_LEASE_MS);
    if (lease === undefined) return;
    const counters = await store.oracle.getOracleCounters(app.id, component.id);
    const claimed = await this.records.update(app.id, component.id, (current) =>
      current?.stage === 'sampling' && current.revision === definition.revision ? enterStage(current, 'generating', counters, new Date()) : undefined,
    );
    if (claimed === undefined) {
      await store.leases.releaseLease(leaseName(app.id, component.id), this.owner);
      return;
    }
    this.track(app.id, component.id, this.generate(app, component, optimize, claimed, parsed, stats));
  }

  /** Hot, enough samples, stable. */
  private ready(app: LoadedApp, component: ComponentSpec, optimize: OptimizeSpec, stats: OracleSampleStats): boolean {
    return (
      stats.stored >= optimize.minSamples &&
      this.recorder.ratePerMinute(app.id, component.id) >= optimize.minRequestsPerMinute &&
      isStable(stats, optimize)
    );
  }

  /** A generation whose core is gone (its lease expired) goes back to sampling. */
  private async recoverGeneration(app: LoadedApp, component: ComponentSpec, record: OracleRecord): Promise<void> {
    if (this.busy.has(key(app.id, component.id))) return;
    if ((await this.options.store.leases.getLease(leaseName(app.id, component.id))) !== undefined) return;
    const counters = await this.options.store.oracle.getOracleCounters(app.id, component.id);
    await this.records.update(app.id, component.id, (current) =>
      current?.stage === 'generating' && current.stageSince === record.stageSince ? enterStage(current, 'sampling', counters, new Date(), 'the core generating code stopped; sampling again') : undefined,
    );
  }

  private async generate(app: LoadedApp, component: ComponentSpec, optimize: OptimizeSpec, record: OracleRecord, samples: OracleSample[], stats: OracleSampleStats): Promise<void> {
    const { store, logger } = this.options;
    const tier = app.document.spec.deploymentMode;
    const decide = (kind: DecisionKind, summary: string, details: Record<string, unknown>, externalCalls?: ExternalCall[]): void =>
      this.decisions.record({ kind, appId: app.id, tier, componentId: component.id, summary, details, ...(externalCalls ? { externalCalls } : {}) });
    try {
      const pool = codePool(app.document.spec, optimize) as PoolSpec;
      const definition = await this.recorder.definition(app, component);
      const model = this.codegenModel(app, component);
      const outcome = await generateCandidates(
        {
          app,
          component,
          optimize,
          definition,
          samples,
          model,
          maxTokens: this.options.config.codegenMaxTokens,
          spent: { attempts: record.attempts, tokens: record.codegenTokens },
          run: candidateRunner({ executor: this.executor, ...(this.options.mcp ? { mcp: this.options.mcp } : {}), mcpEndpoint: this.options.mcpEndpoint }, app, component, pool),
        },
        {
          provider: this.options.provider,
          metrics: this.options.metrics,
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
        await this.records.update(app.id, component.id, (current) =>
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
      await this.records
        .update(app.id, component.id, (current) =>
          current?.stage === 'generating' ? enterStage(current, 'sampling', counters, new Date(), `code generation failed: ${isUhlpError(error) ? `${error.code}: ` : ''}${(error as Error).message}`) : undefined,
        )
        .catch(() => undefined);
    } finally {
      await store.leases.releaseLease(leaseName(app.id, component.id), this.owner).catch(() => false);
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
    const counters = await this.options.store.oracle.getOracleCounters(app.id, component.id);
    const suggest = optimize.mode === 'suggest';
    const branch = suggest ? suggestionBranch(app.id, component.id) : undefined;
    const promotions = this.options.promotions;
    const write = async (stage: OracleStage, extra: Partial<OracleRecord>, reason?: string): Promise<void> => {
      await this.records.update(app.id, component.id, (current) =>
        current !== undefined && current.revision === record.revision && (current.stage === 'generating' || current.stage === 'suggested' || current.stage === 'refused')
          ? { ...enterStage({ ...current, attempts: record.attempts, codegenTokens: record.codegenTokens, candidate: record.candidate! }, stage, counters, new Date(), reason), ...extra }
          : undefined,
      );
    };
    if (promotions === undefined) {
      const reason = `app "${app.id}" comes from a Kubernetes AppDefinition: its spec is the resource, which the core does not write, and the core holds no push access to its Git source; apply generated code ${passed.script} by hand (uhlp optimize status shows it)`;
      await write('refused', {}, reason);
      this.decisions.record({ kind: 'refuse', appId: app.id, tier, componentId: component.id, summary: `promotion of ${app.id}/${component.id} refused: ${reason}`, details: evidence, externalCalls: calls });
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
      this.decisions.record({
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
      this.decisions.record({ kind: 'refuse', appId: app.id, tier, componentId: component.id, summary: `promotion of ${app.id}/${component.id} not committed: ${reason}`, details: evidence, externalCalls: calls });
    }
  }

  /** A stage's comparisons decided: move it on, or roll back. */
  private onVerdict(app: LoadedApp, component: ComponentSpec, stage: OracleStage, verdict: NonNullable<StageVerdict>): void {
    if ('rollback' in verdict) {
      this.rollback(app, component, 'rolled-back', verdict.rollback).catch((error: unknown) =>
        this.options.logger.error({ err: error, app: app.id, component: component.id }, 'oracle rollback failed'),
      );
      return;
    }
    void this.advance(app, component, stage, verdict.next, 'the stage reached its comparisons within the agreement').catch((error: unknown) =>
      this.options.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle stage not moved'),
    );
  }

  private async advance(app: LoadedApp, component: ComponentSpec, from: OracleStage, to: OracleStage, why: string): Promise<OracleRecord | undefined> {
    const counters = await this.options.store.oracle.getOracleCounters(app.id, component.id);
    let figures: OracleCounters | undefined;
    const moved = await this.records.update(app.id, component.id, (current) => {
      if (current?.stage !== from || current.candidate?.script !== component.jit?.script) return undefined;
      figures = stageCounts(current, counters);
      return enterStage(current, to, counters, new Date());
    });
    if (moved !== undefined) {
      this.decisions.record({
        kind: 'stage',
        appId: app.id,
        tier: app.document.spec.deploymentMode,
        componentId: component.id,
        summary: `${app.id}/${component.id}: ${from} -> ${to} (${why})`,
        details: { from, to, candidate: moved.candidate?.hash, agreements: figures?.agreements, disagreements: figures?.disagreements, declines: figures?.declines },
      });
    }
    return moved;
  }

  /**
   * Rolls a promoted component back: LLM-only at once (the record), then a
   * revert commit naming the evidence, the candidate never promoted again.
   */
  private async rollback(app: LoadedApp, component: ComponentSpec, stage: 'rolled-back' | 'rejected', reason: string): Promise<OracleRecord | undefined> {
    const id = key(app.id, component.id);
    const running = this.busy.get(id);
    if (running !== undefined) await running;
    const counters = await this.options.store.oracle.getOracleCounters(app.id, component.id);
    let from: OracleStage | undefined;
    let figures: OracleCounters | undefined;
    const rolled = await this.records.update(app.id, component.id, (current) => {
      if (current === undefined || !PROMOTED_STAGES.has(current.stage)) return undefined;
      from = current.stage;
      figures = stageCounts(current, counters);
      const rejected = [...(current.rejected ?? []), ...(current.candidate ? [current.candidate.hash] : [])].slice(-20);
      return { ...enterStage(current, stage, counters, new Date(), reason), rejected, rollback: { reason, at: new Date().toISOString() } };
    });
    if (rolled === undefined) return undefined;
    const work = this.revertCommit(app, component, rolled, from!, figures!, reason);
    this.track(app.id, component.id, work);
    await work;
    return (await this.records.read(app.id, component.id)).record;
  }

  private async revertCommit(app: LoadedApp, component: ComponentSpec, record: OracleRecord, from: OracleStage, figures: OracleCounters, reason: string): Promise<void> {
    const candidate = record.candidate;
    const evidence = { from, candidate: candidate?.hash, script: candidate?.script, agreements: figures.agreements, disagreements: figures.disagreements, declines: figures.declines, promotion: record.promotion?.commit, reason };
    let commit: string | undefined;
    let note: string | undefined;
    if (this.options.promotions === undefined || candidate === undefined) {
      note = 'no revert commit: the app does not come from a definitions repository; the LLM answers every request';
    } else {
      try {
        commit = (
          await this.options.promotions.revert({
            appId: app.id,
            componentId: component.id,
            script: candidate.script,
            message: revertMessage(app.id, component.id, record.stage, evidence),
          })
        ).commit;
      } catch (error) {
        note = `the revert commit failed (${isUhlpError(error) ? error.code : (error as Error).message}); the LLM answers every request`;
      }
    }
    await this.records.update(app.id, component.id, (current) =>
      current?.stage === record.stage && current.rollback?.at === record.rollback?.at
        ? { ...current, rollback: { ...current.rollback!, ...(commit !== undefined ? { commit } : {}) }, ...(note !== undefined ? { reason: `${reason}; ${note}` } : {}) }
        : undefined,
    );
    this.decisions.record({
      kind: record.stage === 'rejected' ? 'reject' : 'rollback',
      appId: app.id,
      tier: app.document.spec.deploymentMode,
      componentId: component.id,
      summary: `${app.id}/${component.id} rolled back from ${from}${commit ? ` by ${commit.slice(0, 12)}` : ''}: ${reason}`,
      details: { ...evidence, ...(commit !== undefined ? { commit } : {}), ...(note !== undefined ? { note } : {}) },
    });
  }

  /** A promoted component the records do not know as promoted (a merged suggestion, a commit by hand) starts its shadow. */
  private adopt(app: LoadedApp, component: ComponentSpec): void {
    const id = key(app.id, component.id);
    if (this.busy.has(id) || this.closed) return;
    const script = component.jit?.script ?? '';
    const work = (async (): Promise<void> => {
      const { jit: _jit, fallback: _fallback, ...llmForm } = component;
      const definition = await this.recorder.definition(app, { ...llmForm, handler: 'LLM', pool: component.fallback!.pool });
      const counters = await this.options.store.oracle.getOracleCounters(app.id, component.id);
      const adopted = await this.records.update(app.id, component.id, (current) => {
        if (current?.candidate?.script === script && (PROMOTED_STAGES.has(current.stage) || current.stage === 'rolled-back' || current.stage === 'rejected')) return undefined;
        const known = current?.candidate?.script === script ? current.candidate : undefined;
        const hash = known?.hash ?? /-([0-9a-f]{12})\.m?js$/.exec(script)?.[1] ?? 'unknown';
        const base = current ?? newRecord(definition.revision, counters, new Date());
        const candidate: RecordCandidate = known ?? { hash, script, agreement: 0, coverage: 0, heldBack: 0, model: 'unknown', tokensPerAnswer: 0 };
        return { ...enterStage(base, 'shadow', counters, new Date()), revision: definition.revision, candidate };
      });
      if (adopted !== undefined) {
        this.decisions.record({
          kind: 'stage',
          appId: app.id,
          tier: app.document.spec.deploymentMode,
          componentId: component.id,
          summary: `${app.id}/${component.id} serves ${script}, a promotion this oracle did not commit (a merged suggestion, or a change by hand): it enters shadow`,
          details: { script, candidate: adopted.candidate?.hash },
        });
      }
    })().catch((error: unknown) => this.options.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle could not adopt a promotion'));
    this.track(app.id, component.id, work);
  }

  /** The status of every watched component, or of one app or component. */
  async status(appId?: string, componentId?: string): Promise<ComponentStatus[]> {
    const { store } = this.options;
    const out: ComponentStatus[] = [];
    const apps = [...this.options.registry.snapshot.apps.values()].filter((app) => appId === undefined || app.id === appId);
    if (appId !== undefined && apps.length === 0) throw new UhlpError('UHLP_ORACLE_NOT_FOUND', `no application "${appId}" is loaded`, { app: appId });
    for (const app of apps) {
      for (const component of app.components.values()) {
        if (componentId !== undefined && component.id !== componentId) continue;
        const optimize = component.llm?.optimize;
        const promoted = component.handler === 'JIT' && component.fallback !== undefined;
        if (!promoted && activeOptimize(component.llm) === undefined) continue;
        const { record } = await this.records.read(app.id, component.id);
        const totals = await store.oracle.getOracleCounters(app.id, component.id);
        const live = record !== undefined ? stageCounts(record, totals) : totals;
        const compared = live.agreements + live.disagreements;
        let samples: ComponentStatus['samples'];
        if (record !== undefined && optimize !== undefined) {
          const { stats } = await store.oracle.getOracleSamples({ appId: app.id, componentId: component.id, revision: record.revision });
          samples = { ...stats, perMinute: this.recorder.ratePerMinute(app.id, component.id), stable: isStable(stats, optimize) };
        }
        const candidates = (await store.oracle.listOracleCandidates(app.id, component.id)).flatMap((json) => {
          try {
            const kept = JSON.parse(json) as CandidateRecord;
            const { source: _source, disagreements: _d, ...figures } = kept;
            const shown = componentId !== undefined ? kept : figures;
            return [record?.rejected?.includes(figures.hash) ? { ...shown, verdict: 'rejected' as never } : shown];
          } catch {
            return [];
          }
        });
        out.push({
          app: app.id,
          component: component.id,
          mode: optimize?.mode ?? 'off',
          handler: component.handler,
          stage: record?.stage ?? (promoted ? 'shadow' : 'sampling'),
          ...(record?.reason !== undefined ? { reason: record.reason } : {}),
          ...(record !== undefined ? { revision: record.revision } : {}),
          ...(samples !== undefined ? { samples } : {}),
          ...(record?.candidate !== undefined ? { candidate: record.candidate } : {}),
          ...(record?.promotion !== undefined ? { promotion: record.promotion } : {}),
          ...(record?.rollback !== undefined ? { rollback: record.rollback } : {}),
          live: { compared, agreements: live.agreements, disagreements: live.disagreements, declines: live.declines, agreement: compared > 0 ? live.agreements / compared : null },
          totals,
          codegen: { attempts: record?.attempts ?? 0, tokens: record?.codegenTokens ?? 0 },
          candidates,
        });
      }
    }
    if (componentId !== undefined && out.length === 0) {
      throw new UhlpError('UHLP_ORACLE_NOT_FOUND', `component "${componentId}" of "${appId}" is not optimized (llm.optimize.mode off) or does not exist`, { app: appId, component: componentId });
    }
    return out;
  }

  /**
   * An operator's command: `promote` commits a suggested candidate to the served
   * branch, or moves a promoted component to its next stage; `rollback` reverts
   * a promotion; `reject` does too, or stops a component's optimization at its
   * current revision.
   */
  async command(command: OracleCommand, appId: string, componentId: string): Promise<ComponentStatus> {
    const app = this.options.registry.snapshot.apps.get(appId);
    const component = app?.components.get(componentId);
    if (app === undefined || component === undefined) throw new UhlpError('UHLP_ORACLE_NOT_FOUND', `no component "${componentId}" of a loaded application "${appId}"`, { app: appId, component: componentId });
    const { record } = await this.records.read(appId, componentId);
    const stage = record?.stage;
    const nothing = (what: string): never => {
      throw new UhlpError('UHLP_ORACLE_NOTHING_TO_DO', `${appId}/${componentId} is at stage ${stage ?? 'none'}: ${what}`, { stage: stage ?? null });
    };
    const promoted = component.handler === 'JIT' && component.fallback !== undefined;
    const operator = `by an operator (uhlp optimize ${command})`;
    switch (command) {
      case 'rollback':
        if (!promoted || stage === undefined || !PROMOTED_STAGES.has(stage)) nothing('nothing promoted to roll back');
        await this.rollback(app, component, 'rolled-back', `rolled back ${operator}`);
        break;
      case 'reject':
        if (promoted && stage !== undefined && PROMOTED_STAGES.has(stage)) await this.rollback(app, component, 'rejected', `rejected ${operator}`);
        else {
          const counters = await this.options.store.oracle.getOracleCounters(appId, componentId);
          const rejected = await this.records.update(appId, componentId, (current) =>
            current === undefined || current.stage === 'rejected' || current.stage === 'generating'
              ? undefined
              : { ...enterStage(current, 'rejected', counters, new Date(), `rejected ${operator}`), rejected: [...(current.rejected ?? []), ...(current.candidate ? [current.candidate.hash] : [])].slice(-20) },
          );
          if (rejected === undefined) nothing('nothing to reject (or code is being generated: reject it once it is judged)');
          this.decisions.record({ kind: 'reject', appId, tier: app.document.spec.deploymentMode, componentId, summary: `${appId}/${componentId} rejected ${operator} at ${stage}`, details: { stage, candidate: record?.candidate?.hash } });
        }
        break;
      case 'promote':
        if (promoted && (stage === 'shadow' || stage === 'canary')) {
          await this.advance(app, component, stage, stage === 'shadow' ? 'canary' : 'full', operator);
        } else if (!promoted && (stage === 'suggested' || stage === 'refused') && record?.candidate !== undefined) {
          await this.promoteSuggestion(app, component, record);
        } else {
          nothing('no suggested candidate to promote, and no shadow or canary to move on');
        }
        break;
    }
    return (await this.status(appId, componentId))[0]!;
  }

  /** Commits a suggested (or refused) candidate to the served branch. */
  private async promoteSuggestion(app: LoadedApp, component: ComponentSpec, record: OracleRecord): Promise<void> {
    const optimize = activeOptimize(component.llm);
    const pool = optimize !== undefined ? codePool(app.document.spec, optimize) : undefined;
    if (optimize === undefined || pool === undefined) throw new UhlpError('UHLP_ORACLE_NOTHING_TO_DO', `${app.id}/${component.id} is not optimized any more`);
    const kept = (await this.options.store.oracle.listOracleCandidates(app.id, component.id))
      .map((json) => JSON.parse(json) as CandidateRecord)
      .find((candidate) => candidate.hash === record.candidate!.hash);
    if (kept === undefined) throw new UhlpError('UHLP_ORACLE_NOTHING_TO_DO', `candidate ${record.candidate!.hash.slice(0, 12)} is no longer kept; let the oracle judge a new one`);
    const evidence = { candidate: kept.hash, script: kept.script, model: kept.model, attempt: kept.attempt, heldBack: kept.heldBack, agreement: kept.agreement, coverage: kept.coverage, revision: record.revision, promotedBy: 'operator' };
    await this.commitCandidate(app, component, { ...optimize, mode: 'auto' }, record, kept, evidence, pool, []);
    const after = (await this.records.read(app.id, component.id)).record;
    if (after?.stage === 'refused') throw new UhlpError('UHLP_ORACLE_PROMOTION_REFUSED', after.reason ?? 'the promotion was refused');
  }

  private codegenModel(app: LoadedApp, component: ComponentSpec): string {
    return (
      this.options.config.codegenModel ??
      this.options.provider.defaultModel ??
      component.llm?.model ??
      app.document.spec.capabilities?.llm?.models[0] ??
      'default'
    );
  }

  /** Keeps work of a component under way (one at a time per component on this core). */
  private track(appId: string, componentId: string, work: Promise<void>): void {
    const id = key(appId, componentId);
    const tracked = work.finally(() => {
      if (this.busy.get(id) === tracked) this.busy.delete(id);
    });
    this.busy.set(id, tracked);
  }
}

/** Stable: enough fresh repeats of held inputs, and no more of them answered differently than the agreement allows. */
export function isStable(stats: OracleSampleStats, optimize: Pick<OptimizeSpec, 'minRepeats' | 'agreement'>): boolean {
  return stats.repeats >= optimize.minRepeats && stats.unstable <= allowedDisagreements(optimize.agreement, stats.repeats);
}

function key(appId: string, componentId: string): string {
  return `${appId}\0${componentId}`;
}

function leaseName(appId: string, componentId: string): string {
  return `oracle-generate:${appId}/${componentId}`;
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

function revertMessage(appId: string, componentId: string, stage: OracleStage, evidence: Record<string, unknown>): string {
  return [
    `oracle: revert generated code of ${appId}/${componentId} (${String(evidence['candidate']).slice(0, 12)})`,
    '',
    `${stage === 'rejected' ? 'Rejected' : 'Rolled back'} in ${String(evidence['from'])}: ${String(evidence['reason'])}.`,
    'The component is an LLM component again; the candidate is not promoted again.',
    '',
    'Evidence:',
    `  candidate:      ${String(evidence['candidate'])} (${String(evidence['script'])})`,
    `  promotion:      ${String(evidence['promotion'])}`,
    `  comparisons:    ${String(evidence['agreements'])} agreed, ${String(evidence['disagreements'])} disagreed, ${String(evidence['declines'])} declined in ${String(evidence['from'])}`,
  ].join('\n');
}
