/**
 * What the core knows of workflows at a revision: the app as it was at a run's
 * pinned revision (the registry's when it is still the one served, else read
 * again from the materialized revision, which never changes), the workflow
 * file of a WORKFLOW component (read from that revision and validated as when
 * the app loaded).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { AppSnapshot } from '../apps/app-snapshot.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { appRevisionDir } from '../apps/revision-paths.js';
import { APP_FILE } from '../apps/protected-paths.js';
import { parseDocument } from 'yaml';
import { validateAppDefinition } from '../apps/validation/validate-app-definition.js';
import { readInside } from '../apps/load-app-definitions.js';
import { workflowAppView, workflowFile } from '../apps/validation/validate-workflow-component.js';
import { WorkflowInvalidError } from '../shared/workflow-errors.js';
import { readWorkflow } from '../contract/workflow/validate-workflow.js';
import type { WorkflowDefinition } from '../contract/workflow/workflow-schema.js';

/** Pinned apps and workflows kept at once; older ones are read again when needed. */
const KEPT = 64;

export class WorkflowCatalog {
  private readonly apps = new Map<string, LoadedApp>();
  private readonly workflows = new Map<string, WorkflowDefinition>();

  constructor(
    private readonly options: {
      readonly revisionsRoot: string;
      readonly registry: Pick<ApplicationRegistry, 'snapshot'>;
    },
  ) {}

  /** The revision of the app the core serves now; undefined when it serves no such app. */
  currentRevision(appId: string): string | undefined {
    return this.options.registry.snapshot.apps.get(appId)?.revision;
  }

  /** The app at `revision`; UHLP_WORKFLOW_INVALID when that revision of it is gone or no longer valid. */
  app(appId: string, revision: string): LoadedApp {
    const current = this.options.registry.snapshot.apps.get(appId);
    if (current !== undefined && current.revision === revision) return current;
    const key = `${appId}\0${revision}`;
    const kept = this.apps.get(key);
    if (kept !== undefined) return kept;
    const dir = appRevisionDir(this.options.revisionsRoot, appId, revision);
    const file = `apps/${appId}/${APP_FILE}`;
    const source = existsSync(path.join(dir, APP_FILE)) ? readFileSync(path.join(dir, APP_FILE), 'utf8') : undefined;
    if (source === undefined) throw new WorkflowInvalidError(`app ${appId} has no revision ${revision.slice(0, 12)} here any more`, { app: appId, revision });
    const parsed = parseDocument(source, { uniqueKeys: true });
    const result = parsed.errors.length > 0
      ? { ok: false as const, problems: [{ file, path: '/', reason: parsed.errors[0]!.message }] }
      : validateAppDefinition(parsed.toJS(), {
          file,
          appDirName: appId,
          fileExists: (relative) => {
            const target = path.resolve(dir, relative);
            return target.startsWith(path.resolve(dir) + path.sep) && existsSync(target);
          },
          readFile: (relative) => readInside(dir, relative),
        });
    if (!result.ok) throw new WorkflowInvalidError(`app ${appId} at ${revision.slice(0, 12)} is not valid`, { app: appId, revision, problems: result.problems.slice(0, 20) });
    const app = new AppSnapshot(revision, [{ file, document: result.document }], []).apps.get(appId)!;
    remember(this.apps, key, app);
    return app;
  }

  /** The workflow of `workflowId` in `app` at the app's revision; UHLP_WORKFLOW_INVALID when it cannot be read or breaks the schema. */
  workflow(app: LoadedApp, workflowId: string): WorkflowDefinition {
    const key = `${app.id}\0${app.revision}\0${workflowId}`;
    const kept = this.workflows.get(key);
    if (kept !== undefined) return kept;
    const relative = workflowFile(workflowId);
    const text = readInside(path.resolve(appRevisionDir(this.options.revisionsRoot, app.id, app.revision)), relative);
    const file = `apps/${app.id}/${relative}`;
    if (text === undefined) throw new WorkflowInvalidError(`${file} cannot be read at ${app.revision.slice(0, 12)}`, { file });
    const read = readWorkflow(text, workflowAppView(app.document.spec));
    if (!read.ok) throw new WorkflowInvalidError(`${file} is not a valid workflow: ${read.problems[0]!.path}: ${read.problems[0]!.reason}`, { file, problems: read.problems.slice(0, 20) });
    remember(this.workflows, key, read.workflow);
    return read.workflow;
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.set(key, value);
  for (const old of map.keys()) {
    if (map.size <= KEPT) break;
    map.delete(old);
  }
}
