import { describe, expect, it } from 'vitest';
import { newRunId, traceOf, type RunRecord } from './run-record.js';

function record(overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    id: newRunId(),
    appId: 'shop',
    componentId: 'checkout',
    workflowId: 'checkout-flow',
    revision: 'abc1234',
    status: 'completed',
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:01.000Z',
    persistence: { requested: 'memory', actual: 'memory' },
    sessionId: null,
    input: { secret: 'not in the trace' },
    state: {} as RunRecord['state'],
    approvals: {},
    allowedTools: [],
    timing: { timeoutMs: 1000, spentMs: 10 },
    attempts: 1,
    steps: [{ node: 'a' } as unknown as RunRecord['steps'][number]],
    droppedSteps: 2,
    ...overrides,
  };
}

describe('traceOf', () => {
  it('projects the run onto its trace: provenance, status and steps, nothing else', () => {
    const run = record({ metadata: { name: 'checkout' } as RunRecord['metadata'] });
    expect(traceOf(run)).toEqual({
      runId: run.id,
      appId: 'shop',
      workflowId: 'checkout-flow',
      revision: 'abc1234',
      status: 'completed',
      metadata: { name: 'checkout' },
      droppedSteps: 2,
      steps: run.steps,
    });
  });

  it('answers null metadata for a workflow without any', () => {
    expect(traceOf(record()).metadata).toBeNull();
  });
});
