/**
 * JSON Merge Patch (RFC 7396): what a fork's `set` does to the blackboard. An
 * object patch merges key by key, `null` removes a key, anything else replaces
 * the value whole (arrays included). Keys are set as own properties, so a
 * `__proto__` key in a patch is a key like any other, never a prototype.
 */

/** `target` with `patch` applied; neither is changed. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = {};
  if (isObject(target)) for (const [key, value] of Object.entries(target)) setOwn(result, key, value);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else setOwn(result, key, applyMergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value));
  }
  return result;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}
