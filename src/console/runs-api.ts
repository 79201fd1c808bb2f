/**
 * The console's runs: the list (the run index, filtered and paged on the
 * server), one run with its trace (what /_uhlp/runs/<id> and its trace answer,
 * through the same service), the run's live stream, and the approvals inbox's
 * decision (what POST /_uhlp/runs/<id>/resume does, with the principal as
 * `by`, ledgered).
 *
 * - `GET  api/runs?app&component&status&since&until&limit&cursor` -> `{runs, next?, total?, countCapped?}`
 * - `GET  api/runs/<id>` -> `{run, trace, grants, approval?}` (grants: what approving a paused run allows; approval:
 *   a paused run's input and blackboard as 4 KiB excerpts of indented JSON, what the approver decides on)
 * - `GET  api/runs/<id>/events` -> server-sent events: `run` (the run and its trace, at every change), `end`
 * - `POST api/runs/<id>/resume {"approved", "comment"?}` -> `{status, body}`, the run's answer once it paused or ended
 * - `POST api/runs/<id>/cancel` -> `{run}`, the run once it has ended (or as it is after run-cancels.ts's wait),
 *   cancelled by the principal, ledgered; 409 UHLP_WORKFLOW_RUN_ENDED for a run that has ended. Operators
 *   cancel any app's run.
 * - `POST api/runs/<id>/replay`, `POST api/runs/<id>/fork` -> 202 `{run}`, the new run (run-replay-api.ts)
 */
import type { FastifyInstance } from 'fastify';
import { RUN_STATUSES, type RunStatus } from '../contract/workflow/run-view.js';
import { UhlpError } from '../shared/errors.js';
import { MAX_RUN_PAGE } from '../workflow-runs/run-index.js';
import { isRunId } from '../workflow-runs/run-record.js';
import { decisionOf } from '../workflow-runs/runs-routes.js';
import type { WorkflowRuns } from '../workflow-runs/workflow-runs.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';
import { integerParam, jsonObjectBody, optionalChoice, optionalName, optionalTime } from './query-params.js';
import { streamRunEvents } from './run-events.js';
import { registerRunReplays } from './run-replay-api.js';

export function registerRunsApi(app: FastifyInstance, context: ConsoleContext): void {
  const workflows = (): WorkflowRuns => {
    if (context.workflows === undefined) throw new UhlpError('UHLP_WORKFLOW_RUN_NOT_FOUND', 'this core runs no workflows');
    return context.workflows;
  };

  app.get(`${CONSOLE_API}/runs`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const query = request.query as Record<string, unknown>;
    const filters = {
      app: optionalName(query['app'], 'app'),
      component: optionalName(query['component'], 'component'),
      status: optionalChoice<RunStatus>(query['status'], 'status', RUN_STATUSES),
      since: optionalTime(query['since'], 'since'),
      until: optionalTime(query['until'], 'until'),
    };
    const limit = integerParam(query['limit'], 'limit', 100, 1, MAX_RUN_PAGE);
    const cursor = typeof query['cursor'] === 'string' && query['cursor'] !== '' ? query['cursor'].slice(0, 256) : undefined;
    if (context.runIndex === undefined) return reply.send({ runs: [], total: 0, countCapped: false });
    const page = await context.runIndex.list({
      limit,
      ...(cursor !== undefined ? { cursor } : {}),
      ...Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined)),
    });
    return reply.send(page);
  });

  app.get<{ Params: { id: string } }>(`${CONSOLE_API}/runs/:id`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const id = runIdOf(request.params.id);
    const { views } = workflows();
    const [run, trace, grants, approval] = await Promise.all([views.view(id), views.trace(id), views.pendingGrants(id), views.approvalContext(id)]);
    return reply.send({ run, trace, grants, ...(approval !== undefined ? { approval } : {}) });
  });

  app.get<{ Params: { id: string } }>(`${CONSOLE_API}/runs/:id/events`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const id = runIdOf(request.params.id);
    const { views } = workflows();
    // The run exists (or this is a 404 before the stream starts).
    await views.view(id);
    return streamRunEvents(request, reply, { id, runs: context.store.runs, workflows: views, logger: context.logger });
  });

  registerRunCancel(app, context, workflows);
  registerRunReplays(app, context, workflows);

  app.post<{ Params: { id: string } }>(`${CONSOLE_API}/runs/:id/resume`, async (request, reply) => {
    const principal = context.access.operator(request);
    const id = runIdOf(request.params.id);
    const body = jsonObjectBody(request.body);
    // Who decided is the principal, whatever the body says.
    const decision = decisionOf(Buffer.from(JSON.stringify({ approved: body['approved'], ...(body['comment'] !== undefined ? { comment: body['comment'] } : {}), by: principal.name })));
    const runs = workflows();
    const before = await runs.views.view(id);
    const appId = String(before['app']);
    const tier = context.registry.snapshot.apps.get(appId)?.document.spec.deploymentMode ?? 'development';
    const audit = (outcome: string, details: Record<string, unknown> = {}): Promise<void> =>
      context.audit.record({
        action: decision.approved ? 'run.approve' : 'run.reject',
        principal,
        appId,
        tier,
        target: { runId: id, node: (before['paused'] as { node?: string } | undefined)?.node ?? null, ...(decision.comment !== undefined ? { comment: decision.comment } : {}) },
        outcome,
        details,
      });
    let final;
    try {
      final = await runs.approvals.resume(id, decision, {});
    } catch (error) {
      await audit(error instanceof UhlpError ? error.code : 'UHLP_INTERNAL');
      throw error;
    }
    await audit('ok', { status: final.status });
    const text = Buffer.isBuffer(final.body) ? final.body.toString('utf8') : final.body;
    let body2: unknown = text;
    try {
      body2 = JSON.parse(text);
    } catch {
      // An answer that is not JSON is shown as text.
    }
    return reply.send({ status: final.status, body: body2 });
  });
}

export function registerRunCancel(app: FastifyInstance, context: ConsoleContext, workflows: () => WorkflowRuns): void {
  app.post<{ Params: { id: string } }>(`${CONSOLE_API}/runs/:id/cancel`, async (request, reply) => {
    const principal = context.access.operator(request);
    const id = runIdOf(request.params.id);
    const runs = workflows();
    const before = await runs.runs.get(id);
    const tier = context.registry.snapshot.apps.get(before.appId)?.document.spec.deploymentMode ?? 'development';
    const audit = (outcome: string): Promise<void> =>
      context.audit.record({ action: 'run.cancel', principal, appId: before.appId, tier, target: { runId: id, status: before.status }, outcome });
    let after;
    try {
      after = await runs.cancels.cancel(id, { by: principal.name, via: 'console' });
    } catch (error) {
      await audit(error instanceof UhlpError ? error.code : 'UHLP_INTERNAL');
      throw error;
    }
    await audit(after.status);
    return reply.send({ run: await runs.views.view(id) });
  });
}

function runIdOf(id: string): string {
  if (!isRunId(id)) throw new UhlpError('UHLP_WORKFLOW_RUN_NOT_FOUND', `no run ${id.slice(0, 80)} (run ids are RUN-<timestamp>-<random>)`, { runId: id.slice(0, 80) });
  return id;
}
