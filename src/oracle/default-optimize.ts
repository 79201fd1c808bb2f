/**
 * `llm.optimize` with every default, for a promoted component whose llm block
 * no longer says (a hand-made promotion): its stages still need thresholds.
 */
import { Value } from '@sinclair/typebox/value';
import { OptimizeSpec } from '../apps/schema/app-definition-schema.js';

export const DEFAULT_OPTIMIZE = Value.Default(OptimizeSpec, {}) as OptimizeSpec;
