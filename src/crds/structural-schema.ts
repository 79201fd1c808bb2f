/**
 * Turns a TypeBox (JSON Schema) node into the OpenAPI v3 dialect that a
 * CustomResourceDefinition accepts: a structural schema, where every node states its
 * type and unions only exist as enums of literals. Anything that cannot be expressed
 * throws with the path of the node, so a schema change that would give the API server
 * a schema it rejects fails at `npm run generate` rather than at install time.
 */

/** A JSON value as it appears in an emitted schema. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** One node of an emitted CRD schema (apiextensions.k8s.io/v1 JSONSchemaProps). */
export type StructuralSchema = { [key: string]: JsonValue };

// Kept as they are. Order here is the order in the YAML, so diffs stay readable.
const COPIED_KEYWORDS = [
  'description',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'default',
] as const;

// TypeBox keywords the emitted schema drops: `additionalProperties: false` because a
// structural schema prunes unknown fields anyway and forbids it beside `properties`.
const HANDLED_KEYWORDS = new Set<string>([
  ...COPIED_KEYWORDS,
  'type',
  'properties',
  'required',
  'items',
  'anyOf',
  'const',
  'enum',
  'additionalProperties',
  'exclusiveMinimum',
  'exclusiveMaximum',
  '$id',
]);

export class NonStructuralSchemaError extends Error {
  override readonly name = 'NonStructuralSchemaError';
  readonly path: string;

  constructor(path: string, reason: string) {
    super(`${path}: ${reason}`);
    this.path = path;
  }
}

/**
 * Converts one schema node and everything under it.
 * @param schema a TypeBox schema (any JSON Schema object using the subset above)
 * @param path where the node sits, for error messages; `spec` for the root of a spec
 */
export function toStructuralSchema(schema: Record<string, unknown>, path = '<root>'): StructuralSchema {
  const out: StructuralSchema = {};
  for (const key of Object.keys(schema)) {
    if (!HANDLED_KEYWORDS.has(key) && !key.startsWith('x-kubernetes-')) {
      throw new NonStructuralSchemaError(path, `keyword "${key}" has no CRD equivalent`);
    }
  }

  const literals = literalValues(schema, path);
  if (literals !== undefined) {
    const types = new Set(literals.map((value) => typeof value));
    const type = types.size === 1 ? [...types][0] : undefined;
    if (type !== 'string' && type !== 'number' && type !== 'boolean') {
      throw new NonStructuralSchemaError(path, 'an enum must hold literals of one scalar type');
    }
    out.type = type === 'number' && literals.every((value) => Number.isInteger(value)) ? 'integer' : type;
    out.enum = literals as JsonValue[];
  } else if (schema.anyOf !== undefined && schema['x-kubernetes-preserve-unknown-fields'] === true) {
    // A union the server cannot type (a path or an object): any JSON value is kept, and the
    // core's own validation of the TypeBox union judges it. Its members say nothing here.
    const kept: StructuralSchema = { 'x-kubernetes-preserve-unknown-fields': true };
    if (typeof schema.description === 'string') kept.description = schema.description;
    return kept;
  } else if (schema.anyOf !== undefined) {
    throw new NonStructuralSchemaError(path, 'a union other than of literals is not structural');
  } else if (typeof schema.type === 'string') {
    out.type = schema.type;
  } else if (schema['x-kubernetes-preserve-unknown-fields'] !== true && schema['x-kubernetes-int-or-string'] !== true) {
    throw new NonStructuralSchemaError(path, 'every node needs a type (or x-kubernetes-preserve-unknown-fields)');
  }

  for (const key of COPIED_KEYWORDS) {
    if (schema[key] !== undefined) out[key] = schema[key] as JsonValue;
  }
  if (schema.default !== undefined) out.default = completeDefault(schema, schema.default) as JsonValue;
  // JSON Schema 2019 writes exclusive bounds as numbers; OpenAPI v3.0 as flags on minimum/maximum.
  if (typeof schema.exclusiveMinimum === 'number') {
    out.minimum = schema.exclusiveMinimum;
    out.exclusiveMinimum = true;
  }
  if (typeof schema.exclusiveMaximum === 'number') {
    out.maximum = schema.exclusiveMaximum;
    out.exclusiveMaximum = true;
  }

  // An empty property list says nothing a preserve-unknown-fields object needs; leave it out.
  if (schema.properties !== undefined && Object.keys(schema.properties as object).length > 0) {
    const properties: StructuralSchema = {};
    for (const [name, child] of Object.entries(schema.properties as Record<string, Record<string, unknown>>)) {
      properties[name] = toStructuralSchema(child, `${path}.${name}`);
    }
    out.properties = properties;
    // A member with a default is not required: the API server fills it in before it validates,
    // so listing it changes nothing there, while offline validators (kubeconform, an editor's
    // schema), which apply no defaults, would refuse every app.yaml that leaves it out.
    const defaulted = (name: string): boolean => (properties[name] as StructuralSchema | undefined)?.default !== undefined;
    const required = ((schema.required as string[] | undefined) ?? []).filter((name) => !defaulted(name));
    if (required.length > 0) out.required = required;
  }
  if (schema.items !== undefined) {
    if (Array.isArray(schema.items)) throw new NonStructuralSchemaError(path, 'tuple items are not structural');
    out.items = toStructuralSchema(schema.items as Record<string, unknown>, `${path}[]`);
  }
  const additional = schema.additionalProperties;
  if (typeof additional === 'object' && additional !== null) {
    if (schema.properties !== undefined) {
      throw new NonStructuralSchemaError(path, 'properties and a schema for additionalProperties cannot be combined');
    }
    out.additionalProperties = toStructuralSchema(additional as Record<string, unknown>, `${path}.*`);
  } else if (additional === true && schema['x-kubernetes-preserve-unknown-fields'] !== true) {
    throw new NonStructuralSchemaError(path, 'additionalProperties: true needs x-kubernetes-preserve-unknown-fields');
  }

  for (const key of Object.keys(schema)) {
    if (key.startsWith('x-kubernetes-')) out[key] = schema[key] as JsonValue;
  }
  return out;
}

/**
 * The API server validates a default as it is written, without first applying the
 * defaults nested inside it; so `limits: {default: {}}` over required, defaulted
 * members is rejected. Fill the nested defaults in here, as the server would on an object.
 */
function completeDefault(schema: Record<string, unknown>, value: unknown): unknown {
  const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
  if (properties === undefined || typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const completed: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [name, child] of Object.entries(properties)) {
    if (completed[name] === undefined && child.default !== undefined) completed[name] = child.default;
    if (completed[name] !== undefined) completed[name] = completeDefault(child, completed[name]);
  }
  return completed;
}

/** The literal values of `const`, `enum` or a union of `const`s; undefined when the node is none of these. */
function literalValues(schema: Record<string, unknown>, path: string): unknown[] | undefined {
  if (schema.const !== undefined) return [schema.const];
  if (Array.isArray(schema.enum)) return schema.enum;
  if (!Array.isArray(schema.anyOf)) return undefined;
  const members = schema.anyOf as Record<string, unknown>[];
  if (!members.every((member) => member.const !== undefined)) return undefined;
  if (members.length === 0) throw new NonStructuralSchemaError(path, 'an empty union matches nothing');
  return members.map((member) => member.const);
}
