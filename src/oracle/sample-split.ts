/**
 * The training and held-back splits of a component's samples. The split is by
 * each sample's input hash, so it is the same on every core and every attempt,
 * and a repeated input always lands on the same side: code generation never
 * sees a held-back input, and the candidate is judged on those alone. Samples
 * shown as feedback after a failed attempt move to training for the attempts
 * that follow (`shown`), so a later candidate is never judged on an answer it
 * was given.
 */
import type { OracleSample } from './oracle-sample.js';

/** Held-back samples a candidate must be judged on at least. */
export const MIN_HELD_BACK = 4;
/** Training samples shown in one prompt at most (the rest only cost tokens). */
export const MAX_TRAINING_SHOWN = 40;

export interface SampleSplit {
  readonly training: OracleSample[];
  readonly heldBack: OracleSample[];
}

/** Whether a sample is held back at `holdout`: by the first 32 bits of its input hash. */
export function isHeldBack(sample: Pick<OracleSample, 'inputHash'>, holdout: number): boolean {
  return Number.parseInt(sample.inputHash.slice(0, 8), 16) / 0x1_0000_0000 < holdout;
}

export function splitSamples(samples: readonly OracleSample[], holdout: number, shown: ReadonlySet<string> = new Set()): SampleSplit {
  const training: OracleSample[] = [];
  const heldBack: OracleSample[] = [];
  for (const sample of samples) (isHeldBack(sample, holdout) && !shown.has(sample.inputHash) ? heldBack : training).push(sample);
  return { training, heldBack };
}
