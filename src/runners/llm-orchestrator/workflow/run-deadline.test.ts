import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../../test/helpers/workflow-fakes.js';
import { WorkflowTimeoutError } from '../../../shared/workflow-errors.js';
import { RunDeadline } from './run-deadline.js';

const expired = (): WorkflowTimeoutError => new WorkflowTimeoutError('the run ran past its time', { runId: 'RUN-1' });

describe("the run's deadline", () => {
  it('gives the work its result while there is time', async () => {
    const deadline = new RunDeadline(1000, new FakeClock(), expired);
    await expect(deadline.within(async () => 'done')).resolves.toBe('done');
  });

  it('passes the work failure through', async () => {
    const deadline = new RunDeadline(1000, new FakeClock(), expired);
    await expect(deadline.within(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });

  it('does not start the work once the time is spent', async () => {
    const clock = new FakeClock();
    const deadline = new RunDeadline(500, clock, expired);
    clock.advance(500);
    let started = false;
    await expect(
      deadline.within(async () => {
        started = true;
      }),
    ).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_TIMEOUT', statusCode: 504, details: { runId: 'RUN-1' } });
    expect(started).toBe(false);
  });

  it('abandons work that runs past the time left', async () => {
    const deadline = new RunDeadline(20, new FakeClock(), expired);
    await expect(deadline.within(() => new Promise<never>(() => {}))).rejects.toThrow(WorkflowTimeoutError);
  });
});
