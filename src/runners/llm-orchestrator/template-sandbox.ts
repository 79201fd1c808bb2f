/**
 * Prompt templates are hostile input: an app's author, or whoever can change
 * its files, writes them, and nunjucks compiles them to JavaScript that runs in
 * the orchestrator, next to every MCP token it holds. Templates are data, never
 * code; three fences make them so, each installed into nunjucks itself
 * (`hardenNunjucks`), so that every template compiled or rendered anywhere in
 * the process has them:
 *
 * 1. **The grammar, at compile time.** nunjucks' parser is wrapped: a tree
 *    reaches the compiler only when template-grammar.ts allows every node of
 *    it, so what the compiler generates comes only from identifiers, escaped
 *    string literals and the compiler's own code. A refusal is a parse error
 *    with its line and column.
 * 2. **Lookups and calls, at render time.** nunjucks' runtime is patched: a
 *    variable is an own entry of the template's frames, of the render's
 *    variables or of the globals; an attribute is an own data property
 *    (template-values.ts); nothing inherited, no getter, nothing of a function.
 *    A call calls only macros, `caller` and the library's globals, with no
 *    `this`: nunjucks called everything with its Context as `this`, so
 *    `valueOf()` returned the Context and its Environment.
 * 3. **The environment.** Each render gets an environment of its own
 *    (`createSandboxedEnvironment`), frozen, whose filters, tests and globals are
 *    the frozen tables of template-library.ts: no render can change what another
 *    renders with.
 *
 * Behind them stay the process or container sandbox and Node's permission
 * model: the orchestrator has no network, no file system but its own code, and
 * no child processes. A template that loops or allocates without end is
 * stopped by the component's timeout or the heap limit, like a JIT script.
 */
import nunjucks from 'nunjucks';
import { templateTreeProblem, type TemplateNode, type TemplateProblem, BLOCKED_NAMES } from './template-grammar.js';
import { TEMPLATE_FILTERS, TEMPLATE_GLOBALS, TEMPLATE_TESTS, TEMPLATE_VOCABULARY } from './template-library.js';
import { currentRenderPosition, markRenderPosition, TemplateSandboxError } from './template-refusal.js';
import { allowCall, isTemplateCallable, ownDataProperty, viewSource } from './template-values.js';

// The constructors of every kind of function: each compiles a string into code.
const AsyncFunction = (async () => undefined).constructor;
const GeneratorFunction = function* () {
  yield undefined;
}.constructor;
const AsyncGeneratorFunction = async function* () {
  yield undefined;
}.constructor;

/**
 * Values no lookup hands to a template, whatever the path to them: a tripwire
 * behind the lookups' own rules, which already reach none of them.
 */
const FORBIDDEN_VALUES: ReadonlySet<unknown> = new Set<unknown>([Function, AsyncFunction, GeneratorFunction, AsyncGeneratorFunction, Object, Reflect, Proxy, eval, globalThis, process]);

/**
 * The Function constructor as this module found it: how the compiler's output
 * becomes functions, whatever the global `Function` is later.
 */
const FunctionConstructor = Function;

/**
 * Options of every compile and environment: prompts are not HTML, nothing is
 * escaped. `dev` keeps nunjucks from replacing a render error by a bare Error
 * with its message only: the error keeps its position, its cause and the
 * template it happened in (RenderError).
 */
const OPTIONS = Object.freeze({ autoescape: false, throwOnUndefined: false, trimBlocks: false, lstripBlocks: false, dev: true });

/** A render error as nunjucks hands it over, with what the fences add. */
export interface RenderError extends Error {
  /** 1-based. */
  readonly lineno?: number;
  readonly colno?: number;
  /** What was thrown inside the template: a TemplateSandboxError is a refusal. */
  readonly cause?: unknown;
  /** The template whose code failed (nunjucks names only the template rendered). */
  readonly templateName?: string;
}

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

interface Frame {
  lookup(name: string): unknown;
}
interface Context {
  readonly ctx: Record<string, unknown>;
}
interface Tokenizer {
  readonly lineno: number;
  readonly colno: number;
}

interface CompilerThis {
  _emit(code: string): void;
  _templateName(): string;
  compile(node: TemplateNode, frame: unknown): void;
}

/** The parts of nunjucks the fences reach, which its type declarations leave out. */
interface NunjucksInternals {
  runtime: {
    memberLookup(obj: unknown, key: unknown): unknown;
    contextOrFrameLookup(context: Context, frame: Frame, name: string): unknown;
    callWrap(fn: unknown, name: string, context: unknown, args: unknown[]): unknown;
    makeMacro(argNames: string[], kwargNames: string[], func: (...args: unknown[]) => unknown): (...args: unknown[]) => unknown;
    inOperator(key: unknown, value: unknown): boolean;
    handleError(error: unknown, lineno: number | undefined, colno: number | undefined): unknown;
    at(templateName: string, line: number, column: number): void;
    __uhlpHardened?: boolean;
  };
  parser: {
    parse(source: string, extensions?: unknown[], options?: object): TemplateNode;
    Parser: new (tokens: Tokenizer) => { readonly tokens: Tokenizer; parseAsRoot(): TemplateNode };
  };
  lexer: { lex(source: string, options?: object): Tokenizer };
  compiler: {
    compile(source: string, asyncFilters: string[], extensions: unknown[], name: string, options: object): string;
    Compiler: { prototype: Record<string, unknown> };
  };
  lib: {
    TemplateError: new (message: string | Error, lineno?: number, colno?: number) => Error & { lineno?: number; colno?: number };
    inOperator(key: unknown, value: unknown): boolean;
    isObject(value: unknown): boolean;
  };
}

export const nunjucksInternals = nunjucks as unknown as NunjucksInternals;

function refuse(what: string): never {
  throw new TemplateSandboxError(`${what} is not allowed in templates`);
}

/**
 * Installs the fences into nunjucks' parser, compiler and runtime; idempotent.
 * Besides the fences it makes compiled code strict and its error positions
 * 1-based (as nunjucks' parse errors are) and placed in the template that
 * failed, not the one whose catch the error happened to reach.
 */
export function hardenNunjucks(): void {
  const { runtime, parser, lexer, lib } = nunjucksInternals;
  if (runtime.__uhlpHardened) return;
  const handleError = runtime.handleError;
  const makeMacro = runtime.makeMacro;

  // Fence 1: every tree any compile in the process gets passed the grammar.
  // nunjucks' compiler calls `parser.parse` through the module object, so this
  // is the parse it uses.
  parser.parse = (source, extensions, options) => {
    if (extensions !== undefined && extensions.length > 0) throw new lib.TemplateError('extensions are not allowed in templates', 1, 1);
    const reader = new parser.Parser(lexer.lex(source, options));
    let root: TemplateNode;
    try {
      root = reader.parseAsRoot();
    } catch (error) {
      throw positioned(error, reader.tokens);
    }
    const problem = templateTreeProblem(root, TEMPLATE_VOCABULARY);
    if (problem) throw new lib.TemplateError(problem.cause, problem.line ?? undefined, problem.column ?? undefined);
    return root;
  };

  // Fence 2: lookups find own data only, calls call only what the runtime made.
  runtime.memberLookup = (obj, key) => {
    if (obj === undefined || obj === null) return undefined;
    // The key is made a primitive once, here: a key object whose toString
    // answered differently on a second call cannot pass the check as one name
    // and be used as another.
    const name = typeof key === 'number' ? key : String(key);
    if (typeof name === 'string' && BLOCKED_NAMES.has(name)) refuse(`the attribute "${name}"`);
    const value = ownDataProperty(obj, name);
    if (FORBIDDEN_VALUES.has(value)) refuse(`the attribute "${String(name)}"`);
    return value;
  };

  runtime.contextOrFrameLookup = (context, frame, name) => {
    if (BLOCKED_NAMES.has(name)) refuse(`the name "${name}"`);
    // Frames keep their variables in prototype-less tables: a lookup finds own entries only.
    const found = frame.lookup(name);
    if (found !== undefined) {
      if (FORBIDDEN_VALUES.has(found)) refuse(`the name "${name}"`);
      return found;
    }
    const variable = ownDataProperty(context.ctx, name);
    const value = variable !== undefined ? variable : TEMPLATE_GLOBALS[name];
    if (FORBIDDEN_VALUES.has(value)) refuse(`the name "${name}"`);
    // A render variable (not one the template set itself) seen by whoever tracks what the render reads.
    return lookupObserver !== undefined ? lookupObserver(name, value) : value;
  };

  runtime.callWrap = (fn, name, _context, args) => {
    // nunjucks' own messages; values have no methods here, so say what can be called.
    if (!fn) throw new Error(`Unable to call \`${name}\`, which is undefined or falsey${name.includes('[') ? ' (values have no methods in templates: use a filter)' : ''}`);
    if (typeof fn !== 'function') throw new Error(`Unable to call \`${name}\`, which is not a function`);
    if (!isTemplateCallable(fn)) refuse(`calling \`${name}\` (only macros, caller, range, cycler and joiner can be called)`);
    return (fn as (...a: unknown[]) => unknown).apply(undefined, args);
  };

  runtime.makeMacro = (argNames, kwargNames, func) => allowCall(makeMacro(argNames, kwargNames, func));

  // `key in dict` asks for an own key, as every lookup does; lists and strings keep their membership test.
  runtime.inOperator = (key, value) => {
    const source = viewSource(value);
    if (!lib.isObject(source)) return lib.inOperator(key, value);
    const name = typeof key === 'number' ? key : String(key);
    // Through a view, the key asked for counts as read.
    if (source !== value) ownDataProperty(value, name);
    return Object.hasOwn(source as object, name);
  };

  // Where a render is, for its errors (template-refusal.ts): every lookup,
  // call, filter, `in` and `is` tells the runtime its template, line and
  // column as it starts.
  const compilerPrototype = nunjucksInternals.compiler.Compiler.prototype;
  for (const kind of ['compileLookupVal', 'compileFunCall', 'compileFilter', 'compileIn', 'compileIs']) {
    const compile = compilerPrototype[kind] as (this: CompilerThis, node: TemplateNode, frame: unknown) => void;
    compilerPrototype[kind] = function (this: CompilerThis, node: TemplateNode, frame: unknown): void {
      const line = Math.trunc(Number(node.lineno)) || 0;
      const column = Math.trunc(Number(node.colno)) || 0;
      this._emit(`(lineno = ${line}, colno = ${column}, runtime.at(${this._templateName()}, ${line}, ${column}), `);
      compile.call(this, node, frame);
      this._emit(')');
    };
  }
  runtime.at = markRenderPosition;

  // A sign is compiled as the operator pasted before its operand, so `--x`
  // became JavaScript's decrement (of a local, for a variable set in the
  // template); each operand gets parentheses of its own.
  for (const [kind, sign] of [['compileNeg', '-'], ['compilePos', '+']] as const) {
    compilerPrototype[kind] = function (this: CompilerThis, node: TemplateNode, frame: unknown): void {
      this._emit(`${sign}(`);
      this.compile(node['target'] as TemplateNode, frame);
      this._emit(')');
    };
  }

  // Compiled code runs in strict mode: an assignment nunjucks' compiler emits
  // for a variable declared in another function's scope (`{% from %}` inside
  // `{% filter %}`, then `{% set %}` of the same name) fails instead of
  // creating a global that another render could read.
  const compile = nunjucksInternals.compiler.compile;
  nunjucksInternals.compiler.compile = (source, asyncFilters, extensions, name, options) => `"use strict";\n${compile(source, asyncFilters, extensions, name, options)}`;

  // An error is placed where the render was when the first function's catch
  // saw it (template-refusal.ts); passing on through other templates it keeps
  // that place. Before the render reached a lookup, call or filter, nunjucks'
  // own position of the catching function stands, made 1-based.
  runtime.handleError = (error, lineno, colno) => {
    const at = currentRenderPosition();
    const handled = (at !== undefined ? handleError(error, at.line, at.column) : handleError(error, lineno === undefined ? lineno : lineno + 1, colno === undefined ? colno : colno + 1)) as { templateName?: string };
    if (typeof handled === 'object' && handled !== null && handled.templateName === undefined && at !== undefined) handled.templateName = at.templateName;
    return handled;
  };
  runtime.__uhlpHardened = true;
}

/**
 * A parse error with a position: nunjucks' own errors have one; a parser that
 * failed in other ways (a TypeError on a malformed tag, a stack overflow) is
 * placed where its tokenizer stopped.
 */
function positioned(error: unknown, at: Tokenizer): Error {
  const thrown = error as { message?: unknown; lineno?: unknown };
  if (typeof thrown?.lineno === 'number') return error as Error;
  const message = typeof thrown?.message === 'string' ? thrown.message : String(error);
  return new nunjucksInternals.lib.TemplateError(`cannot parse the template: ${message}`, at.lineno + 1, at.colno + 1);
}

/** A compiled template: nunjucks' root and block functions. */
export type TemplateCode = Readonly<Record<string, unknown>>;

/** Compiles `source` (the template `name`) through the fences, or says why not: a 1-based position and the cause. */
export function compileTemplate(source: string, name: string): { code: TemplateCode } | { problem: TemplateProblem } {
  hardenNunjucks();
  let code: string;
  try {
    code = nunjucksInternals.compiler.compile(source, [], [], name, OPTIONS);
  } catch (error) {
    const thrown = error as { message?: unknown; lineno?: unknown; colno?: unknown };
    const message = typeof thrown?.message === 'string' ? thrown.message : String(error);
    return {
      problem: {
        line: typeof thrown?.lineno === 'number' ? thrown.lineno : null,
        column: typeof thrown?.colno === 'number' ? thrown.colno : null,
        cause: message,
      },
    };
  }
  // The compiler's own output, from a tree the grammar allowed: nunjucks runs it the same way.
  let compiled: Record<string, unknown>;
  try {
    compiled = new FunctionConstructor(code)() as Record<string, unknown>;
  } catch (error) {
    // A construct nunjucks compiles wrongly and the grammar does not know of yet.
    return { problem: { line: null, column: null, cause: `nunjucks compiled the template to code that does not run: ${String(error)}` } };
  }
  return { code: Object.freeze(compiled) };
}

/**
 * A fresh, frozen nunjucks environment over `loader`, for one render: its
 * filters, tests and globals are the library's frozen tables, found among
 * their own entries only.
 */
export function createSandboxedEnvironment(loader: nunjucks.ILoader): nunjucks.Environment {
  hardenNunjucks();
  const env = new nunjucks.Environment(loader, { ...OPTIONS });
  const raw = env as unknown as Record<string, unknown> & { opts: object; loaders: object[] };
  raw['filters'] = TEMPLATE_FILTERS;
  raw['tests'] = TEMPLATE_TESTS;
  raw['globals'] = TEMPLATE_GLOBALS;
  raw['asyncFilters'] = Object.freeze([]);
  raw['extensions'] = Object.freeze(Object.create(null) as object);
  raw['extensionsList'] = Object.freeze([]);
  const ownOnly = (table: Readonly<Record<string, unknown>>, kind: string) => (name: string) => {
    if (!Object.hasOwn(table, name)) throw new TemplateSandboxError(`${kind} not found: ${name}`);
    return table[name];
  };
  raw['getFilter'] = ownOnly(TEMPLATE_FILTERS, 'filter');
  raw['getTest'] = ownOnly(TEMPLATE_TESTS, 'test');
  Object.freeze(raw.opts);
  Object.freeze(raw.loaders);
  return Object.freeze(env);
}
