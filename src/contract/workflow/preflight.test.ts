import { describe, expect, it } from 'vitest';
import { checkConstraint, checkConstraints } from './preflight.js';
import type { Constraint } from './workflow-schema.js';

const c = (constraint: Partial<Constraint>): Constraint => ({ variable: 'x', operator: 'exists', required: true, error_message: 'no', ...constraint }) as Constraint;

describe('pre-flight constraints', () => {
  const board = { x: 5, s: 'hello', list: [1, 2, 3], obj: { a: 1 }, nothing: null };

  it.each([
    [{ operator: 'exists' }, true],
    [{ variable: 'nothing', operator: 'exists' }, false],
    [{ variable: 'missing', operator: 'exists' }, false],
    [{ operator: 'eq', value: 5 }, true],
    [{ operator: 'ne', value: 5 }, false],
    [{ operator: 'gt', value: 4 }, true],
    [{ operator: 'gte', value: 5 }, true],
    [{ operator: 'lt', value: 5 }, false],
    [{ operator: 'lte', value: 5 }, true],
    [{ operator: 'gt', value: '4' }, false],
    [{ variable: 's', operator: 'contains', value: 'ell' }, true],
    [{ variable: 'list', operator: 'contains', value: 2 }, true],
    [{ variable: 'obj', operator: 'contains', value: 'a' }, true],
    [{ variable: 's', operator: 'matches', value: '^h.*o$' }, true],
    [{ variable: 'list', operator: 'eq', value: 3, field: 'length' }, true],
    [{ variable: 's', operator: 'gt', value: 10, field: 'length' }, false],
    [{ variable: 'x', operator: 'gt', value: 0, field: 'length' }, false],
  ] as Array<[Partial<Constraint>, boolean]>)('%j holds: %s', (constraint, expected) => {
    expect(checkConstraint(c(constraint), board).passed).toBe(expected);
  });

  it('names the first failed required constraint; one not required is only recorded', () => {
    const result = checkConstraints([c({ variable: 'missing', required: false }), c({ variable: 'nothing', error_message: 'nothing there' })], board);
    expect(result.outcomes.map((o) => o.passed)).toEqual([false, false]);
    expect(result.failed?.constraint.error_message).toBe('nothing there');
  });

  it('never reads through a prototype key (the schema refuses such paths; the reader refuses them again)', () => {
    expect(() => checkConstraint(c({ variable: 'a.__proto__', operator: 'exists' }), { a: {} })).toThrow(/not a blackboard path/);
    expect(checkConstraint(c({ variable: 'toString', operator: 'exists' }), {}).passed).toBe(false);
  });
});
