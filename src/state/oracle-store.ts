/**
 * The optimization oracle's state per LLM component: its counters, the
 * reservoir of (inputs, output) samples of each revision, its record (stage,
 * candidate, promotion) and the candidates it kept (src/oracle/).
 */

/**
 * Counters the optimization oracle keeps per (app, component), never reset by
 * the oracle: it reads a stage's share as the difference from the stage's start.
 * `samples`: LLM answers sampled; `hits`: requests the generated code answered;
 * `agreements`/`disagreements`: live comparisons of code and LLM; `declines`:
 * inputs the code declined; `tokensSaved`: LLM tokens the code's answers saved.
 */
export const ORACLE_COUNTER_NAMES = ['samples', 'hits', 'agreements', 'disagreements', 'declines', 'tokensSaved'] as const;
export type OracleCounterName = (typeof ORACLE_COUNTER_NAMES)[number];
export type OracleCounters = Record<OracleCounterName, number>;

/** Longest sample, record and candidate (JSON text) the stores take. */
export const MAX_ORACLE_SAMPLE_CHARS = 64 * 1024;
export const MAX_ORACLE_RECORD_CHARS = 64 * 1024;
export const MAX_ORACLE_CANDIDATE_CHARS = 512 * 1024;
/** Largest reservoir, and most candidates kept, per component. */
export const MAX_ORACLE_SAMPLES = 10_000;
export const MAX_ORACLE_CANDIDATES = 100;

/** Where one LLM component's samples live: its app, its id, and the revision of its llm definition. */
export interface OracleSampleScope {
  readonly appId: string;
  readonly componentId: string;
  /** A hash of what the component's answers depend on (its llm block and the files it names). */
  readonly revision: string;
}

/** One (inputs, output) sample as the oracle hands it to the store. */
export interface OracleSampleInput {
  /** Hash of the sample's canonical inputs (hex): the same inputs have the same hash. */
  readonly inputHash: string;
  /** Hash of the canonical output (hex). */
  readonly outputHash: string;
  /** The whole sample as JSON text, at most MAX_ORACLE_SAMPLE_CHARS. */
  readonly json: string;
  /** A fresh answer (not one from the answer cache): only those tell whether outputs are stable. */
  readonly fresh: boolean;
}

export interface OracleSampleOptions {
  /** Samples held at most (the reservoir's size), 1 - MAX_ORACLE_SAMPLES. */
  readonly limit: number;
  /** The scope's samples expire this long after the last one came. */
  readonly ttlMs: number;
  /** A random non-negative integer: the reservoir's draw (the caller's, so the stores agree and tests can fix it). */
  readonly pick: number;
}

export interface OracleSampleStats {
  /** Distinct inputs seen (first sightings, held or not). */
  seen: number;
  /** Samples held, at most the limit. */
  stored: number;
  /** Fresh answers to an input whose sample is held. */
  repeats: number;
  /** Of those, answers whose output differed from the held sample's. */
  unstable: number;
}

/**
 * What became of a sample: `added` (the reservoir had room), `replaced` (it
 * took a held sample's place), `passed` (a new input the reservoir did not
 * take), `repeat` (a held input answered the same, or answered from the
 * cache), `unstable` (a held input answered differently).
 */
export type OracleSampleOutcome = 'added' | 'replaced' | 'passed' | 'repeat' | 'unstable';

export interface OracleStore {
  /** Adds the deltas atomically and returns all counters after the update. */
  incrOracleCounters(appId: string, componentId: string, deltas: Partial<OracleCounters>): Promise<OracleCounters>;
  getOracleCounters(appId: string, componentId: string): Promise<OracleCounters>;
  resetOracleCounters(appId: string, componentId: string): Promise<void>;

  /**
   * Offers one sample to a component's reservoir, atomically: a held input's
   * repeat is compared with it (stability), a new input is kept with the
   * reservoir's odds (every input seen has the same chance to be held).
   */
  addOracleSample(scope: OracleSampleScope, sample: OracleSampleInput, options: OracleSampleOptions): Promise<{ outcome: OracleSampleOutcome; stats: OracleSampleStats }>;
  /** The held samples (JSON texts, in slot order) and the stats of a scope. */
  getOracleSamples(scope: OracleSampleScope): Promise<{ samples: string[]; stats: OracleSampleStats }>;

  /** The oracle's record of a component (JSON text) and its version; undefined when none. */
  getOracleRecord(appId: string, componentId: string): Promise<{ version: number; json: string } | undefined>;
  /**
   * Writes the record if its version is still `expectedVersion` (0: no record
   * yet) and returns the new version; undefined when another writer came first.
   */
  putOracleRecord(appId: string, componentId: string, json: string, expectedVersion: number): Promise<number | undefined>;

  /** Keeps a candidate (JSON text) of a component, newest first, at most `keep` of them. */
  addOracleCandidate(appId: string, componentId: string, json: string, keep: number): Promise<void>;
  /** The kept candidates of a component, newest first. */
  listOracleCandidates(appId: string, componentId: string): Promise<string[]>;
}

export function zeroOracleCounters(): OracleCounters {
  return { samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 };
}
