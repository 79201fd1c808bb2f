/**
 * The filters, tests and globals prompt templates may use: nunjucks' own
 * (Jinja2's, as nunjucks has them), with these differences:
 *
 * - `join`, `sum`, `selectattr`, `rejectattr`, `sort(attribute=…)` and
 *   `groupby` read an item's attribute as own data only (template-values.ts), as
 *   every lookup does; nunjucks' versions read inherited properties too
 *   (`join(",", "constructor")`), and `sort` and `groupby` call an own getter.
 * - `groupby` given a function calls it only when the template runtime made it
 *   (a macro), as a call in a template does; nunjucks calls any function.
 * - `dump` refuses a value whose `toJSON` (which JSON.stringify would call) is
 *   a function the template runtime did not make, or that has a getter.
 *
 * The last three are not reachable from render variables, which are JSON data:
 * they keep the rule that only template-made functions are called true of the
 * filters too, whatever values a later caller hands in.
 * - `range()` makes at most MAX_RANGE items, as Jinja2's sandbox.
 * - `cycler()` and `joiner()` are this module's: they keep their state in a
 *   closure, so calling them needs no `this` (calls never get one).
 *
 * Every table is frozen and has no prototype: it finds only its own entries,
 * and no render can add to it or change it.
 */
import nunjucks from 'nunjucks';
import { TemplateSandboxError } from './template-refusal.js';
import { allowCall, isTemplateCallable, ownDataProperty, viewSource } from './template-values.js';

/** Largest list `range()` makes (Jinja2's sandbox has the same). */
export const MAX_RANGE = 100_000;

type Table = Readonly<Record<string, unknown>>;

// An environment without loaders, only to read nunjucks' built-in tables.
const stock = new nunjucks.Environment([]) as unknown as { filters: Record<string, (...args: unknown[]) => unknown>; tests: Record<string, unknown> };

function frozenTable(...parts: Array<Record<string, unknown>>): Table {
  return Object.freeze(Object.assign(Object.create(null) as Record<string, unknown>, ...parts));
}

function items(arr: unknown): unknown[] {
  if (!Array.isArray(arr)) throw new TypeError('the filter takes a list');
  return arr;
}

/** The items of a list (or the characters of a string), as nunjucks' `sort` and `groupby` read them; nothing for null. */
function listOf(arr: unknown): unknown[] {
  if (arr === null || arr === undefined) return [];
  if (typeof arr === 'string') return Array.from({ length: arr.length }, (_, i) => arr[i]);
  return [...items(arr)];
}

function attributeOf(attr: unknown): (item: unknown) => unknown {
  const key = typeof attr === 'number' ? attr : String(attr);
  return (item) => ownDataProperty(item, key);
}

/** A dotted attribute (`sort(attribute="a.b")`, `groupby("a.b")`), each step own data, as nunjucks' getAttrGetter reads it but for getters and inherited properties. */
function attributePathOf(attr: unknown): (item: unknown) => unknown {
  const parts: Array<string | number> = typeof attr === 'number' ? [attr] : String(attr).split('.');
  return (item) => parts.reduce<unknown>((value, part) => (value === undefined ? undefined : ownDataProperty(value, part)), item);
}

function refused(what: string): never {
  throw new TemplateSandboxError(`${what} is not allowed in templates`);
}

/**
 * Refuses a value JSON.stringify would run code of: a `toJSON` (own or
 * inherited) that is not a template-made function, or a getter, anywhere in it.
 * The walk reads the views' sources, so it counts as no read of the inputs.
 */
function checkDumpable(value: unknown, seen = new Set<object>()): void {
  const source = viewSource(value);
  if (typeof source !== 'object' || source === null || seen.has(source)) return;
  seen.add(source);
  for (let holder: object | null = source; holder !== null; holder = Object.getPrototypeOf(holder) as object | null) {
    const toJSON = Object.getOwnPropertyDescriptor(holder, 'toJSON');
    if (toJSON === undefined) continue;
    if (!('value' in toJSON) || (typeof toJSON.value === 'function' && !isTemplateCallable(toJSON.value))) refused('dumping a value whose toJSON is not data or a macro');
    break;
  }
  for (const key of Object.keys(source)) {
    const descriptor = Object.getOwnPropertyDescriptor(source, key)!;
    if (!('value' in descriptor)) refused(`dumping a value with a getter ("${key}")`);
    checkDumpable(descriptor.value, seen);
  }
}

// nunjucks' makeMacro: how its `sort` takes keyword arguments (`sort(reverse=true, attribute="n")`).
const { makeMacro } = (nunjucks as unknown as { runtime: { makeMacro(argNames: string[], kwargNames: string[], func: (...args: never[]) => unknown): (...args: unknown[]) => unknown } }).runtime;

/** nunjucks' `sort`, with the attribute read as own data. */
const sort = makeMacro(['value', 'reverse', 'case_sensitive', 'attribute'], [], (arr: unknown, reversed: unknown, caseSensitive: unknown, attr: unknown): unknown[] => {
  const get = attr ? attributePathOf(attr) : (item: unknown): unknown => item;
  return listOf(arr).sort((a, b) => {
    let x = get(a) as string | number;
    let y = get(b) as string | number;
    if (!caseSensitive && typeof x === 'string' && typeof y === 'string') {
      x = x.toLowerCase();
      y = y.toLowerCase();
    }
    if (x < y) return reversed ? 1 : -1;
    if (x > y) return reversed ? -1 : 1;
    return 0;
  });
});

const ownDataFilters = {
  join(arr: unknown, del?: unknown, attr?: unknown): unknown {
    return stock.filters['join']!(attr ? items(arr).map(attributeOf(attr)) : arr, del);
  },
  sum(arr: unknown, attr?: unknown, start?: unknown): unknown {
    return stock.filters['sum']!(attr ? items(arr).map(attributeOf(attr)) : arr, undefined, start);
  },
  selectattr(arr: unknown, attr: unknown): unknown[] {
    const get = attributeOf(attr);
    return items(arr).filter((item) => !!get(item));
  },
  rejectattr(arr: unknown, attr: unknown): unknown[] {
    const get = attributeOf(attr);
    return items(arr).filter((item) => !get(item));
  },
  sort,
  groupby(arr: unknown, attr: unknown): Record<string, unknown[]> {
    let key: (item: unknown, index: number) => unknown;
    if (typeof attr === 'function') {
      if (!isTemplateCallable(attr)) refused('grouping by a function that is not a macro');
      key = (item, index) => (attr as (...args: unknown[]) => unknown).apply(undefined, [item, index]);
    } else {
      key = attributePathOf(attr);
    }
    // No prototype: a group named "__proto__" or "constructor" is a group like any other.
    const groups = Object.create(null) as Record<string, unknown[]>;
    listOf(arr).forEach((item, index) => {
      const name = String(key(item, index));
      (groups[name] ??= []).push(item);
    });
    return groups;
  },
  dump(value: unknown, spaces?: unknown): unknown {
    checkDumpable(value);
    return stock.filters['dump']!(value, spaces);
  },
};

/** The filters templates may use, by name. */
export const TEMPLATE_FILTERS: Table = frozenTable(stock.filters, ownDataFilters);

/** The tests templates may use (`x is defined`), by name. */
export const TEMPLATE_TESTS: Table = frozenTable(stock.tests);

function range(start: number, stop?: number, step?: number): number[] {
  const [from, to] = stop === undefined ? [0, start] : [start, stop];
  const by = step || 1;
  const length = Math.ceil((Number(to) - Number(from)) / by);
  if (!(length <= MAX_RANGE)) throw new TemplateSandboxError(`range() makes at most ${MAX_RANGE} items`);
  const list: number[] = [];
  for (let i = 0, value = Number(from); i < length; i++, value += by) list.push(value);
  return list;
}

interface Cycler {
  current: unknown;
  readonly next: () => unknown;
  readonly reset: () => undefined;
}

function cycler(...values: unknown[]): Cycler {
  let index = -1;
  const state: Cycler = {
    current: null,
    next: allowCall(() => {
      index = index + 1 >= values.length ? 0 : index + 1;
      state.current = values[index];
      return state.current;
    }),
    reset: allowCall(() => {
      index = -1;
      state.current = null;
      return undefined;
    }),
  };
  return Object.seal(state);
}

function joiner(separator?: unknown): () => unknown {
  const sep = separator || ',';
  let first = true;
  return allowCall(() => {
    const value = first ? '' : sep;
    first = false;
    return value;
  });
}

/** The functions every template may call by name. */
export const TEMPLATE_GLOBALS: Table = frozenTable({ range: allowCall(range), cycler: allowCall(cycler), joiner: allowCall(joiner) });

/** The names the grammar (template-grammar.ts) allows as filters and tests. */
export const TEMPLATE_VOCABULARY = Object.freeze({ filters: new Set(Object.keys(TEMPLATE_FILTERS)), tests: new Set(Object.keys(TEMPLATE_TESTS)) });
