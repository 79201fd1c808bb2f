/**
 * Prompt templates are hostile input: an app's author, or whoever can change
 * its files, writes them, and nunjucks compiles them to JavaScript that runs in
 * the orchestrator. Out of the box nunjucks is no sandbox: `{{ range.constructor
 * ("return process")() }}` reaches `process` through the Function constructor,
 * and so does any variable's `constructor.constructor`. Three fences close that,
 * each enough on its own for the escapes known to us:
 *
 * 1. Before a template is used, its syntax tree is checked (`templateProblem`):
 *    no name, attribute or dict key from BLOCKED_NAMES, no filter the
 *    environment does not define.
 * 2. The nunjucks runtime's lookups are replaced (`hardenNunjucksRuntime`): an
 *    attribute or variable named in BLOCKED_NAMES is refused, whatever
 *    expression computed the name, and no lookup hands out the Function
 *    constructors, `Object`, `eval`, `globalThis` or `process`; calling one is refused.
 * 3. The environment (`createSandboxedEnvironment`) finds filters, tests and
 *    globals among its own entries only (never on Object.prototype), and caps
 *    `range` as Jinja2's sandbox does.
 *
 * Behind them stay the process or container sandbox and Node's permission
 * model: the orchestrator has no network, no file system but its own code, and
 * no child processes. A template that loops or allocates without end is
 * stopped by the component's timeout or the heap limit, like a JIT script.
 *
 * The runtime is patched for the whole process: the orchestrator renders no
 * other templates, and every template compiled anywhere in it gets the fences.
 */
import nunjucks from 'nunjucks';

/**
 * Names a template may not use as a variable, an attribute or a dict key: the
 * ways from a value to its constructor, its prototype or the caller's frames.
 */
export const BLOCKED_NAMES: ReadonlySet<string> = new Set([
  'constructor',
  'prototype',
  '__proto__',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
  'caller',
  'callee',
  'arguments',
]);

/** Largest list `range()` makes (Jinja2's sandbox has the same). */
export const MAX_RANGE = 100_000;

// The constructors of every kind of function: each compiles a string into code.
const AsyncFunction = (async () => undefined).constructor;
const GeneratorFunction = function* () {
  yield undefined;
}.constructor;
const AsyncGeneratorFunction = async function* () {
  yield undefined;
}.constructor;

/** Values no lookup hands to a template, whatever the path to them. */
const FORBIDDEN_VALUES: ReadonlySet<unknown> = new Set<unknown>([
  Function,
  AsyncFunction,
  GeneratorFunction,
  AsyncGeneratorFunction,
  Object,
  Reflect,
  Proxy,
  eval,
  globalThis,
  process,
]);

/** Sees every render variable a template looks up, and may hand the template a view of it instead. */
export type LookupObserver = (name: string, value: unknown) => unknown;

let lookupObserver: LookupObserver | undefined;

/**
 * Runs `render` with `observer` told of every variable lookup. nunjucks renders
 * synchronously with a synchronous loader (the only kind used here), so the
 * observer sees exactly the lookups of this render, even when several renders
 * of one runner are under way.
 */
export function withLookupObserver<T>(observer: LookupObserver | undefined, render: () => T): T {
  if (observer === undefined) return render();
  const previous = lookupObserver;
  lookupObserver = observer;
  try {
    return render();
  } finally {
    lookupObserver = previous;
  }
}

/** A refusal of the template sandbox; nunjucks reports it with the template and line. */
export class TemplateSandboxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateSandboxError';
  }
}

/** The parts of nunjucks the fences reach, which its type declarations leave out. */
interface NunjucksInternals {
  runtime: {
    memberLookup(obj: unknown, key: unknown): unknown;
    contextOrFrameLookup(context: { lookup(name: string): unknown }, frame: { lookup(name: string): unknown }, name: string): unknown;
    callWrap(fn: unknown, name: string, context: unknown, args: unknown[]): unknown;
    handleError(error: unknown, lineno: number | undefined, colno: number | undefined): unknown;
    __uhlpHardened?: boolean;
  };
  parser: { parse(source: string, extensions: unknown[], options: object): TemplateNode };
  compiler: { compile(source: string, asyncFilters: string[], extensions: unknown[], name: string, options: object): string };
}

export const nunjucksInternals = nunjucks as unknown as NunjucksInternals;

function refuse(what: string): never {
  throw new TemplateSandboxError(`${what} is not allowed in templates`);
}

/**
 * Replaces the runtime's lookups with fenced ones; idempotent. It also makes
 * the positions of render errors 1-based, as nunjucks' parse errors are:
 * compiled templates report them 0-based, and nunjucks leaves a position of 0
 * out of its message, so an error on a template's first line would name no line.
 */
export function hardenNunjucksRuntime(): void {
  const runtime = nunjucksInternals.runtime;
  if (runtime.__uhlpHardened) return;
  const callWrap = runtime.callWrap;
  const handleError = runtime.handleError;

  runtime.memberLookup = (obj, key) => {
    if (obj === undefined || obj === null) return undefined;
    // The key is made a primitive once, here: a key object whose toString
    // answered differently on a second call cannot pass the check as one name
    // and be used as another.
    const name = typeof key === 'number' ? key : String(key);
    if (typeof name === 'string' && BLOCKED_NAMES.has(name)) refuse(`the attribute "${name}"`);
    const value = (obj as Record<string | number, unknown>)[name];
    if (FORBIDDEN_VALUES.has(value)) refuse(`the attribute "${String(name)}"`);
    if (typeof value === 'function') {
      // As nunjucks does: a method keeps its object as `this`.
      return (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(obj, args);
    }
    return value;
  };

  runtime.contextOrFrameLookup = (context, frame, name) => {
    if (BLOCKED_NAMES.has(name)) refuse(`the name "${name}"`);
    const found = frame.lookup(name);
    const value = found !== undefined ? found : context.lookup(name);
    if (FORBIDDEN_VALUES.has(value)) refuse(`the name "${name}"`);
    // A render variable (not one the template set itself) seen by whoever tracks what the render reads.
    return found === undefined && lookupObserver !== undefined ? lookupObserver(name, value) : value;
  };

  runtime.callWrap = (fn, name, context, args) => {
    if (FORBIDDEN_VALUES.has(fn)) refuse(`calling ${name}`);
    return callWrap(fn, name, context, args);
  };

  runtime.handleError = (error, lineno, colno) => handleError(error, lineno === undefined ? lineno : lineno + 1, colno === undefined ? colno : colno + 1);
  runtime.__uhlpHardened = true;
}

/** A nunjucks environment whose filters, tests and globals are its own entries only. */
export function createSandboxedEnvironment(loader: nunjucks.ILoader): nunjucks.Environment {
  hardenNunjucksRuntime();
  // Prompts are not HTML: nothing is escaped.
  const env = new nunjucks.Environment(loader, { autoescape: false, throwOnUndefined: false });
  const raw = env as unknown as {
    filters: Record<string, unknown>;
    tests: Record<string, unknown>;
    globals: Record<string, unknown>;
    getFilter(name: string): unknown;
    getTest(name: string): unknown;
  };
  // Without a prototype, `name in globals` and `globals[name]` find only real globals.
  raw.globals = Object.assign(Object.create(null) as Record<string, unknown>, raw.globals);
  const range = raw.globals['range'] as (start: number, stop?: number, step?: number) => number[];
  raw.globals['range'] = (start: number, stop?: number, step?: number): number[] => {
    const [from, to] = stop === undefined ? [0, start] : [start, stop];
    const by = step || 1;
    const length = Math.ceil((Number(to) - Number(from)) / by);
    if (!(length <= MAX_RANGE)) throw new TemplateSandboxError(`range() makes at most ${MAX_RANGE} items`);
    return range(start, stop, step);
  };
  const ownOnly = (table: 'filters' | 'tests', kind: string) => (name: string) => {
    if (!Object.hasOwn(raw[table], name)) throw new TemplateSandboxError(`${kind} not found: ${name}`);
    return raw[table][name];
  };
  raw.getFilter = ownOnly('filters', 'filter');
  raw.getTest = ownOnly('tests', 'test');
  return env;
}

/** A node of nunjucks' syntax tree, as far as the check reads it. */
export interface TemplateNode {
  readonly typename: string;
  /** 0-based. */
  readonly lineno?: number;
  readonly colno?: number;
  readonly fields?: readonly string[];
  readonly value?: unknown;
  readonly [field: string]: unknown;
}

export interface TemplateProblem {
  /** 1-based. */
  readonly line: number | undefined;
  readonly cause: string;
}

/**
 * The first thing in a parsed template that the sandbox refuses, or undefined:
 * a blocked name (`{{ x.constructor }}`, `{% set __proto__ = 1 %}`,
 * `{{ {"__proto__": 1} }}`) or a filter `hasFilter` does not know.
 */
export function templateProblem(root: TemplateNode, hasFilter: (name: string) => boolean): TemplateProblem | undefined {
  const at = (node: TemplateNode | undefined, cause: string): TemplateProblem => ({ line: node?.lineno !== undefined ? node.lineno + 1 : undefined, cause });
  const stack: TemplateNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    switch (node.typename) {
      case 'Symbol':
        if (typeof node.value === 'string' && BLOCKED_NAMES.has(node.value)) return at(node, `the name "${node.value}" is not allowed in templates`);
        break;
      case 'LookupVal': {
        const key = node['val'] as TemplateNode | undefined;
        if (key?.typename === 'Literal' && BLOCKED_NAMES.has(String(key.value))) return at(key, `the attribute "${String(key.value)}" is not allowed in templates`);
        break;
      }
      case 'Pair': {
        const key = node['key'] as TemplateNode | undefined;
        if (key?.typename === 'Literal' && BLOCKED_NAMES.has(String(key.value))) return at(key, `the key "${String(key.value)}" is not allowed in templates`);
        break;
      }
      case 'Filter': {
        const name = node['name'] as TemplateNode | undefined;
        if (name?.typename === 'Symbol' && typeof name.value === 'string' && !hasFilter(name.value)) return at(name, `filter not found: ${name.value}`);
        break;
      }
    }
    for (const child of childNodes(node)) stack.push(child);
  }
  return undefined;
}

/** The nodes under `node`, last first (the walk pops them in source order). */
function childNodes(node: TemplateNode): TemplateNode[] {
  const children: TemplateNode[] = [];
  const add = (value: unknown): void => {
    if (Array.isArray(value)) for (const item of value) add(item);
    else if (typeof value === 'object' && value !== null && typeof (value as TemplateNode).typename === 'string') children.push(value as TemplateNode);
  };
  for (const field of node.fields ?? []) add(node[field]);
  return children.reverse();
}
