/**
 * The rules of a component that runs a published cs-js bundle (`cs:`) that
 * the schema cannot state: a JIT component, with `cs` instead of `jit`, naming
 * either a function (and a ref) or one bundle by sha256.
 */
import type { ComponentSpec } from '../schema/app-definition-schema.js';
import { parseRef } from '../../functions/function-ref.js';

/** `[json path, reason]` for each problem of the component's `cs` block. */
export function csComponentProblems(component: ComponentSpec, at: string): Array<[string, string]> {
  const cs = component.cs;
  if (cs === undefined) return [];
  const problems: Array<[string, string]> = [];
  if (component.handler !== 'JIT') problems.push([`${at}/cs`, `cs runs a bundle as generated code: the handler must be JIT, not ${component.handler}`]);
  if (component.jit !== undefined) problems.push([`${at}/jit`, 'a component runs either a script (jit) or a bundle (cs), not both']);
  if ((cs.function === undefined) === (cs.sha256 === undefined)) problems.push([`${at}/cs`, 'name exactly one of function (with ref) or sha256']);
  if (cs.sha256 !== undefined && cs.ref !== undefined) problems.push([`${at}/cs/ref`, 'a ref goes with function; a sha256 names one bundle already']);
  if (cs.ref !== undefined) {
    try {
      parseRef(cs.ref);
    } catch (error) {
      problems.push([`${at}/cs/ref`, (error as Error).message]);
    }
  }
  return problems;
}
