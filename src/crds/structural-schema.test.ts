import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { NonStructuralSchemaError, toStructuralSchema } from './structural-schema.js';

const toPlain = (schema: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;

describe('toStructuralSchema', () => {
  const cases: Array<{ name: string; input: unknown; expected: Record<string, unknown> }> = [
    {
      name: 'a union of string literals becomes an enum',
      input: Type.Union([Type.Literal('a'), Type.Literal('b')], { default: 'a' }),
      expected: { type: 'string', enum: ['a', 'b'], default: 'a' },
    },
    {
      name: 'a literal becomes a one-value enum',
      input: Type.Literal(3),
      expected: { type: 'integer', enum: [3] },
    },
    {
      name: 'a numeric exclusiveMinimum becomes minimum plus the OpenAPI v3.0 flag',
      input: Type.Number({ exclusiveMinimum: 0, maximum: 2 }),
      expected: { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 2 },
    },
    {
      name: 'additionalProperties: false is dropped and required kept',
      input: Type.Object({ a: Type.String(), b: Type.Optional(Type.Integer()) }, { additionalProperties: false }),
      expected: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'integer' } }, required: ['a'] },
    },
    {
      name: 'a free-form object keeps x-kubernetes-preserve-unknown-fields',
      input: { type: 'object', additionalProperties: true, 'x-kubernetes-preserve-unknown-fields': true },
      expected: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    },
    {
      name: 'an object default gets the defaults of its members, as the server validates it unexpanded',
      input: Type.Object({ a: Type.Integer({ default: 1 }), b: Type.Object({ c: Type.String({ default: 'x' }) }, { default: {} }) }, { default: {} }),
      expected: {
        type: 'object',
        default: { a: 1, b: { c: 'x' } },
        properties: { a: { type: 'integer', default: 1 }, b: { type: 'object', default: { c: 'x' }, properties: { c: { type: 'string', default: 'x' } } } },
      },
    },
    {
      name: 'a member with a default is not required (the server fills it in; offline validators do not)',
      input: Type.Object({ a: Type.String(), mode: Type.String({ default: 'development' }) }),
      expected: { type: 'object', properties: { a: { type: 'string' }, mode: { type: 'string', default: 'development' } }, required: ['a'] },
    },
    {
      name: 'a map keeps its value schema',
      input: { type: 'object', additionalProperties: { type: 'integer' } },
      expected: { type: 'object', additionalProperties: { type: 'integer' } },
    },
  ];
  for (const { name, input, expected } of cases) {
    it(name, () => {
      expect(toStructuralSchema(toPlain(input))).toEqual(expected);
    });
  }

  const rejected: Array<{ name: string; input: unknown; path: string; reason: RegExp }> = [
    { name: 'a union of objects', input: Type.Object({ x: Type.Union([Type.Object({}), Type.String()]) }), path: '<root>.x', reason: /union/ },
    { name: 'a node without type', input: Type.Object({ y: Type.Unknown() }), path: '<root>.y', reason: /needs a type/ },
    { name: 'a tuple', input: Type.Tuple([Type.String(), Type.Integer()]), path: '<root>', reason: /tuple|additionalItems/ },
    { name: 'an open object without preserve-unknown-fields', input: Type.Object({}, { additionalProperties: true }), path: '<root>', reason: /preserve-unknown-fields/ },
  ];
  for (const { name, input, path, reason } of rejected) {
    it(`rejects ${name}, naming the node`, () => {
      let error: unknown;
      try {
        toStructuralSchema(toPlain(input));
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(NonStructuralSchemaError);
      expect((error as NonStructuralSchemaError).path).toBe(path);
      expect((error as Error).message).toMatch(reason);
    });
  }
});
