/**
 * The oracle's record of one component, kept in the runtime store (one JSON
 * text per app and component, written by compare-and-set so that two cores
 * never both move it): the stage, the revision of the llm definition its
 * samples and candidates belong to, the candidate in force, the promotion and
 * rollback commits, what code generation has spent, and the counters at the
 * stage's start (a stage's comparisons are the difference from them).
 *
 * ```
 * sampling -> generating -> (auto)    shadow -> canary -> full
 *                        -> (suggest) suggested  (a human merges the branch: shadow)
 *                        -> failed | refused
 * shadow | canary | full -> rolled-back      any stage -> rejected (uhlp optimize reject)
 * ```
 */
import { ORACLE_COUNTER_NAMES, type OracleCounters } from '../state/oracle-store.js';

export const ORACLE_STAGES = ['sampling', 'generating', 'suggested', 'shadow', 'canary', 'full', 'rolled-back', 'rejected', 'failed', 'refused'] as const;
export type OracleStage = (typeof ORACLE_STAGES)[number];

/**
 * The value of `uhlp_oracle_stage{app,component}` per stage: the way to full
 * counts up, the ends that are not full are negative.
 */
export const STAGE_GAUGE: Readonly<Record<OracleStage, number>> = {
  sampling: 0,
  generating: 1,
  suggested: 2,
  shadow: 3,
  canary: 4,
  full: 5,
  'rolled-back': -1,
  rejected: -2,
  failed: -3,
  refused: -4,
};

/** Stages of a promoted component: its code is in the served definitions. */
export const PROMOTED_STAGES: ReadonlySet<OracleStage> = new Set(['shadow', 'canary', 'full']);

/** The candidate a record is about: what was committed (or left on a branch). */
export interface RecordCandidate {
  /** Hex hash of the module's bytes (the file name's suffix is its first 12 digits). */
  readonly hash: string;
  /** `generated/<component>-<hash12>.js`. */
  readonly script: string;
  readonly agreement: number;
  readonly coverage: number;
  readonly heldBack: number;
  readonly model: string;
  /** Mean LLM tokens of one answer of the component, from its samples: what each answer of the code saves. */
  readonly tokensPerAnswer: number;
}

export interface OracleRecord {
  stage: OracleStage;
  /** The llm definition revision (component-revision.ts) the samples and candidates are of. */
  revision: string;
  candidate?: RecordCandidate;
  /** The commit that promoted the candidate, and the branch it is on when it is a suggestion. */
  promotion?: { commit: string; branch?: string; at: string };
  /** The revert commit (absent when none could be made) and why. */
  rollback?: { commit?: string; reason: string; at: string };
  /** Candidates asked for at this revision, and the tokens they took. */
  attempts: number;
  codegenTokens: number;
  /** Counters when the stage began. */
  stageBase: OracleCounters;
  stageSince: string;
  /** Why the stage is what it is, for `uhlp optimize status` (a refusal, a failed verification). */
  reason?: string;
  /** Hashes of candidates rolled back or rejected at this revision: never promoted again. */
  rejected?: string[];
}

export function zeroCounters(): OracleCounters {
  return Object.fromEntries(ORACLE_COUNTER_NAMES.map((name) => [name, 0])) as OracleCounters;
}

/** A fresh record: sampling at `revision`. */
export function newRecord(revision: string, counters: OracleCounters, now: Date): OracleRecord {
  return { stage: 'sampling', revision, attempts: 0, codegenTokens: 0, stageBase: { ...counters }, stageSince: now.toISOString() };
}

/** The record in a JSON text, or undefined when it is not one this core can read (it is then started over). */
export function parseRecord(json: string): OracleRecord | undefined {
  try {
    const value = JSON.parse(json) as OracleRecord;
    if (typeof value !== 'object' || value === null || !(ORACLE_STAGES as readonly string[]).includes(value.stage) || typeof value.revision !== 'string') return undefined;
    return { ...value, stageBase: { ...zeroCounters(), ...value.stageBase } };
  } catch {
    return undefined;
  }
}

/** The record moved to `stage`, counting the stage's figures from `counters`. */
export function enterStage(record: OracleRecord, stage: OracleStage, counters: OracleCounters, now: Date, reason?: string): OracleRecord {
  const next: OracleRecord = { ...record, stage, stageBase: { ...counters }, stageSince: now.toISOString() };
  if (reason !== undefined) next.reason = reason;
  else delete next.reason;
  return next;
}

/** What happened in the current stage: the counters less their values at its start. */
export function stageCounts(record: OracleRecord, counters: OracleCounters): OracleCounters {
  return Object.fromEntries(ORACLE_COUNTER_NAMES.map((name) => [name, counters[name] - record.stageBase[name]])) as OracleCounters;
}
