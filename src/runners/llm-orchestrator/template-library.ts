/**
 * The filters, tests and globals prompt templates may use: nunjucks' own
 * (Jinja2's, as nunjucks has them), with these differences:
 *
 * - `join`, `sum`, `selectattr` and `rejectattr` read an item's attribute as
 *   own data only (template-values.ts), as every lookup does; nunjucks' versions
 *   read inherited properties too (`join(",", "constructor")`).
 * - `range()` makes at most MAX_RANGE items, as Jinja2's sandbox.
 * - `cycler()` and `joiner()` are this module's: they keep their state in a
 *   closure, so calling them needs no `this` (calls never get one).
 *
 * Every table is frozen and has no prototype: it finds only its own entries,
 * and no render can add to it or change it.
 */
import nunjucks from 'nunjucks';
import { TemplateSandboxError } from './template-refusal.js';
import { allowCall, ownDataProperty } from './template-values.js';

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

function attributeOf(attr: unknown): (item: unknown) => unknown {
  const key = typeof attr === 'number' ? attr : String(attr);
  return (item) => ownDataProperty(item, key);
}

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
