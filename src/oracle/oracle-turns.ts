/**
 * The oracle's part in a turn (the turn pipeline asks it for a plan; most
 * turns get none and run as they always do):
 *
 * - An optimized LLM component that is still sampling answers as usual, and
 *   its answer becomes a sample (sample-recorder.ts) after the client has it.
 * - A promoted component (JIT with an llm fallback) runs by its stage
 *   (stage-rules.ts): the LLM answers in shadow and the code is compared after
 *   the answer; in the canary and in full the code answers, its declines and
 *   failures are answered by the LLM, and a share of its answers is compared
 *   with the LLM after the answer. Comparisons run off the request path,
 *   bounded in number; each one counts towards the stage's verdict, which
 *   moves the stage or rolls the promotion back.
 *
 * Whatever the code answers is checked against the output schema before it is
 * served; an answer that fails it is never served (the LLM answers instead).
 */
import { Value } from '@sinclair/typebox/value';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import { OptimizeSpec, type CapabilitiesSpec, type ComponentSpec, type PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { DECLINED_CODE } from '../contract/generated-code.js';
import type { OracleCounterName, OracleStore } from '../state/oracle-store.js';
import type { TurnEvent } from '../turns/turn-event.js';
import { activeOptimize } from '../contract/llm-component-schema.js';
import { candidateCapabilities } from './eligibility.js';
import { PROMOTED_STAGES, stageCounts, type OracleRecord, type OracleStage } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import { sameOutput } from './oracle-sample.js';
import type { SampleRecorder } from './sample-recorder.js';
import { judgeStage, routeTurn, type StageVerdict } from './stage-rules.js';

/** One form a turn's component runs in: the component itself, or a promoted component's llm fallback. */
export interface ExecutionView {
  readonly component: ComponentSpec;
  readonly pool: PoolSpec;
  /** Runs after the turn's answer (a comparison): its outputs are checked, not kept, and its evidence is not the turn's. */
  readonly background?: boolean;
  /** The capabilities of its MCP token. @defaultValue the app's */
  readonly capabilities?: CapabilitiesSpec;
}

/** A valid /execute answer, as the pipeline's execution gives it (its mcp_calls are the core's own count). */
export interface ExecutionResult {
  readonly response: ExecuteResponse;
  readonly text: string;
}

/** Runs one execution of the turn in the view's form and pool. */
export type RunExecution = (view: ExecutionView) => Promise<ExecutionResult>;

export interface TurnPlan {
  /** Runs the turn with `execute`; resolves with the answer the client gets. */
  run(execute: RunExecution): Promise<ExecutionResult>;
}

/** What the turn pipeline asks of the oracle. */
export interface TurnOracle {
  /** The plan of a turn, or undefined when the oracle has nothing to do with it (cheap, synchronous). */
  plan(event: TurnEvent, turn: { readonly sessionId: string; readonly turnNumber: number }): TurnPlan | undefined;
}

export interface OracleTurnsDeps {
  readonly records: OracleRecords;
  readonly recorder: SampleRecorder;
  readonly store: OracleStore;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Comparisons running at once at most; past it a comparison is skipped (and counted). */
  readonly maxComparisons: number;
  /** A stage's comparisons decided: move it on, or roll the promotion back. */
  onVerdict(app: LoadedApp, component: ComponentSpec, stage: OracleStage, verdict: NonNullable<StageVerdict>): void;
  /** A promoted component the records do not know as promoted (a merged suggestion, a hand-made commit): start its shadow. */
  onUnknownPromotion(app: LoadedApp, component: ComponentSpec): void;
}

const DEFAULT_OPTIMIZE = Value.Default(OptimizeSpec, {}) as OptimizeSpec;

export class OracleTurns implements TurnOracle {
  private readonly views = new WeakMap<LoadedApp, Map<string, { code: ExecutionView; llm: ExecutionView }>>();
  private readonly background = new Set<Promise<void>>();

  constructor(private readonly deps: OracleTurnsDeps) {}

  plan(event: TurnEvent, turn: { readonly sessionId: string; readonly turnNumber: number }): TurnPlan | undefined {
    const { app, component } = event;
    if (component.handler === 'LLM') {
      const optimize = activeOptimize(component.llm);
      if (optimize === undefined) return undefined;
      const record = this.deps.records.cached(app.id, component.id);
      // Only a component still being sampled needs its answers.
      if (record !== undefined && record !== 'unknown' && record.stage !== 'sampling' && record.stage !== 'generating') return undefined;
      return {
        run: async (execute) => {
          const result = await execute(event);
          const sampled = { app, component, optimize, requestDataJson: event.requestDataJson, sessionId: turn.sessionId, turnNumber: turn.turnNumber };
          void this.deps.recorder.observe(sampled, result.response);
          return result;
        },
      };
    }
    if (component.handler !== 'JIT' || component.fallback === undefined || component.llm === undefined) return undefined;
    const views = this.promotedViews(app, component);
    if (views === undefined) return undefined;
    const { code, llm } = views;
    const record = this.deps.records.cached(app.id, component.id);
    const stage = this.stageOf(app, component, record);
    const optimize = component.llm.optimize ?? DEFAULT_OPTIMIZE;
    const route = routeTurn(stage, optimize, Math.random());
    return {
      run: async (execute) => {
        if (route.primary === 'llm') {
          const answer = await execute(llm);
          if (route.compare && answer.response.resultType === 'generic') {
            const expected = answer.response.data;
            this.inBackground(app, component, stage, async () => this.compare(app, component, llm, stage, expected, await this.settle(execute({ ...code, background: true }))));
          }
          return answer;
        }
        const ran = await this.settle(execute(code));
        if (await this.serves(app, llm, ran)) {
          const result = (ran as { result: ExecutionResult }).result;
          this.count(app, component, { hits: 1, tokensSaved: this.tokensPerAnswer(record) });
          if (route.compare) {
            this.inBackground(app, component, stage, async () => {
              const answer = await execute({ ...llm, background: true });
              if (answer.response.resultType === 'generic') await this.compare(app, component, llm, stage, answer.response.data, { result });
              else this.deps.metrics.oracleComparisons.inc({ app: app.id, component: component.id, stage, outcome: 'skipped' });
            });
          }
          return result;
        }
        if ('result' in ran && isDeclined(ran.result.response)) {
          this.count(app, component, { declines: 1 });
          this.deps.metrics.oracleComparisons.inc({ app: app.id, component: component.id, stage, outcome: 'declined' });
        } else {
          // The code failed where it was to answer: the LLM answers, and it counts against the code.
          await this.tally(app, component, stage, 'disagreements');
        }
        return execute(llm);
      },
    };
  }

  /** Resolves when the comparisons under way have ended (shutdown). */
  async drain(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  /** The stage a promoted component runs in: its record's when the record knows its code, else shadow. */
  private stageOf(app: LoadedApp, component: ComponentSpec, record: OracleRecord | undefined | 'unknown'): OracleStage {
    if (record === 'unknown') return 'shadow';
    const known = record !== undefined && record.candidate?.script === component.jit?.script;
    if (known && (PROMOTED_STAGES.has(record.stage) || record.stage === 'rolled-back' || record.stage === 'rejected')) return record.stage;
    this.deps.onUnknownPromotion(app, component);
    return 'shadow';
  }

  private tokensPerAnswer(record: OracleRecord | undefined | 'unknown'): number {
    return record !== undefined && record !== 'unknown' ? Math.round(record.candidate?.tokensPerAnswer ?? 0) : 0;
  }

  /**
   * A promoted component's two forms: its code, with the app's capabilities
   * narrowed to the component's tools, and its llm fallback. One object each
   * per app revision: execution contexts are cached by them.
   */
  private promotedViews(app: LoadedApp, component: ComponentSpec): { code: ExecutionView; llm: ExecutionView } | undefined {
    let byId = this.views.get(app);
    if (byId === undefined) {
      byId = new Map();
      this.views.set(app, byId);
    }
    let views = byId.get(component.id);
    if (views === undefined) {
      const codePool = app.pools.get(component.pool);
      const llmPool = app.pools.get(component.fallback!.pool);
      if (codePool === undefined || llmPool === undefined) return undefined;
      const { jit: _jit, fallback: _fallback, ...rest } = component;
      views = {
        code: { component, pool: codePool, capabilities: candidateCapabilities(app.document.spec.capabilities ?? {}, component.llm?.tools ?? []) },
        llm: { component: { ...rest, handler: 'LLM', pool: llmPool.name }, pool: llmPool },
      };
      byId.set(component.id, views);
    }
    return views;
  }

  /** Whether the code's answer may be served: a generic answer that passes the output schema. */
  private async serves(app: LoadedApp, llm: ExecutionView, ran: Settled): Promise<boolean> {
    if (!('result' in ran) || ran.result.response.resultType !== 'generic') return false;
    const definition = await this.deps.recorder.definition(app, llm.component).catch(() => undefined);
    return definition !== undefined && (definition.validate === undefined || definition.validate(ran.result.response.data));
  }

  private async settle(running: Promise<ExecutionResult>): Promise<Settled> {
    try {
      return { result: await running };
    } catch (error) {
      return { error };
    }
  }

  /** Compares the code's answer (or failure) with the LLM's `expected` output, and counts it. */
  private async compare(app: LoadedApp, component: ComponentSpec, llm: ExecutionView, stage: OracleStage, expected: unknown, code: Settled): Promise<void> {
    if ('result' in code && isDeclined(code.result.response)) {
      this.deps.metrics.oracleComparisons.inc({ app: app.id, component: component.id, stage, outcome: 'declined' });
      this.count(app, component, { declines: 1 });
      return;
    }
    const agrees = (await this.serves(app, llm, code)) && 'result' in code && sameOutput(code.result.response.data, expected);
    if (!agrees) {
      const got = 'result' in code ? code.result.response.data : { error: String((code.error as Error)?.message ?? code.error) };
      this.deps.logger.warn({ oracle: 'disagreement', app: app.id, component: component.id, stage, expected, got }, 'oracle: generated code disagreed with the LLM');
    }
    await this.tally(app, component, stage, agrees ? 'agreements' : 'disagreements');
  }

  /** Counts one comparison and applies the stage's verdict, if it has one now. */
  private async tally(app: LoadedApp, component: ComponentSpec, stage: OracleStage, counter: 'agreements' | 'disagreements'): Promise<void> {
    const labels = { app: app.id, component: component.id, stage };
    this.deps.metrics.oracleComparisons.inc({ ...labels, outcome: counter === 'agreements' ? 'agree' : 'disagree' });
    if (counter === 'disagreements') this.deps.metrics.oracleDisagreements.inc(labels);
    try {
      const counters = await this.deps.store.incrOracleCounters(app.id, component.id, { [counter]: 1 });
      const { record } = await this.deps.records.read(app.id, component.id);
      if (record === undefined || record.stage !== stage || record.candidate?.script !== component.jit?.script) return;
      const verdict = judgeStage(stage, stageCounts(record, counters), component.llm?.optimize ?? DEFAULT_OPTIMIZE);
      if (verdict !== undefined) this.deps.onVerdict(app, component, stage, verdict);
    } catch (error) {
      this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle comparison not counted');
    }
  }

  private count(app: LoadedApp, component: ComponentSpec, deltas: Partial<Record<OracleCounterName, number>>): void {
    if (deltas.tokensSaved) this.deps.metrics.oracleTokensSaved.inc({ app: app.id, component: component.id }, deltas.tokensSaved);
    this.deps.store.incrOracleCounters(app.id, component.id, deltas).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle counters not updated');
    });
  }

  /** Runs a comparison off the request path, unless too many already run. */
  private inBackground(app: LoadedApp, component: ComponentSpec, stage: OracleStage, work: () => Promise<void>): void {
    if (this.background.size >= this.deps.maxComparisons) {
      this.deps.metrics.oracleComparisons.inc({ app: app.id, component: component.id, stage, outcome: 'skipped' });
      return;
    }
    const running: Promise<void> = work()
      .catch((error: unknown) => this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle comparison failed'))
      .finally(() => this.background.delete(running));
    this.background.add(running);
  }
}

type Settled = { result: ExecutionResult } | { error: unknown };

function isDeclined(response: ExecuteResponse): boolean {
  return response.resultType === 'error' && (response.data as { code?: unknown } | null)?.code === DECLINED_CODE;
}
