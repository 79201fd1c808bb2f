/** A workflow run as the run service's and run driver's tests create it: app `app`, workflow `flow` at r1, starting at `a`. */
import type { NewRun } from '../../src/workflow-runs/run-service.js';

export function newRunFixture(id: string, blackboard: Record<string, unknown> = { input: { n: 1 } }): NewRun {
  return {
    id,
    appId: 'app',
    componentId: 'flow',
    workflowId: 'flow',
    revision: 'r1',
    persistence: { requested: 'memory', actual: 'memory' },
    sessionId: null,
    input: blackboard['input'] ?? null,
    blackboard,
    start: 'a',
    timeoutMs: 60_000,
    allowedTools: [],
  };
}
