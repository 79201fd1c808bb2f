/**
 * An operator's commands (`uhlp optimize promote|reject|rollback`, POST
 * /_uhlp/oracle/...): each answers the component's status after it, or
 * UHLP_ORACLE_NOTHING_TO_DO naming the stage that leaves nothing to do.
 */
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { UhlpError } from '../shared/errors.js';
import type { OracleStore } from '../state/oracle-store.js';
import type { CandidateFlow } from './candidate-flow.js';
import type { OracleDecisions } from './oracle-decisions.js';
import { enterStage, PROMOTED_STAGES } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import type { ComponentStatus, OracleStatus } from './oracle-status.js';
import type { StageTransitions } from './stage-transitions.js';

export type OracleCommand = 'promote' | 'reject' | 'rollback';

export interface OracleCommandsDeps {
  readonly registry: ApplicationRegistry;
  readonly store: OracleStore;
  readonly records: OracleRecords;
  readonly decisions: OracleDecisions;
  readonly transitions: StageTransitions;
  readonly flow: CandidateFlow;
  readonly status: OracleStatus;
}

export class OracleCommands {
  constructor(private readonly deps: OracleCommandsDeps) {}

  /**
   * An operator's command: `promote` commits a suggested candidate to the served
   * branch, or moves a promoted component to its next stage; `rollback` reverts
   * a promotion; `reject` does too, or stops a component's optimization at its
   * current revision.
   */
  async run(command: OracleCommand, appId: string, componentId: string): Promise<ComponentStatus> {
    const app = this.deps.registry.snapshot.apps.get(appId);
    const component = app?.components.get(componentId);
    if (app === undefined || component === undefined) throw new UhlpError('UHLP_ORACLE_NOT_FOUND', `no component "${componentId}" of a loaded application "${appId}"`, { app: appId, component: componentId });
    const { record } = await this.deps.records.read(appId, componentId);
    const stage = record?.stage;
    const nothing = (what: string): never => {
      throw new UhlpError('UHLP_ORACLE_NOTHING_TO_DO', `${appId}/${componentId} is at stage ${stage ?? 'none'}: ${what}`, { stage: stage ?? null });
    };
    const promoted = component.handler === 'JIT' && component.fallback !== undefined;
    const operator = `by an operator (uhlp optimize ${command})`;
    switch (command) {
      case 'rollback':
        if (!promoted || stage === undefined || !PROMOTED_STAGES.has(stage)) nothing('nothing promoted to roll back');
        await this.deps.transitions.rollback(app, component, 'rolled-back', `rolled back ${operator}`);
        break;
      case 'reject':
        if (promoted && stage !== undefined && PROMOTED_STAGES.has(stage)) await this.deps.transitions.rollback(app, component, 'rejected', `rejected ${operator}`);
        else {
          const counters = await this.deps.store.getOracleCounters(appId, componentId);
          const rejected = await this.deps.records.update(appId, componentId, (current) =>
            current === undefined || current.stage === 'rejected' || current.stage === 'generating'
              ? undefined
              : { ...enterStage(current, 'rejected', counters, new Date(), `rejected ${operator}`), rejected: [...(current.rejected ?? []), ...(current.candidate ? [current.candidate.hash] : [])].slice(-20) },
          );
          if (rejected === undefined) nothing('nothing to reject (or code is being generated: reject it once it is judged)');
          this.deps.decisions.record({ kind: 'reject', appId, tier: app.document.spec.deploymentMode, componentId, summary: `${appId}/${componentId} rejected ${operator} at ${stage}`, details: { stage, candidate: record?.candidate?.hash } });
        }
        break;
      case 'promote':
        if (promoted && (stage === 'shadow' || stage === 'canary')) {
          await this.deps.transitions.advance(app, component, stage, stage === 'shadow' ? 'canary' : 'full', operator);
        } else if (!promoted && (stage === 'suggested' || stage === 'refused') && record?.candidate !== undefined) {
          await this.deps.flow.promoteSuggestion(app, component, record);
        } else {
          nothing('no suggested candidate to promote, and no shadow or canary to move on');
        }
        break;
    }
    return (await this.deps.status.of(appId, componentId))[0]!;
  }
}
