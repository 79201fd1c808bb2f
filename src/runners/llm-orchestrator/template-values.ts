/**
 * What a rendering template may touch of a value. A lookup (`x.a`, `x["a"]`,
 * a filter's attribute argument) finds only an own data property: never an
 * inherited one (the methods of Object.prototype, String.prototype, …), never a
 * getter, and nothing of a function (its `prototype`, its `constructor`). A
 * call (`f()`) calls only functions the template runtime made: macros,
 * `caller`, and the globals of template-library.ts, each marked with
 * `allowCall`. Everything else a template holds is data.
 */

/** Functions a template may call, marked by whoever made them. */
const callables = new WeakSet<object>();

/** Marks `fn` as callable from templates; returns it. */
export function allowCall<F extends (...args: never[]) => unknown>(fn: F): F {
  callables.add(fn);
  return fn;
}

export function isTemplateCallable(fn: unknown): boolean {
  return typeof fn === 'function' && callables.has(fn);
}

/**
 * Read-only views (template-inputs.ts) and the objects they stand for: a
 * lookup decides what is an own data property on the object itself, so that
 * asking does not count as reading the whole object.
 */
const viewSources = new WeakMap<object, object>();

export function registerView(view: object, source: object): void {
  viewSources.set(view, source);
}

/** The object a view stands for, or `value` itself. */
export function viewSource(value: unknown): unknown {
  return typeof value === 'object' && value !== null ? (viewSources.get(value) ?? value) : value;
}

/**
 * The own data property `key` of `value` as a template sees it, or undefined.
 * Strings have their characters and length; numbers, booleans and functions
 * have nothing.
 */
export function ownDataProperty(value: unknown, key: string | number): unknown {
  if (value === null || value === undefined || typeof value === 'function') return undefined;
  const source = viewSource(value);
  const holder = typeof source === 'object' ? (source as object) : typeof source === 'string' ? Object(source) : undefined;
  if (holder === undefined) return undefined;
  const descriptor = Object.getOwnPropertyDescriptor(holder, key);
  if (descriptor === undefined || !('value' in descriptor)) {
    // A view notes a key it does not have: the render read its absence.
    if (source !== value && !(key in holder)) void (value as Record<string | number, unknown>)[key];
    return undefined;
  }
  // Through a view, so that it notes the read and hands out a view of the value.
  return source !== value ? (value as Record<string | number, unknown>)[key] : descriptor.value;
}
