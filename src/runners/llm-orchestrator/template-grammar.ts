/**
 * The grammar a prompt template may use: an allowlist over the syntax trees of
 * nunjucks' own parser. nunjucks' compiler pastes the text of names (variables,
 * attributes, filters, tests, macro and block names, import targets, the
 * callee of a call) into the JavaScript it generates without escaping them,
 * and its lexer reads `"`, `` ` ``, `\`, `;`, `&`, `?` and `$` as parts of a
 * name: `{{ x"&&Function`…```&&" }}` was code. So a tree is compiled only when
 * every node is one of the kinds below, in the place the table allows it, and
 *
 * - every name is an identifier (`[A-Za-z_][A-Za-z0-9_]*`) outside BLOCKED_NAMES;
 * - the attributes and string subscripts of what a call calls (`m.field(...)`)
 *   are identifiers: the compiler pastes their text too, to name the callee in
 *   its error message;
 * - filters and tests are the sandbox's own (template-library.ts), and a test
 *   takes one argument (nunjucks compiles a test's arguments with no comma
 *   between them, so two made `"a"["constructor"]`);
 * - literals are strings, numbers, booleans and none: no regular expressions;
 * - no extension tags and none of nunjucks' async tags;
 * - and, where nunjucks' compiler emits code that does not run: a macro names
 *   each argument once (compiled code is strict), and an include, import,
 *   from-import, extends or block does not stand directly in a switch case or
 *   a for-else;
 * - nothing nests deeper than MAX_TEMPLATE_DEPTH.
 *
 * Strings (text, string literals, subscripts such as `headers["x-user"]`) go
 * through the compiler's literal escaping, which is complete for JavaScript
 * string literals; they may hold anything.
 */
import nunjucks from 'nunjucks';

/** A node of nunjucks' syntax tree, as far as the check reads it. */
export interface TemplateNode {
  readonly typename: string;
  /** 0-based. */
  readonly lineno?: number;
  readonly colno?: number;
  readonly value?: unknown;
  readonly [field: string]: unknown;
}

/** nunjucks' node classes by name; its type declarations leave them out. */
const NODE_CLASSES = (nunjucks as unknown as { nodes: Readonly<Record<string, { prototype: object } | undefined>> }).nodes;

/**
 * Names a template may not use as a variable, an attribute, a dict key, a macro,
 * block or argument name: the ways from a value to its constructor, its
 * prototype or the caller's frames, and the inherited methods of every object
 * (`valueOf()` resolved to Object.prototype.valueOf and returned nunjucks' Context).
 */
export const BLOCKED_NAMES: ReadonlySet<string> = new Set([
  'constructor',
  'prototype',
  '__proto__',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
  'callee',
  'arguments',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  'toString',
  'valueOf',
]);

/** Deepest nesting of tags and expressions a template may have. */
export const MAX_TEMPLATE_DEPTH = 200;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** JavaScript operators nunjucks compiles a comparison to, by the token it read. */
const COMPARISONS: ReadonlySet<string> = new Set(['==', '===', '!=', '!==', '<', '>', '<=', '>=']);

/** Tags the rest of their function continues in a callback of (see `body`), by node kind. */
const CONTINUING_TAGS: ReadonlyMap<string, string> = new Map([
  ['Include', 'include'],
  ['Import', 'import'],
  ['FromImport', 'from'],
  ['Extends', 'extends'],
  ['Block', 'block'],
]);

const BINARY = new Set(['In', 'Or', 'And', 'Add', 'Concat', 'Sub', 'Mul', 'Div', 'FloorDiv', 'Mod', 'Pow']);
const UNARY = new Set(['Not', 'Neg', 'Pos']);

/** Where a refusal is: 1-based, as nunjucks reports its own errors. */
export interface TemplateProblem {
  readonly line: number | null;
  readonly column: number | null;
  readonly cause: string;
}

/** The filters and tests a template may name. */
export interface TemplateVocabulary {
  readonly filters: ReadonlySet<string>;
  readonly tests: ReadonlySet<string>;
}

class Refusal {
  constructor(
    readonly node: TemplateNode | undefined,
    readonly cause: string,
  ) {}
}

/** The first thing in `root` (a tree of nunjucks' parser) outside the grammar, or undefined. */
export function templateTreeProblem(root: TemplateNode, vocabulary: TemplateVocabulary): TemplateProblem | undefined {
  try {
    new TreeCheck(vocabulary).root(root);
    return undefined;
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    const node = error.node;
    const line = typeof node?.lineno === 'number' ? node.lineno + 1 : null;
    const column = typeof node?.colno === 'number' ? node.colno + 1 : null;
    return { line, column, cause: error.cause };
  }
}

/** A name as a refusal quotes it: short, and on one line. */
function quoted(text: unknown): string {
  const json = JSON.stringify(String(text));
  return json.length > 40 ? `${json.slice(0, 36)}…"` : json;
}

class TreeCheck {
  private depth = 0;
  private readonly blocks = new Set<string>();

  constructor(private readonly vocabulary: TemplateVocabulary) {}

  root(node: TemplateNode): void {
    this.shape(node, 'Root', ['children']);
    for (const child of this.list(node, 'children')) this.statement(child);
  }

  // --- statements -------------------------------------------------------

  /**
   * A NodeList of statements: the body of a tag. nunjucks compiles an include,
   * import, from-import, extends or block as a callback that the rest of its
   * function continues in, and closes those callbacks where a body is compiled
   * in a scope of its own; the case bodies of a switch and the else of a for
   * get none (`unscoped`), so such a tag directly in one compiles to broken code.
   */
  private body(node: unknown, owner: TemplateNode, unscoped?: string): void {
    const list = this.node(node, owner);
    this.shape(list, 'NodeList', ['children']);
    this.nested(list, () => {
      for (const child of this.list(list, 'children')) {
        if (unscoped !== undefined && CONTINUING_TAGS.has(child.typename)) {
          throw new Refusal(child, `{% ${CONTINUING_TAGS.get(child.typename)} %} cannot stand directly in ${unscoped}: put it inside {% if true %}…{% endif %}`);
        }
        this.statement(child);
      }
    });
  }

  private statement(node: TemplateNode): void {
    switch (node.typename) {
      case 'Output':
        this.shape(node, 'Output', ['children']);
        for (const child of this.list(node, 'children')) {
          if (child.typename === 'TemplateData') this.templateData(child);
          else this.expression(child);
        }
        return;
      case 'If':
        this.shape(node, 'If', ['cond', 'body', 'else_']);
        this.expression(this.node(node['cond'], node));
        this.body(node['body'], node);
        if (node['else_'] !== null) {
          const otherwise = this.node(node['else_'], node);
          if (otherwise.typename === 'If') this.nested(otherwise, () => this.statement(otherwise));
          else this.body(otherwise, node);
        }
        return;
      case 'For': {
        this.shape(node, 'For', ['arr', 'name', 'body', 'else_']);
        this.expression(this.node(node['arr'], node));
        const target = this.node(node['name'], node);
        if (target.typename === 'Array') {
          this.shape(target, 'Array', ['children']);
          const names = this.list(target, 'children');
          if (names.length < 2) throw new Refusal(target, 'a loop takes one name, or two or more separated by commas');
          for (const name of names) this.name(name, 'loop variable');
        } else this.name(target, 'loop variable');
        this.body(node['body'], node);
        if (node['else_'] !== null) this.body(node['else_'], node, 'the {% else %} of a {% for %}');
        return;
      }
      case 'Set': {
        const block = Object.hasOwn(node, 'body');
        this.shape(node, 'Set', block ? ['targets', 'value', 'body'] : ['targets', 'value']);
        const targets = this.array(node['targets'], node);
        if (targets.length === 0) throw new Refusal(node, 'set needs a name');
        for (const target of targets) this.name(target, 'variable');
        if (block) {
          if (node['value'] !== null) throw new Refusal(node, 'set takes a value or a body, not both');
          this.capture(this.node(node['body'], node));
        } else this.expression(this.node(node['value'], node));
        return;
      }
      case 'Switch': {
        this.shape(node, 'Switch', ['expr', 'cases', 'default']);
        this.expression(this.node(node['expr'], node));
        for (const item of this.array(node['cases'], node)) {
          this.shape(item, 'Case', ['cond', 'body']);
          this.expression(this.node(item['cond'], item));
          this.body(item['body'], item, 'a {% case %}');
        }
        if (node['default'] !== null) this.body(node['default'], node, 'a {% default %}');
        return;
      }
      case 'Macro':
        this.macro(node, 'Macro');
        return;
      case 'Import':
        this.shape(node, 'Import', ['template', 'target', 'withContext']);
        this.expression(this.node(node['template'], node));
        this.name(this.node(node['target'], node), 'import name');
        this.flag(node, 'withContext');
        return;
      case 'FromImport': {
        this.shape(node, 'FromImport', ['template', 'names', 'withContext']);
        this.expression(this.node(node['template'], node));
        const names = this.node(node['names'], node);
        this.shape(names, 'NodeList', ['children']);
        for (const item of this.list(names, 'children')) {
          if (item.typename === 'Pair') {
            this.shape(item, 'Pair', ['key', 'value']);
            this.name(this.node(item['key'], item), 'imported name');
            this.name(this.node(item['value'], item), 'import alias');
          } else this.name(item, 'imported name');
        }
        this.flag(node, 'withContext');
        return;
      }
      case 'Include':
        this.shape(node, 'Include', ['template', 'ignoreMissing']);
        this.expression(this.node(node['template'], node));
        this.flag(node, 'ignoreMissing');
        return;
      case 'Extends':
        this.shape(node, 'Extends', ['template']);
        this.expression(this.node(node['template'], node));
        return;
      case 'Block': {
        this.shape(node, 'Block', ['name', 'body']);
        const name = this.node(node['name'], node);
        this.name(name, 'block name');
        const text = name.value as string;
        if (this.blocks.has(text)) throw new Refusal(name, `Block "${text}" defined more than once.`);
        this.blocks.add(text);
        this.body(node['body'], node);
        return;
      }
      default:
        throw new Refusal(node, `${describe(node)} is not allowed in templates`);
    }
  }

  private templateData(node: TemplateNode): void {
    this.shape(node, 'TemplateData', ['value']);
    if (typeof node.value !== 'string') throw new Refusal(node, 'template text must be a string');
  }

  /** A `{% set %}` body or a `{% filter %}` body: its statements, rendered to a string. */
  private capture(node: TemplateNode): void {
    this.shape(node, 'Capture', ['body']);
    this.body(node['body'], node);
  }

  /** A macro definition, or the body of a `{% call %}` (a Caller). */
  private macro(node: TemplateNode, kind: 'Macro' | 'Caller'): void {
    this.shape(node, kind, ['name', 'args', 'body']);
    const name = this.node(node['name'], node);
    if (kind === 'Caller' && !(name.typename === 'Symbol' && name.value === 'caller')) throw new Refusal(name, 'a call block defines "caller"');
    this.name(name, 'macro name');
    const args = this.node(node['args'], node);
    this.shape(args, 'NodeList', ['children']);
    const items = this.list(args, 'children');
    const names = new Set<unknown>();
    const parameter = (node: TemplateNode): void => {
      this.name(node, 'argument name');
      // Positional arguments become the parameters of a JavaScript function, which may not repeat.
      if (names.has(node.value)) throw new Refusal(node, `the argument "${String(node.value)}" is named twice`);
      names.add(node.value);
    };
    items.forEach((item, i) => {
      if (item.typename === 'KeywordArgs' && i === items.length - 1) {
        this.shape(item, 'KeywordArgs', ['children']);
        for (const pair of this.list(item, 'children')) {
          this.shape(pair, 'Pair', ['key', 'value']);
          parameter(this.node(pair['key'], pair));
          this.expression(this.node(pair['value'], pair));
        }
      } else parameter(item);
    });
    this.body(node['body'], node);
  }

  // --- expressions ------------------------------------------------------

  private expression(node: TemplateNode): void {
    this.nested(node, () => this.expressionAt(node));
  }

  private expressionAt(node: TemplateNode): void {
    const kind = node.typename;
    if (BINARY.has(kind)) {
      this.shape(node, kind, ['left', 'right']);
      this.expression(this.node(node['left'], node));
      this.expression(this.node(node['right'], node));
      return;
    }
    if (UNARY.has(kind)) {
      this.shape(node, kind, ['target']);
      this.expression(this.node(node['target'], node));
      return;
    }
    switch (kind) {
      case 'Literal':
        this.shape(node, 'Literal', ['value']);
        if (!(typeof node.value === 'string' || (typeof node.value === 'number' && Number.isFinite(node.value)) || typeof node.value === 'boolean' || node.value === null)) {
          throw new Refusal(node, node.value instanceof RegExp ? 'regular expressions are not allowed in templates' : 'this literal is not allowed in templates');
        }
        return;
      case 'Symbol':
        this.name(node, 'name');
        return;
      case 'Group':
      case 'Array': {
        this.shape(node, kind, ['children']);
        const items = this.list(node, 'children');
        if (kind === 'Group' && items.length === 0) throw new Refusal(node, 'empty parentheses');
        for (const item of items) this.expression(item);
        return;
      }
      case 'Dict':
        this.shape(node, 'Dict', ['children']);
        for (const pair of this.list(node, 'children')) {
          this.shape(pair, 'Pair', ['key', 'value']);
          const key = this.node(pair['key'], pair);
          if (key.typename === 'Symbol') this.name(key, 'key');
          else {
            this.shape(key, 'Literal', ['value']);
            if (typeof key.value !== 'string') throw new Refusal(key, 'dict keys are names or strings');
            if (BLOCKED_NAMES.has(key.value)) throw new Refusal(key, `the key "${key.value}" is not allowed in templates`);
          }
          this.expression(this.node(pair['value'], pair));
        }
        return;
      case 'LookupVal': {
        this.shape(node, 'LookupVal', ['target', 'val']);
        this.expression(this.node(node['target'], node));
        const key = this.node(node['val'], node);
        if (key.typename === 'Literal' && BLOCKED_NAMES.has(String(key.value))) throw new Refusal(key, `the attribute "${String(key.value)}" is not allowed in templates`);
        this.expression(key);
        return;
      }
      case 'FunCall':
        this.shape(node, 'FunCall', ['name', 'args']);
        this.callee(this.node(node['name'], node));
        this.callArguments(this.node(node['args'], node));
        return;
      case 'Filter': {
        this.shape(node, 'Filter', ['name', 'args']);
        const name = this.node(node['name'], node);
        this.shape(name, 'Symbol', ['value']);
        if (typeof name.value !== 'string' || !this.vocabulary.filters.has(name.value)) throw new Refusal(name, `filter not found: ${String(name.value)}`);
        this.callArguments(this.node(node['args'], node));
        return;
      }
      case 'Is': {
        this.shape(node, 'Is', ['left', 'right']);
        this.expression(this.node(node['left'], node));
        const right = this.node(node['right'], node);
        // `x is none` (or `null`): the lexer reads the test's name as the literal null, which the compiler names "null".
        if (right.typename === 'Literal' && right.value === null && this.vocabulary.tests.has('null')) {
          this.shape(right, 'Literal', ['value']);
          return;
        }
        const test = right.typename === 'FunCall' ? this.node(right['name'], right) : right;
        this.shape(test, 'Symbol', ['value']);
        if (typeof test.value !== 'string' || !this.vocabulary.tests.has(test.value)) throw new Refusal(test, `test not found: ${String(test.value)}`);
        if (right !== test) {
          // nunjucks compiles a test's arguments one after the other with no
          // comma between them: `is eq("a", ["constructor"], …)` became the
          // member access `"a"["constructor"]`. A test takes one argument.
          this.shape(right, 'FunCall', ['name', 'args']);
          const args = this.node(right['args'], right);
          this.shape(args, 'NodeList', ['children']);
          const items = this.list(args, 'children');
          if (items.length !== 1 || items[0]!.typename === 'KeywordArgs') throw new Refusal(right, `a test takes one argument: ${String(test.value)}(value)`);
          this.expression(items[0]!);
        }
        return;
      }
      case 'InlineIf':
        this.shape(node, 'InlineIf', ['cond', 'body', 'else_']);
        this.expression(this.node(node['cond'], node));
        this.expression(this.node(node['body'], node));
        if (node['else_'] !== null) this.expression(this.node(node['else_'], node));
        return;
      case 'Compare': {
        this.shape(node, 'Compare', ['expr', 'ops']);
        this.expression(this.node(node['expr'], node));
        const ops = this.array(node['ops'], node);
        if (ops.length === 0) throw new Refusal(node, 'a comparison needs an operator');
        for (const op of ops) {
          this.shape(op, 'CompareOperand', ['expr', 'type']);
          if (typeof op['type'] !== 'string' || !COMPARISONS.has(op['type'])) throw new Refusal(op, `the comparison ${quoted(op['type'])} is not allowed in templates`);
          this.expression(this.node(op['expr'], op));
        }
        return;
      }
      case 'Capture':
        // `{% filter f %}…{% endfilter %}` filters its body as a Capture.
        this.capture(node);
        return;
      default:
        throw new Refusal(node, `${describe(node)} is not allowed in templates`);
    }
  }

  /**
   * What a call calls: any expression, but the compiler pastes the text of its
   * names, attributes and string subscripts into the generated code (for its
   * error message, `x["a"]["b"]`), so each of those must be an identifier or
   * a number. Whether the value can be called is the runtime's to decide.
   */
  private callee(node: TemplateNode): void {
    this.expression(node);
    this.pastedName(node);
  }

  private pastedName(node: TemplateNode): void {
    switch (node.typename) {
      case 'Literal':
        if (!(typeof node.value === 'number' || (typeof node.value === 'string' && IDENTIFIER.test(node.value)))) {
          throw new Refusal(node, `${quoted(node.value)} cannot be part of what a call names: use a name or an identifier attribute`);
        }
        return;
      case 'FunCall':
        this.pastedName(this.node(node['name'], node));
        return;
      case 'LookupVal':
        this.pastedName(this.node(node['target'], node));
        this.pastedName(this.node(node['val'], node));
        return;
      default:
        // Symbols are identifiers already; the compiler names anything else "--expression--".
        return;
    }
  }

  /** The arguments of a call, filter or test: expressions, then keyword arguments. */
  private callArguments(node: TemplateNode): void {
    this.shape(node, 'NodeList', ['children']);
    const items = this.list(node, 'children');
    items.forEach((item, i) => {
      if (item.typename !== 'KeywordArgs') {
        this.expression(item);
        return;
      }
      if (i !== items.length - 1) throw new Refusal(item, 'keyword arguments come last');
      this.shape(item, 'KeywordArgs', ['children']);
      for (const pair of this.list(item, 'children')) {
        this.shape(pair, 'Pair', ['key', 'value']);
        const key = this.node(pair['key'], pair);
        this.name(key, 'argument name');
        const value = this.node(pair['value'], pair);
        if (value.typename === 'Caller') this.nested(value, () => this.macro(value, 'Caller'));
        else this.expression(value);
      }
    });
  }

  // --- leaves and shapes ------------------------------------------------

  /** A Symbol node whose name is an identifier outside BLOCKED_NAMES. */
  private name(node: TemplateNode, role: string): void {
    if (node.typename !== 'Symbol') throw new Refusal(node, `${article(role)} ${role} must be a name, not ${describe(node)}`);
    this.shape(node, 'Symbol', ['value']);
    this.identifier(node, role);
  }

  private identifier(node: TemplateNode, role: string): void {
    const value = node.value;
    if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
      throw new Refusal(node, `${quoted(value)} is not allowed as ${article(role)} ${role}: names are letters, digits and _, not starting with a digit`);
    }
    if (BLOCKED_NAMES.has(value)) throw new Refusal(node, `the ${role === 'attribute' ? 'attribute' : 'name'} "${value}" is not allowed in templates`);
  }

  private flag(node: TemplateNode, field: string): void {
    const value = node[field];
    if (!(value === null || typeof value === 'boolean')) throw new Refusal(node, `${field} must be true, false or absent`);
  }

  /**
   * `node` is a node of exactly `kind` (its class, not a subclass) with
   * exactly `fields` besides its position: a field the check does not know
   * could carry a subtree it never saw into the compiler.
   */
  private shape(node: TemplateNode, kind: string, fields: readonly string[]): void {
    const type = Object.hasOwn(NODE_CLASSES, kind) ? NODE_CLASSES[kind] : undefined;
    if (node.typename !== kind || type === undefined || Object.getPrototypeOf(node) !== type.prototype) {
      throw new Refusal(node, `${describe(node)} is not allowed here`);
    }
    for (const key of Object.keys(node)) {
      if (key !== 'lineno' && key !== 'colno' && !fields.includes(key)) throw new Refusal(node, `${describe(node)} has an unexpected part "${key}"`);
    }
    for (const field of fields) if (!Object.hasOwn(node, field)) throw new Refusal(node, `${describe(node)} lacks its part "${field}"`);
  }

  private node(value: unknown, owner: TemplateNode): TemplateNode {
    if (typeof value !== 'object' || value === null || typeof (value as TemplateNode).typename !== 'string') throw new Refusal(owner, `${describe(owner)} is incomplete`);
    return value as TemplateNode;
  }

  private list(node: TemplateNode, field: string): TemplateNode[] {
    return this.array(node[field], node);
  }

  private array(value: unknown, owner: TemplateNode): TemplateNode[] {
    if (!Array.isArray(value)) throw new Refusal(owner, `${describe(owner)} is incomplete`);
    return value.map((item) => this.node(item, owner));
  }

  private nested(node: TemplateNode, check: () => void): void {
    if (++this.depth > MAX_TEMPLATE_DEPTH) throw new Refusal(node, `the template nests deeper than ${MAX_TEMPLATE_DEPTH} levels`);
    try {
      check();
    } finally {
      this.depth--;
    }
  }
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}

/** What a refusal calls a node: its tag or kind of expression. */
function describe(node: TemplateNode | undefined): string {
  const kind = node?.typename ?? 'nothing';
  const tags: Record<string, string> = {
    IfAsync: 'the tag ifAsync',
    AsyncEach: 'the tag asyncEach',
    AsyncAll: 'the tag asyncAll',
    CallExtension: 'an extension tag',
    CallExtensionAsync: 'an extension tag',
    FilterAsync: 'an async filter',
  };
  return tags[kind] ?? `a ${kind} node`;
}
