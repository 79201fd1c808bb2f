/**
 * The console's replay and fork of a run (run-replays.ts), operators' actions
 * on the operator listener, for any app's run:
 *
 * - `POST api/runs/<id>/replay {"fromStep", "currentRevision"?}` -> 202 `{run}`, the new run as it starts
 * - `POST api/runs/<id>/fork {"fromStep", "set" | "blackboard", "currentRevision"?}` -> 202 `{run}`
 *
 * The principal is who asked, recorded on both runs; each is audited
 * (`run.replay`, `run.fork`) in the app's ledger with its outcome: the new
 * run's id, or the code it was refused with. `uhlp runs replay|fork` call these.
 */
import type { FastifyInstance } from 'fastify';
import { UhlpError } from '../shared/errors.js';
import { replayRequestOf } from '../workflow-runs/replay-request.js';
import { isRunId } from '../workflow-runs/run-record.js';
import type { WorkflowRuns } from '../workflow-runs/workflow-runs.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';

export function registerRunReplays(app: FastifyInstance, context: ConsoleContext, workflows: () => WorkflowRuns): void {
  for (const kind of ['replay', 'fork'] as const) {
    app.post<{ Params: { id: string } }>(`${CONSOLE_API}/runs/:id/${kind}`, async (request, reply) => {
      const principal = context.access.operator(request);
      const id = request.params.id;
      if (!isRunId(id)) throw new UhlpError('UHLP_WORKFLOW_RUN_NOT_FOUND', `no run ${id.slice(0, 80)} (run ids are RUN-<timestamp>-<random>)`, { runId: id.slice(0, 80) });
      const runs = workflows();
      const parent = await runs.runs.get(id);
      const tier = context.registry.snapshot.apps.get(parent.appId)?.document.spec.deploymentMode ?? 'development';
      let target: Record<string, unknown> = { runId: id };
      const audit = (outcome: string, details: Record<string, unknown> = {}): Promise<void> =>
        context.audit.record({ action: kind === 'fork' ? 'run.fork' : 'run.replay', principal, appId: parent.appId, tier, target, outcome, details });
      let child;
      try {
        const asked = replayRequestOf(request.body, kind, principal.name);
        target = { runId: id, fromStep: asked.fromStep, currentRevision: asked.currentRevision === true, ...(asked.edit !== undefined ? { edit: 'set' in asked.edit ? 'set' : 'blackboard' } : {}) };
        child = await runs.replays.start(id, asked);
      } catch (error) {
        await audit(error instanceof UhlpError ? error.code : 'UHLP_INTERNAL');
        throw error;
      }
      await audit('ok', { runId: child.id, revision: child.revision });
      return reply.code(202).send({ run: await runs.views.view(child.id) });
    });
  }
}
