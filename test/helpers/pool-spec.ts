/**
 * A pool spec for tests: the given fields, and the schema's own defaults for the
 * rest, so that a field added to the schema does not have to be added to every
 * test's pool literal.
 */
import { Value } from '@sinclair/typebox/value';
import { PoolSpec } from '../../src/apps/schema/app-definition-schema.js';

export function poolSpec(fields: { name: string } & Partial<PoolSpec>): PoolSpec {
  return Value.Default(PoolSpec, structuredClone(fields)) as PoolSpec;
}
