/**
 * The reason of a schema error as a person fixes it (app and workflow files): where TypeBox says only
 * "Expected union value" for a value outside a set of literals (`runner: lm`,
 * `method: get`), the allowed values, the value given and the nearest allowed;
 * where it says "Unexpected property" (`compnent`, `idleTTL`), the nearest
 * property the object allows.
 */
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { closest } from './did-you-mean.js';

export function schemaErrorReason(error: ValueError): string {
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return unexpectedProperty(error);
  const members = (error.schema as { anyOf?: ReadonlyArray<{ const?: unknown }> }).anyOf;
  if (error.type !== ValueErrorType.Union || members === undefined || members.length === 0 || !members.every((member) => typeof member.const === 'string')) {
    return error.message;
  }
  const allowed = members.map((member) => member.const as string);
  const given = typeof error.value === 'string' ? `"${error.value}"` : JSON.stringify(error.value) ?? 'nothing';
  const near = typeof error.value === 'string' ? (allowed.find((value) => value.toLowerCase() === (error.value as string).toLowerCase()) ?? closest(error.value, allowed)) : undefined;
  return `must be one of ${allowed.join(', ')}; got ${given}${near !== undefined ? ` (did you mean ${near}?)` : ''}`;
}

/** An unknown property of an object, named, with the nearest property the object allows (a different case first). */
function unexpectedProperty(error: ValueError): string {
  const properties = (error.schema as { properties?: Record<string, unknown> }).properties;
  const key = error.path.slice(error.path.lastIndexOf('/') + 1).replace(/~1/g, '/').replace(/~0/g, '~');
  const known = Object.keys(properties ?? {});
  const near = known.find((name) => name.toLowerCase() === key.toLowerCase()) ?? closest(key, known);
  return `${error.message}${near !== undefined ? ` (did you mean ${near}?)` : ''}`;
}
