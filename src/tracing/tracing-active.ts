/**
 * Whether the core traces: one boolean every span site reads first, so that a
 * core without tracing does no tracing work at all per request (not even the
 * API's no-op spans and context switches); and whether model spans may carry
 * prompt text.
 */
let active = false;
let prompts = false;

export function tracingActive(): boolean {
  return active;
}

/** Model call spans carry the messages and the answer (UHLP_TRACE_CAPTURE_PROMPTS=true). */
export function capturePrompts(): boolean {
  return active && prompts;
}

/** Set by start-tracing.ts only. */
export function setTracingActive(on: boolean, options: { readonly capturePrompts?: boolean } = {}): void {
  active = on;
  prompts = options.capturePrompts === true;
}
