/**
 * The core's routes of workflow runs, for clients and approvers:
 *
 * - `GET /_uhlp/runs/<id>`: the run (status, position, blackboard, result or error, approvals).
 * - `GET /_uhlp/runs/<id>/trace[?step=N]`: its SimulationTrace, or one step of it.
 * - `POST /_uhlp/runs/<id>/resume` `{"approved": true|false, "comment"?, "by"?}`:
 *   the decision on a run paused at an approval node; the run goes on and the
 *   answer is the run's (its result, or 202 again at the next approval).
 *
 * - `POST /_uhlp/runs/<id>/cancel` `{"by"?}`: cancels the run (run-cancels.ts);
 *   200 with the run once it has ended (`cancelled`), 202 with it while its
 *   on_cancel node still runs, 409 UHLP_WORKFLOW_RUN_ENDED when it had ended.
 *   Ledgered in the run's app.
 *
 * A run id is a credential (100 random bits): whoever holds it may read the
 * run, decide its approvals and cancel it. It names one run of one app, so an
 * app's client reaches only its own app's runs; operators cancel any run
 * through the console (console/runs-api.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errorBody } from '../shared/errors.js';
import { WorkflowDecisionInvalidError, WorkflowRunNotFoundError } from '../shared/workflow-errors.js';
import { isRunId } from './run-record.js';
import type { Decision, RunApprovals } from './run-approvals.js';
import type { RunCancels } from './run-cancels.js';
import { ledgerCancel } from './run-cancel-ledger.js';
import { RUNS_PATH } from './run-links.js';
import type { RunViews } from './run-views.js';
import { runEnded, type RunService } from './run-service.js';
import { UhlpError } from '../shared/errors.js';
import type { Logger } from '../logger.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';

export interface RunsRoutesDeps {
  readonly views: RunViews;
  readonly approvals: RunApprovals;
  readonly cancels: RunCancels;
  readonly runs: RunService;
}

/** Where cancels are ledgered: the turns of the apps' ambient sessions, and the apps' tiers. @defaultValue the log only */
export interface RunsLedger {
  readonly turns: TurnKeeper | undefined;
  readonly logger: Logger;
  tierOf(appId: string): string;
}

export function registerRunsRoutes(app: FastifyInstance, workflows: RunsRoutesDeps, ledger?: RunsLedger): void {
  app.get<{ Params: { id: string } }>(`${RUNS_PATH}/:id`, async (request, reply) => {
    return reply.send(await workflows.views.view(runIdOf(request.params.id)));
  });

  app.get<{ Params: { id: string }; Querystring: { step?: string } }>(`${RUNS_PATH}/:id/trace`, async (request, reply) => {
    const trace = await workflows.views.trace(runIdOf(request.params.id));
    const step = request.query.step;
    if (step === undefined) return reply.send(trace);
    const steps = trace['steps'] as Array<{ index: number }>;
    const found = /^\d{1,9}$/.test(step) ? steps.find((item) => item.index === Number(step)) : undefined;
    if (found === undefined) {
      const error = new WorkflowRunNotFoundError(`run ${request.params.id} has no step ${step.slice(0, 20)} in its trace`, { field: 'step' });
      return reply.code(error.statusCode).send(errorBody(error, request.id));
    }
    return reply.send(found);
  });

  app.post<{ Params: { id: string } }>(`${RUNS_PATH}/:id/resume`, async (request, reply: FastifyReply) => {
    const id = runIdOf(request.params.id);
    const decision = decisionOf(request.body);
    const notes: Record<string, string> = {};
    const final = await workflows.approvals.resume(id, decision, notes);
    return reply
      .code(final.status)
      .headers({ ...final.headers, ...notes })
      .send(final.body);
  });

  app.post<{ Params: { id: string } }>(`${RUNS_PATH}/:id/cancel`, async (request, reply: FastifyReply) => {
    const id = runIdOf(request.params.id);
    const by = cancellerOf(request.body);
    const before = await workflows.runs.get(id);
    const cancellation = { by: by ?? 'client', via: 'http' as const };
    const record = ledger === undefined ? undefined : { runId: id, appId: before.appId, tier: ledger.tierOf(before.appId), cancellation };
    let after;
    try {
      after = await workflows.cancels.cancel(id, cancellation);
    } catch (error) {
      if (record !== undefined) await ledgerCancel(ledger!.turns, ledger!.logger, { ...record, outcome: error instanceof UhlpError ? error.code : 'UHLP_INTERNAL' });
      throw error;
    }
    if (record !== undefined) await ledgerCancel(ledger!.turns, ledger!.logger, { ...record, outcome: after.status });
    return reply.code(runEnded(after) ? 200 : 202).send(await workflows.views.view(id));
  });
}

/** The canceller a cancel body names (`{"by"?: string}`), or undefined; UHLP_WORKFLOW_DECISION_INVALID names a field at fault. */
export function cancellerOf(body: unknown): string | undefined {
  const bad = (field: string, reason: string): never => {
    throw new WorkflowDecisionInvalidError(`${field}: ${reason}`, { field });
  };
  let value: unknown = body;
  if (Buffer.isBuffer(body)) {
    if (body.length === 0) return undefined;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      return bad('body', 'is not JSON');
    }
  }
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) return bad('body', 'must be a JSON object {"by"?}');
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) if (key !== 'by') bad(key.slice(0, 64), 'is not a field of a cancel');
  if (record['by'] !== undefined && (typeof record['by'] !== 'string' || record['by'].length === 0 || record['by'].length > 256)) bad('by', 'must be a string of 1 to 256 characters');
  return record['by'] as string | undefined;
}

function runIdOf(id: string): string {
  if (!isRunId(id)) throw new WorkflowRunNotFoundError(`no run ${id.slice(0, 80)} (run ids are RUN-<timestamp>-<random>)`, { runId: id.slice(0, 80) });
  return id;
}

/** The decision in a resume body; UHLP_WORKFLOW_DECISION_INVALID names the field at fault. */
export function decisionOf(body: unknown): Decision {
  const bad = (field: string, reason: string): never => {
    throw new WorkflowDecisionInvalidError(`${field}: ${reason}`, { field });
  };
  let value: unknown = body;
  if (Buffer.isBuffer(body)) {
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      return bad('body', 'is not JSON');
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('body', 'must be a JSON object {"approved": true|false, "comment"?, "by"?}');
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) if (!['approved', 'comment', 'by'].includes(key)) bad(key.slice(0, 64), 'is not a field of a decision');
  if (typeof record['approved'] !== 'boolean') bad('approved', 'must be true or false');
  if (record['comment'] !== undefined && (typeof record['comment'] !== 'string' || record['comment'].length > 4096)) bad('comment', 'must be a string of at most 4096 characters');
  if (record['by'] !== undefined && (typeof record['by'] !== 'string' || record['by'].length > 256)) bad('by', 'must be a string of at most 256 characters');
  return {
    approved: record['approved'] as boolean,
    ...(typeof record['comment'] === 'string' ? { comment: record['comment'] } : {}),
    ...(typeof record['by'] === 'string' ? { by: record['by'] } : {}),
  };
}
