/**
 * Whether the core traces: one boolean every span site reads first, so that a
 * core without tracing does no tracing work at all per request (not even the
 * API's no-op spans and context switches).
 */
let active = false;

export function tracingActive(): boolean {
  return active;
}

/** Set by start-tracing.ts only. */
export function setTracingActive(on: boolean): void {
  active = on;
}
