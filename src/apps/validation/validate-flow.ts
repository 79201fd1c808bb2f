/**
 * The checks of a flow declaration (schema/flow-schema.ts) a schema cannot
 * express: every key and priority is an expression the flow grammar reads
 * (src/turns/flow-expression.ts), and a route's `params.<name>` names a
 * parameter of its HTTP path. Refused at load, with the field's path, so a
 * hostile or mistyped expression never reaches a turn.
 */
import type { FlowSpec } from '../schema/flow-schema.js';
import { FlowExpressionError, parseFlowExpression, type FlowExpression } from '../../turns/flow-expression.js';

/** Problems as [path under the flow block, reason]. `pathParameters`: the HTTP route's parameter names; undefined for a component or another source. */
export function flowProblems(flow: FlowSpec, pathParameters: ReadonlySet<string> | undefined): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  const check = (where: string, text: string | undefined): void => {
    if (text === undefined) return;
    let expression: FlowExpression;
    try {
      expression = parseFlowExpression(text);
    } catch (error) {
      if (!(error instanceof FlowExpressionError)) throw error;
      problems.push([where, error.message]);
      return;
    }
    if (expression.root === 'params' && pathParameters !== undefined && !pathParameters.has(expression.path[0]!)) {
      problems.push([where, `the route's path has no parameter :${expression.path[0]}`]);
    } else if (expression.root === 'params' && expression.path.length > 1) {
      problems.push([where, 'a path parameter is text: nothing is under it']);
    }
  };
  check('concurrency/key', flow.concurrency?.key);
  check('throttle/key', flow.throttle?.key);
  check('debounce/key', flow.debounce?.key);
  check('priority', flow.priority);
  return problems;
}
