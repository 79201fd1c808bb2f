/**
 * The rules of an optimized component's life, as pure functions: when a
 * sampled component is stable enough to get code, and, once it is promoted,
 * who answers a request in each stage and whether the other side is compared,
 * and when a stage ends (the next stage, or a rollback).
 *
 * | stage  | answers                                   | compared                 | ends |
 * | ------ | ----------------------------------------- | ------------------------ | ---- |
 * | shadow | the LLM                                   | every request            | after shadowRequests comparisons: canary |
 * | canary | the code for canaryPercent, else the LLM  | every request of the code | after canaryRequests comparisons: full |
 * | full   | the code                                  | auditPercent of them     | — |
 *
 * The code's declines are answered by the LLM and compared with nothing. At
 * any stage, more disagreements than `1 - agreement` of the stage's window
 * (shadowRequests, canaryRequests, or in full the comparisons so far, at least
 * shadowRequests) roll the promotion back: the threshold is the one the
 * candidate had to meet on held-back samples, and it is judged as soon as it
 * can no longer be met.
 */
import type { OptimizeSpec } from '../apps/schema/app-definition-schema.js';
import type { OracleCounters, OracleSampleStats } from '../state/oracle-store.js';
import type { OracleStage } from './oracle-record.js';

export interface TurnRoute {
  /** Who answers the request. */
  readonly primary: 'code' | 'llm';
  /** The other side runs too, after the answer, and the two are compared. */
  readonly compare: boolean;
}

const LLM_ONLY: TurnRoute = { primary: 'llm', compare: false };

/** The route of one request of a promoted component; `draw` is uniform in [0, 1). */
export function routeTurn(stage: OracleStage, optimize: Pick<OptimizeSpec, 'canaryPercent' | 'auditPercent'>, draw: number): TurnRoute {
  switch (stage) {
    case 'shadow':
      return { primary: 'llm', compare: true };
    case 'canary':
      return draw * 100 < optimize.canaryPercent ? { primary: 'code', compare: true } : LLM_ONLY;
    case 'full':
      return { primary: 'code', compare: draw * 100 < optimize.auditPercent };
    default:
      // Rolled back, rejected, or not promoted by this oracle's reckoning: the LLM answers alone.
      return LLM_ONLY;
  }
}

export type StageVerdict = { readonly next: 'canary' | 'full' } | { readonly rollback: string } | undefined;

/** Disagreements a window of `window` comparisons may hold at `agreement`. */
export function allowedDisagreements(agreement: number, window: number): number {
  // The epsilon keeps 0.01 * 200 from flooring to 1.
  return Math.floor((1 - agreement) * window + 1e-9);
}

/** What the stage's comparisons so far decide, or undefined while it goes on. */
export function judgeStage(
  stage: OracleStage,
  counts: Pick<OracleCounters, 'agreements' | 'disagreements'>,
  optimize: Pick<OptimizeSpec, 'agreement' | 'shadowRequests' | 'canaryRequests'>,
): StageVerdict {
  if (stage !== 'shadow' && stage !== 'canary' && stage !== 'full') return undefined;
  const compared = counts.agreements + counts.disagreements;
  const window = stage === 'shadow' ? optimize.shadowRequests : stage === 'canary' ? optimize.canaryRequests : Math.max(compared, optimize.shadowRequests);
  const allowed = allowedDisagreements(optimize.agreement, Math.max(window, compared));
  if (counts.disagreements > allowed) {
    return {
      rollback: `${counts.disagreements} of ${compared} live comparisons disagreed in ${stage}; at agreement ${optimize.agreement} at most ${allowed} of ${Math.max(window, compared)} may`,
    };
  }
  if (stage === 'shadow' && compared >= optimize.shadowRequests) return { next: 'canary' };
  if (stage === 'canary' && compared >= optimize.canaryRequests) return { next: 'full' };
  return undefined;
}

/** Stable: enough fresh repeats of held inputs, and no more of them answered differently than the agreement allows. */
export function isStable(stats: OracleSampleStats, optimize: Pick<OptimizeSpec, 'minRepeats' | 'agreement'>): boolean {
  return stats.repeats >= optimize.minRepeats && stats.unstable <= allowedDisagreements(optimize.agreement, stats.repeats);
}
