import type { AppSpec } from '../../src/apps/schema/app-definition-schema.js';
import type { OperatorLogger } from '../../src/operator/run-operator.js';

/** An AppDefinition as a user would write it: schema defaults left to the API server. */
export function appDefinition(namespace: string, name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name, namespace },
    spec: {
      pools: [{ name: 'main', minWarm: 1 }, { name: 'llm', runner: 'llm', minWarm: 0, maxSize: 2 }],
      components: [
        { id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'hello.js' } },
        { id: 'chat', handler: 'LLM', pool: 'llm', llm: { prompt: 'chat.njk' } },
      ],
      routes: [
        { http: { method: 'GET', path: '/hello' }, component: 'hello' },
        { http: { method: 'POST', path: '/chat' }, component: 'chat' },
      ],
      // An LLM component needs the llm capability.
      capabilities: { llm: { models: ['small'] } },
      ...spec,
    } satisfies Partial<Record<keyof AppSpec, unknown>>,
  };
}

/** Keeps operator logs for the failure message instead of printing them. */
export function collectingLogger(): OperatorLogger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (message, fields) => lines.push(`info ${message} ${JSON.stringify(fields ?? {})}`),
    error: (message, fields) => lines.push(`error ${message} ${JSON.stringify(fields ?? {})}`),
  };
}

/** Fast lease timings so takeover tests finish in seconds. */
export const FAST_LEASE = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200, resyncPeriodMs: 5000 } as const;
