/**
 * Generated code in place of an LLM component (docs/oracle.md), between the
 * jit-runner and the core: code that declines an input (`ctx.fallback()`)
 * makes the runner answer an error with this code, and the core then asks the
 * LLM instead, or, verifying a candidate, counts the sample as declined.
 */

/** The error code of a declined input. */
export const DECLINED_CODE = 'UHLP_ORACLE_DECLINED';
