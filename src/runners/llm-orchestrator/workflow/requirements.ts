/**
 * Pre-flight constraints (seed 004 §2) as the engine applies them: the
 * workflow's own before a fresh run's first node, a node's own before it runs.
 * The first failed required one stops the run (422); others are only recorded.
 */
import type { Blackboard } from '../../../contract/workflow/blackboard.js';
import { checkConstraints } from '../../../contract/workflow/preflight.js';
import type { Constraint } from '../../../contract/workflow/workflow-schema.js';
import { WorkflowPreflightFailedError } from '../../../shared/workflow-errors.js';

/** The first failed required constraint as the run's error, or undefined; `node` names the node whose constraint it is. */
export function requirementsFailure(constraints: readonly Constraint[], board: Blackboard, node?: string): WorkflowPreflightFailedError | undefined {
  if (constraints.length === 0) return undefined;
  const failed = checkConstraints(constraints, board).failed;
  if (failed === undefined) return undefined;
  const { constraint } = failed;
  return new WorkflowPreflightFailedError(constraint.error_message, {
    variable: constraint.variable,
    operator: constraint.operator,
    ...(constraint.field !== undefined ? { field: constraint.field } : {}),
    ...(node !== undefined ? { node } : {}),
  });
}
