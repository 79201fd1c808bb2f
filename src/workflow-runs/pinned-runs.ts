/**
 * A run as it was pinned: its app, component and workflow at the revision it
 * was created at, and a turn of its component that no client request started
 * (an approval's resume, a run picked up after its core stopped).
 */
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { WorkflowDefinition } from '../contract/workflow/workflow-schema.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { UhlpError } from '../shared/errors.js';
import type { TurnEvent } from '../turns/turn-event.js';
import type { RunRecord } from './run-record.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

export interface PinnedRun {
  readonly app: LoadedApp;
  readonly component: ComponentSpec;
  readonly workflow: WorkflowDefinition;
}

/** The run's app, component and workflow at its pinned revision. */
export function pinnedRun(catalog: WorkflowCatalog, record: RunRecord): PinnedRun {
  const app = catalog.app(record.appId, record.revision);
  const component = app.components.get(record.componentId);
  if (component === undefined || component.workflow === undefined) {
    throw new UhlpError('UHLP_WORKFLOW_INVALID', `app ${record.appId} at ${record.revision.slice(0, 12)} has no workflow component ${record.componentId}`);
  }
  return { app, component, workflow: catalog.workflow(app, component.workflow.workflowId) };
}

/** A turn of the run's component that no client request started (a resume). */
export function runEvent(record: RunRecord, app: LoadedApp, component: ComponentSpec, requestId: string, requestData: Record<string, unknown>): TurnEvent {
  return {
    app,
    component,
    pool: app.pools.get(component.pool)!,
    requestId,
    source: 'workflow-resume',
    requestDataJson: canonicalJson(requestData),
    session: record.sessionId !== null ? { continue: record.sessionId } : undefined,
    declaredOutputs: component.declaredOutputs ?? [],
  };
}
