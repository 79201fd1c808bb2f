/**
 * How an llm-orchestrator reports what its templates read (the inputs of an
 * oracle sample, docs/oracle.md): the paths go in the /execute answer's
 * `metrics.template_inputs`, within these bounds, which the core checks again
 * before it projects its own copy of the variables onto them.
 */

/** The /execute answer's `metrics` field the paths go in. */
export const TEMPLATE_INPUTS_METRIC = 'template_inputs';
/** At most this many paths are reported; past it, every read is reported by its variable alone. */
export const MAX_INPUT_PATHS = 64;
/** Paths go at most this deep; a deeper read reports the object at this depth whole. */
export const MAX_INPUT_PATH_DEPTH = 8;
/** A longer key is not a path segment: its object is reported whole. */
export const MAX_INPUT_SEGMENT_CHARS = 128;
