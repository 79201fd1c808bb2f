/**
 * The core's tools the workflow engine calls, all with the execution's token
 * (docs/mcp.md, src/mcp/tools/workflow-tools.ts): the run is the core's, and
 * the engine reads and writes it only through these.
 */

/** The run's position, blackboard, retries, approvals and time left, and the app's components. */
export const LOAD_TOOL = 'core.workflow.load';
/** The state and trace steps after a node (or a wave), and the run's end. */
export const CHECKPOINT_TOOL = 'core.workflow.checkpoint';
/** Stream packets outside a checkpoint. */
export const EMIT_TOOL = 'core.workflow.emit';
/** A JIT component run by the core, with the pending checkpoint applied first. */
export const INVOKE_TOOL = 'core.component.invoke';
