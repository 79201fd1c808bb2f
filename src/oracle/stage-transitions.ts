/**
 * How a promoted component moves between stages (docs/oracle.md): on to its
 * next stage when its live comparisons decide it (or an operator says so),
 * back to the LLM by a revert commit when they go wrong (or an operator rolls
 * it back or rejects it), and into shadow when it serves code this oracle did
 * not commit (a merged suggestion, a change by hand). Every move is a
 * compare-and-set of the component's record and a decision in the app's ledger.
 */
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { Logger } from '../logger.js';
import { isUhlpError } from '../shared/errors.js';
import type { OracleCounters, OracleStore } from '../state/oracle-store.js';
import type { ComponentWork } from './component-work.js';
import type { PromotionWriter } from './git-promotion.js';
import type { OracleDecisions } from './oracle-decisions.js';
import { enterStage, newRecord, PROMOTED_STAGES, stageCounts, type OracleRecord, type OracleStage, type RecordCandidate } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import type { SampleRecorder } from './sample-recorder.js';
import type { StageVerdict } from './stage-rules.js';

export interface StageTransitionsDeps {
  readonly store: OracleStore;
  readonly records: OracleRecords;
  readonly recorder: SampleRecorder;
  readonly decisions: OracleDecisions;
  readonly work: ComponentWork;
  readonly logger: Logger;
  /** Where revert commits go; undefined when apps come from Kubernetes (the LLM answers, with no commit). */
  readonly promotions?: PromotionWriter;
}

export class StageTransitions {
  constructor(private readonly deps: StageTransitionsDeps) {}

  /** A stage's comparisons decided: move it on, or roll back. */
  onVerdict(app: LoadedApp, component: ComponentSpec, stage: OracleStage, verdict: NonNullable<StageVerdict>): void {
    if ('rollback' in verdict) {
      this.rollback(app, component, 'rolled-back', verdict.rollback).catch((error: unknown) =>
        this.deps.logger.error({ err: error, app: app.id, component: component.id }, 'oracle rollback failed'),
      );
      return;
    }
    void this.advance(app, component, stage, verdict.next, 'the stage reached its comparisons within the agreement').catch((error: unknown) =>
      this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle stage not moved'),
    );
  }

  async advance(app: LoadedApp, component: ComponentSpec, from: OracleStage, to: OracleStage, why: string): Promise<OracleRecord | undefined> {
    const counters = await this.deps.store.getOracleCounters(app.id, component.id);
    let figures: OracleCounters | undefined;
    const moved = await this.deps.records.update(app.id, component.id, (current) => {
      if (current?.stage !== from || current.candidate?.script !== component.jit?.script) return undefined;
      figures = stageCounts(current, counters);
      return enterStage(current, to, counters, new Date());
    });
    if (moved !== undefined) {
      this.deps.decisions.record({
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
  async rollback(app: LoadedApp, component: ComponentSpec, stage: 'rolled-back' | 'rejected', reason: string): Promise<OracleRecord | undefined> {
    const { work } = this.deps;
    const running = work.running(app.id, component.id);
    if (running !== undefined) await running;
    const counters = await this.deps.store.getOracleCounters(app.id, component.id);
    let from: OracleStage | undefined;
    let figures: OracleCounters | undefined;
    const rolled = await this.deps.records.update(app.id, component.id, (current) => {
      if (current === undefined || !PROMOTED_STAGES.has(current.stage)) return undefined;
      from = current.stage;
      figures = stageCounts(current, counters);
      const rejected = [...(current.rejected ?? []), ...(current.candidate ? [current.candidate.hash] : [])].slice(-20);
      return { ...enterStage(current, stage, counters, new Date(), reason), rejected, rollback: { reason, at: new Date().toISOString() } };
    });
    if (rolled === undefined) return undefined;
    const reverting = this.revertCommit(app, component, rolled, from!, figures!, reason);
    work.track(app.id, component.id, reverting);
    await reverting;
    return (await this.deps.records.read(app.id, component.id)).record;
  }

  /** A promoted component the records do not know as promoted (a merged suggestion, a commit by hand) starts its shadow. */
  adopt(app: LoadedApp, component: ComponentSpec): void {
    const { work } = this.deps;
    if (work.has(app.id, component.id) || work.closed) return;
    const script = component.jit?.script ?? '';
    const adopting = (async (): Promise<void> => {
      const { jit: _jit, fallback: _fallback, ...llmForm } = component;
      const definition = await this.deps.recorder.definition(app, { ...llmForm, handler: 'LLM', pool: component.fallback!.pool });
      const counters = await this.deps.store.getOracleCounters(app.id, component.id);
      const adopted = await this.deps.records.update(app.id, component.id, (current) => {
        if (current?.candidate?.script === script && (PROMOTED_STAGES.has(current.stage) || current.stage === 'rolled-back' || current.stage === 'rejected')) return undefined;
        const known = current?.candidate?.script === script ? current.candidate : undefined;
        const hash = known?.hash ?? /-([0-9a-f]{12})\.m?js$/.exec(script)?.[1] ?? 'unknown';
        const base = current ?? newRecord(definition.revision, counters, new Date());
        const candidate: RecordCandidate = known ?? { hash, script, agreement: 0, coverage: 0, heldBack: 0, model: 'unknown', tokensPerAnswer: 0 };
        return { ...enterStage(base, 'shadow', counters, new Date()), revision: definition.revision, candidate };
      });
      if (adopted !== undefined) {
        this.deps.decisions.record({
          kind: 'stage',
          appId: app.id,
          tier: app.document.spec.deploymentMode,
          componentId: component.id,
          summary: `${app.id}/${component.id} serves ${script}, a promotion this oracle did not commit (a merged suggestion, or a change by hand): it enters shadow`,
          details: { script, candidate: adopted.candidate?.hash },
        });
      }
    })().catch((error: unknown) => this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle could not adopt a promotion'));
    work.track(app.id, component.id, adopting);
  }

  private async revertCommit(app: LoadedApp, component: ComponentSpec, record: OracleRecord, from: OracleStage, figures: OracleCounters, reason: string): Promise<void> {
    const candidate = record.candidate;
    const evidence = { from, candidate: candidate?.hash, script: candidate?.script, agreements: figures.agreements, disagreements: figures.disagreements, declines: figures.declines, promotion: record.promotion?.commit, reason };
    let commit: string | undefined;
    let note: string | undefined;
    if (this.deps.promotions === undefined || candidate === undefined) {
      note = 'no revert commit: the app does not come from a definitions repository; the LLM answers every request';
    } else {
      try {
        commit = (
          await this.deps.promotions.revert({
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
    await this.deps.records.update(app.id, component.id, (current) =>
      current?.stage === record.stage && current.rollback?.at === record.rollback?.at
        ? { ...current, rollback: { ...current.rollback!, ...(commit !== undefined ? { commit } : {}) }, ...(note !== undefined ? { reason: `${reason}; ${note}` } : {}) }
        : undefined,
    );
    this.deps.decisions.record({
      kind: record.stage === 'rejected' ? 'reject' : 'rollback',
      appId: app.id,
      tier: app.document.spec.deploymentMode,
      componentId: component.id,
      summary: `${app.id}/${component.id} rolled back from ${from}${commit ? ` by ${commit.slice(0, 12)}` : ''}: ${reason}`,
      details: { ...evidence, ...(commit !== undefined ? { commit } : {}), ...(note !== undefined ? { note } : {}) },
    });
  }
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
