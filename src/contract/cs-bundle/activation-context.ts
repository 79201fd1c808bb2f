/**
 * `ctx` of an activation, with exactly the runtime document's fields
 * (activation_id, deadline_ms, tenant, namespace, function, version, ref,
 * trigger, principal); fields may be added, never removed. In uhlp the tenant
 * is the app; a bundle run by its sha256 has an empty namespace and function
 * and version 0.
 */
export interface CsTarget {
  readonly tenant: string;
  readonly namespace: string;
  readonly function: string;
  readonly version: number;
  readonly sha256: string;
  /** The ref the component named (`prod`, `17`, `latest`); absent for a sha256. */
  readonly ref?: string;
}

export interface ActivationContext {
  readonly activation_id: string;
  readonly deadline_ms: number;
  readonly tenant: string;
  readonly namespace: string;
  readonly function: string;
  readonly version: number;
  readonly ref: { alias: string } | { version: number } | { sha256: string };
  readonly trigger: { type: string };
  readonly principal: { sub: string; roles: string[] };
  /** Added by uhlp: the bundle's address. */
  readonly sha256: string;
}

export interface ActivationInput {
  readonly activationId: string;
  readonly deadlineMs: number;
  readonly target: CsTarget;
  /** The event's source: http, cron, queue, trigger, callback, internal, or `local` for `uhlp fn run`. */
  readonly trigger: string;
  readonly user?: { readonly id: string; readonly roles: readonly string[] };
}

export function activationContext(input: ActivationInput): ActivationContext {
  const { target } = input;
  const ref =
    target.ref === undefined ? { sha256: target.sha256 } : /^[0-9]+$/.test(target.ref) ? { version: Number(target.ref) } : { alias: target.ref };
  return {
    activation_id: input.activationId,
    deadline_ms: input.deadlineMs,
    tenant: target.tenant,
    namespace: target.namespace,
    function: target.function,
    version: target.version,
    ref,
    trigger: { type: input.trigger },
    principal: { sub: input.user?.id ?? 'anonymous', roles: [...(input.user?.roles ?? [])] },
    sha256: target.sha256,
  };
}

/** The semaphore key of `maxConcurrency`: tenant, namespace, function, version (the sha256 for a bundle run by address). */
export function concurrencyKey(target: CsTarget): string {
  return JSON.stringify([target.tenant, target.namespace, target.function, target.version === 0 ? target.sha256 : target.version]);
}
