/**
 * What `uhlp optimize status` shows (GET /_uhlp/oracle): each watched
 * component's stage and why, its samples and whether they are stable, its
 * candidate and promotion, its live comparisons and totals, and the
 * candidates judged (asked for one component, with their modules and the
 * samples they got wrong, to be read before a promotion).
 */
import type { ComponentSpec, OptimizeSpec } from '../apps/schema/app-definition-schema.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { activeOptimize } from '../contract/llm-component-schema.js';
import { UhlpError } from '../shared/errors.js';
import type { OracleCounters, OracleSampleStats, OracleStore } from '../state/oracle-store.js';
import type { CandidateRecord } from './code-generator.js';
import { stageCounts, type OracleRecord, type OracleStage, type RecordCandidate } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import type { SampleRecorder } from './sample-recorder.js';
import { isStable } from './stage-rules.js';

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

export interface OracleStatusDeps {
  readonly registry: ApplicationRegistry;
  readonly store: OracleStore;
  readonly records: OracleRecords;
  readonly recorder: SampleRecorder;
}

export class OracleStatus {
  constructor(private readonly deps: OracleStatusDeps) {}

  /** The status of every watched component, or of one app or component. */
  async of(appId?: string, componentId?: string): Promise<ComponentStatus[]> {
    const { store } = this.deps;
    const out: ComponentStatus[] = [];
    const apps = [...this.deps.registry.snapshot.apps.values()].filter((app) => appId === undefined || app.id === appId);
    if (appId !== undefined && apps.length === 0) throw new UhlpError('UHLP_ORACLE_NOT_FOUND', `no application "${appId}" is loaded`, { app: appId });
    for (const app of apps) {
      for (const component of app.components.values()) {
        if (componentId !== undefined && component.id !== componentId) continue;
        const optimize = component.llm?.optimize;
        const promoted = component.handler === 'JIT' && component.fallback !== undefined;
        if (!promoted && activeOptimize(component.llm) === undefined) continue;
        const { record } = await this.deps.records.read(app.id, component.id);
        const totals = await store.getOracleCounters(app.id, component.id);
        const live = record !== undefined ? stageCounts(record, totals) : totals;
        const compared = live.agreements + live.disagreements;
        let samples: ComponentStatus['samples'];
        if (record !== undefined && optimize !== undefined) {
          const { stats } = await store.getOracleSamples({ appId: app.id, componentId: component.id, revision: record.revision });
          samples = { ...stats, perMinute: this.deps.recorder.ratePerMinute(app.id, component.id), stable: isStable(stats, optimize) };
        }
        const candidates = (await store.listOracleCandidates(app.id, component.id)).flatMap((json) => {
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
}
