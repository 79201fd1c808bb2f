/**
 * The oracle's part in turns, as decorators of the execution stage chosen
 * when an app loads (most components get none and run as they always do):
 *
 * - An optimized LLM component that is still sampling answers as usual, and
 *   its answer becomes a sample (sample-recorder.ts) after the client has it.
 * - A promoted component (JIT with an llm fallback) runs by its stage
 *   (stage-rules.ts): the LLM answers in shadow and the code is compared after
 *   the answer; in the canary and in full the code answers, its declines and
 *   failures are answered by the LLM, and a share of its answers is compared
 *   with the LLM after the answer (live-comparisons.ts).
 *
 * Whatever the code answers is checked against the output schema before it is
 * served; an answer that fails it is never served (the LLM answers instead).
 */
import type { CapabilitiesSpec, ComponentSpec, OptimizeSpec } from '../apps/schema/app-definition-schema.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { activeOptimize } from '../contract/llm-component-schema.js';
import type { ExecutionCall, ExecutionDecorator, ExecutionResult, ExecutionStage, ExecutionView } from '../execution/execution-stage.js';
import { DEFAULT_OPTIMIZE } from './default-optimize.js';
import { candidateCapabilities } from './eligibility.js';
import { isDeclined, settle, type LiveComparisons } from './live-comparisons.js';
import { PROMOTED_STAGES, type OracleRecord, type OracleStage } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import type { SampleRecorder } from './sample-recorder.js';
import { routeTurn } from './stage-rules.js';

export interface OracleExecutionsDeps {
  readonly records: OracleRecords;
  readonly recorder: SampleRecorder;
  readonly comparisons: LiveComparisons;
  /** A promoted component the records do not know as promoted (a merged suggestion, a hand-made commit): start its shadow. */
  onUnknownPromotion(app: LoadedApp, component: ComponentSpec): void;
}

export class OracleExecutions implements ExecutionDecorator {
  constructor(private readonly deps: OracleExecutionsDeps) {}

  decorate(app: LoadedApp, component: ComponentSpec, inner: ExecutionStage): ExecutionStage {
    if (component.handler === 'LLM') {
      const optimize = activeOptimize(component.llm);
      return optimize === undefined ? inner : new SampledExecution(this.deps, app, component, optimize, inner);
    }
    if (component.handler !== 'JIT' || component.fallback === undefined || component.llm === undefined) return inner;
    const codePool = app.pools.get(component.pool);
    const llmPool = app.pools.get(component.fallback.pool);
    if (codePool === undefined || llmPool === undefined) return inner;
    // A promoted component's two forms, one object each per loaded app: execution contexts are cached by them.
    const { jit: _jit, fallback: _fallback, ...rest } = component;
    const capabilities: CapabilitiesSpec = candidateCapabilities(app.document.spec.capabilities ?? {}, component.llm.tools ?? []);
    const code: ExecutionView = { component, pool: codePool, capabilities };
    const llm: ExecutionView = { component: { ...rest, handler: 'LLM', pool: llmPool.name }, pool: llmPool };
    return new PromotedExecution(this.deps, app, component, { code, llm }, inner);
  }
}

/** An optimized LLM component: its answers are sampled while its record still samples. */
class SampledExecution implements ExecutionStage {
  constructor(
    private readonly deps: OracleExecutionsDeps,
    private readonly app: LoadedApp,
    private readonly component: ComponentSpec,
    private readonly optimize: OptimizeSpec,
    private readonly inner: ExecutionStage,
  ) {}

  async execute(call: ExecutionCall): Promise<ExecutionResult> {
    const { app, component } = this;
    const record = this.deps.records.cached(app.id, component.id);
    // Only a component still being sampled needs its answers.
    if (record !== undefined && record !== 'unknown' && record.stage !== 'sampling' && record.stage !== 'generating') return this.inner.execute(call);
    const result = await this.inner.execute(call);
    const { event, turn } = call;
    const sampled = { app, component, optimize: this.optimize, requestDataJson: event.requestDataJson, sessionId: turn.sessionId, turnNumber: turn.turnNumber };
    void this.deps.recorder.observe(sampled, result.response);
    return result;
  }
}

/** A promoted component: its code or its LLM answers, as its stage routes the turn. */
class PromotedExecution implements ExecutionStage {
  private readonly optimize: OptimizeSpec;

  constructor(
    private readonly deps: OracleExecutionsDeps,
    private readonly app: LoadedApp,
    private readonly component: ComponentSpec,
    private readonly views: { readonly code: ExecutionView; readonly llm: ExecutionView },
    private readonly inner: ExecutionStage,
  ) {
    this.optimize = component.llm?.optimize ?? DEFAULT_OPTIMIZE;
  }

  async execute(call: ExecutionCall): Promise<ExecutionResult> {
    const { app, component, inner } = this;
    const { code, llm } = this.views;
    const { comparisons } = this.deps;
    const record = this.deps.records.cached(app.id, component.id);
    const stage = this.stageOf(record);
    const route = routeTurn(stage, this.optimize, Math.random());
    if (route.primary === 'llm') {
      const answer = await inner.execute({ ...call, view: llm });
      if (route.compare && answer.response.resultType === 'generic') {
        const expected = answer.response.data;
        comparisons.inBackground(app, component, stage, async () =>
          comparisons.compare(app, component, llm, stage, expected, await settle(inner.execute({ ...call, view: { ...code, background: true } }))),
        );
      }
      return answer;
    }
    const ran = await settle(inner.execute({ ...call, view: code }));
    if (await comparisons.serves(app, llm, ran)) {
      const result = (ran as { result: ExecutionResult }).result;
      comparisons.count(app, component, { hits: 1, tokensSaved: tokensPerAnswer(record) });
      if (route.compare) {
        comparisons.inBackground(app, component, stage, async () => {
          const answer = await inner.execute({ ...call, view: { ...llm, background: true } });
          if (answer.response.resultType === 'generic') await comparisons.compare(app, component, llm, stage, answer.response.data, { result });
          else comparisons.outcome(app, component, stage, 'skipped');
        });
      }
      return result;
    }
    if ('result' in ran && isDeclined(ran.result.response)) {
      comparisons.count(app, component, { declines: 1 });
      comparisons.outcome(app, component, stage, 'declined');
    } else {
      // The code failed where it was to answer: the LLM answers, and it counts against the code.
      await comparisons.tally(app, component, stage, 'disagreements');
    }
    return inner.execute({ ...call, view: llm });
  }

  /** The stage a promoted component runs in: its record's when the record knows its code, else shadow. */
  private stageOf(record: OracleRecord | undefined | 'unknown'): OracleStage {
    if (record === 'unknown') return 'shadow';
    const known = record !== undefined && record.candidate?.script === this.component.jit?.script;
    if (known && (PROMOTED_STAGES.has(record.stage) || record.stage === 'rolled-back' || record.stage === 'rejected')) return record.stage;
    this.deps.onUnknownPromotion(this.app, this.component);
    return 'shadow';
  }
}

function tokensPerAnswer(record: OracleRecord | undefined | 'unknown'): number {
  return record !== undefined && record !== 'unknown' ? Math.round(record.candidate?.tokensPerAnswer ?? 0) : 0;
}
