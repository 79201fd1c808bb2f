/**
 * The live comparisons of a promoted component: its code's answer against its
 * LLM's, each one counted towards its stage's verdict (stage-rules.ts), which
 * moves the stage on or rolls the promotion back. Comparisons run off the
 * request path, bounded in number; past the bound one is skipped (and counted).
 * Whatever the code answers is checked against the output schema before it
 * counts as an answer, or is served.
 */
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import { DECLINED_CODE } from '../contract/generated-code.js';
import type { ExecutionResult, ExecutionView } from '../execution/execution-stage.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { OracleCounterName, OracleStore } from '../state/oracle-store.js';
import { stageCounts, type OracleStage } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import { sameOutput } from './oracle-sample.js';
import type { SampleRecorder } from './sample-recorder.js';
import { judgeStage, type StageVerdict } from './stage-rules.js';
import { DEFAULT_OPTIMIZE } from './default-optimize.js';

/** An execution's outcome, its failure included: a comparison counts both. */
export type Settled = { result: ExecutionResult } | { error: unknown };

export interface LiveComparisonsDeps {
  readonly records: OracleRecords;
  readonly recorder: SampleRecorder;
  readonly store: OracleStore;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Comparisons running at once at most; past it a comparison is skipped (and counted). */
  readonly maxComparisons: number;
  /** A stage's comparisons decided: move it on, or roll the promotion back. */
  onVerdict(app: LoadedApp, component: ComponentSpec, stage: OracleStage, verdict: NonNullable<StageVerdict>): void;
}

export class LiveComparisons {
  private readonly background = new Set<Promise<void>>();

  constructor(private readonly deps: LiveComparisonsDeps) {}

  /** Resolves when the comparisons under way have ended (shutdown). */
  async drain(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  /** Whether the code's answer may be served: a generic answer that passes the output schema. */
  async serves(app: LoadedApp, llm: ExecutionView, ran: Settled): Promise<boolean> {
    if (!('result' in ran) || ran.result.response.resultType !== 'generic') return false;
    const definition = await this.deps.recorder.definition(app, llm.component).catch(() => undefined);
    return definition !== undefined && (definition.validate === undefined || definition.validate(ran.result.response.data));
  }

  /** Compares the code's answer (or failure) with the LLM's `expected` output, and counts it. */
  async compare(app: LoadedApp, component: ComponentSpec, llm: ExecutionView, stage: OracleStage, expected: unknown, code: Settled): Promise<void> {
    if ('result' in code && isDeclined(code.result.response)) {
      this.outcome(app, component, stage, 'declined');
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

  /** Counts a comparison that decided nothing: the code declined, or the LLM gave no answer to compare with. */
  outcome(app: LoadedApp, component: ComponentSpec, stage: OracleStage, outcome: 'declined' | 'skipped'): void {
    this.deps.metrics.oracleComparisons.inc({ app: app.id, component: component.id, stage, outcome });
  }

  /** Counts one comparison and applies the stage's verdict, if it has one now. */
  async tally(app: LoadedApp, component: ComponentSpec, stage: OracleStage, counter: 'agreements' | 'disagreements'): Promise<void> {
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

  /** Adds to the component's counters without waiting (hits, declines, tokens saved). */
  count(app: LoadedApp, component: ComponentSpec, deltas: Partial<Record<OracleCounterName, number>>): void {
    if (deltas.tokensSaved) this.deps.metrics.oracleTokensSaved.inc({ app: app.id, component: component.id }, deltas.tokensSaved);
    this.deps.store.incrOracleCounters(app.id, component.id, deltas).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle counters not updated');
    });
  }

  /** Runs a comparison off the request path, unless too many already run. */
  inBackground(app: LoadedApp, component: ComponentSpec, stage: OracleStage, work: () => Promise<void>): void {
    if (this.background.size >= this.deps.maxComparisons) {
      this.outcome(app, component, stage, 'skipped');
      return;
    }
    const running: Promise<void> = work()
      .catch((error: unknown) => this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle comparison failed'))
      .finally(() => this.background.delete(running));
    this.background.add(running);
  }
}

/** The execution's outcome, its failure as a value. */
export async function settle(running: Promise<ExecutionResult>): Promise<Settled> {
  try {
    return { result: await running };
  } catch (error) {
    return { error };
  }
}

/** The generated code declined the input (DECLINED_CODE): the LLM answers it. */
export function isDeclined(response: ExecuteResponse): boolean {
  return response.resultType === 'error' && (response.data as { code?: unknown } | null)?.code === DECLINED_CODE;
}
