/**
 * The run's workflow as the engine reads it: the file at the run's revision
 * (through MCP), validated again against the schema and the app's components
 * (validate-workflow.ts), and its state schema compiled. A revision never
 * changes, so each is read and compiled once per sandbox, for the last few
 * workflows seen.
 */
import { compileOutputSchema } from '../../../contract/output-schema.js';
import { readWorkflow, type WorkflowRead } from '../../../contract/workflow/validate-workflow.js';
import type { WorkflowDefinition } from '../../../contract/workflow/workflow-schema.js';
import type { ToolsClient } from '../../kit/tools-client.js';
import type { DefinitionFiles } from '../definition-files.js';
import type { ComponentView } from './nodes/node-context.js';

/** Validated workflows (and compiled state schemas) kept per sandbox (app, revision, file). */
const KEPT_WORKFLOWS = 32;

export type StateSchema = ReturnType<typeof compileOutputSchema>;

export class WorkflowSource {
  private readonly workflows = new Map<string, WorkflowRead>();
  private readonly stateSchemas = new Map<string, StateSchema>();

  constructor(private readonly files: DefinitionFiles) {}

  /** The workflow in `file` of `appId` at `revision`, or its problems; throws DefinitionFileError when the file cannot be read. */
  async read(appId: string, revision: string, file: string, components: Readonly<Record<string, ComponentView>>, tools: ToolsClient): Promise<WorkflowRead> {
    const key = `${appId}\0${revision}\0${file}`;
    let read = this.workflows.get(key);
    if (read === undefined) {
      const text = await this.files.read(appId, revision, file, tools);
      read = readWorkflow(text, { componentHandler: (id) => components[id]?.handler });
      keep(this.workflows, key, read);
    }
    return read;
  }

  /** The compiled state schema of `workflowId` (of `appId` at `revision`); undefined when the workflow has none. */
  stateSchema(appId: string, revision: string, workflowId: string, workflow: WorkflowDefinition): StateSchema | undefined {
    const key = `${appId}\0${revision}\0${workflowId}`;
    let schema = this.stateSchemas.get(key);
    if (schema === undefined && workflow.state.schema !== undefined) {
      schema = compileOutputSchema(workflow.state.schema);
      keep(this.stateSchemas, key, schema);
    }
    return schema;
  }
}

/** Adds an entry, dropping the oldest past KEPT_WORKFLOWS (a Map iterates in insertion order). */
function keep<T>(map: Map<string, T>, key: string, value: T): void {
  map.set(key, value);
  for (const old of map.keys()) {
    if (map.size <= KEPT_WORKFLOWS) break;
    map.delete(old);
  }
}
