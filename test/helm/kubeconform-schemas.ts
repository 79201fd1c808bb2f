/**
 * The JSON schemas kubeconform validates against, made here from documents on this
 * machine (kubeconform cannot download its usual ones): every kind of a Kubernetes
 * release's own OpenAPI document (api/openapi-spec/swagger.json of its module, found by
 * scripts/chart-lint-env.sh), and the CRDs the project generates. They are laid out as
 * kubeconform looks them up with `-schema-location <dir>/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
 * and are strict like the `-strict` flavour of kubernetes-json-schema that kubeconform
 * normally reads: an object with declared properties refuses any other (a misspelt field
 * fails, as `kubectl --validate=strict` makes it), int-or-string takes either, and an
 * optional member may be null, as the API server allows.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: Json | undefined): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}`: `deployment-apps-v1`, `service-v1`, `networkpolicy-networking-v1`. */
export function schemaFileName(kind: string, apiVersion: string): string {
  const [groupOrVersion, version] = apiVersion.split('/') as [string, string | undefined];
  const suffix = version === undefined ? `-${groupOrVersion.toLowerCase()}` : `-${groupOrVersion.split('.')[0]!.toLowerCase()}-${version.toLowerCase()}`;
  return `${kind.toLowerCase()}${suffix}.json`;
}

/** The node made strict, int-or-string opened to both types, optional members nullable; recursively. */
function strict(node: Json): Json {
  if (Array.isArray(node)) return node.map(strict);
  if (!isObject(node)) return node;
  if (node.format === 'int-or-string') {
    return { ...(node.description !== undefined ? { description: node.description } : {}), oneOf: [{ type: 'string' }, { type: 'integer' }] };
  }
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    // Property names are data, not schemas: only their values are walked.
    out[key] = key === 'properties' && isObject(value) ? Object.fromEntries(Object.entries(value).map(([name, child]) => [name, strict(child)])) : strict(value);
  }
  if (isObject(out.properties)) {
    if (out.additionalProperties === undefined && out['x-kubernetes-preserve-unknown-fields'] !== true) out.additionalProperties = false;
    const required = new Set(Array.isArray(out.required) ? (out.required as string[]) : []);
    for (const [name, child] of Object.entries(out.properties)) {
      if (required.has(name) || !isObject(child)) continue;
      if (typeof child.type === 'string') out.properties[name] = { ...child, type: [child.type, 'null'] };
      else if (typeof child.$ref === 'string') out.properties[name] = { oneOf: [{ $ref: child.$ref }, { type: 'null' }] };
    }
  }
  return out;
}

/** Every definition `root` reaches through `$ref: #/definitions/<name>`, itself excluded unless it refers to itself. */
function reachable(root: Json, definitions: Record<string, Json>): Set<string> {
  const seen = new Set<string>();
  const visit = (node: Json): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!isObject(node)) return;
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/definitions/')) {
      const name = ref.slice('#/definitions/'.length);
      if (!seen.has(name) && definitions[name] !== undefined) {
        seen.add(name);
        visit(definitions[name]!);
      }
    }
    Object.values(node).forEach(visit);
  };
  visit(root);
  return seen;
}

/**
 * Writes one standalone schema per kind of an OpenAPI v2 document (each with the
 * definitions it reaches, refs unchanged) into `dir`; answers how many.
 */
export function writeKubernetesSchemas(openapi: { definitions: Record<string, Json> }, dir: string): number {
  mkdirSync(dir, { recursive: true });
  const strictDefinitions = Object.fromEntries(Object.entries(openapi.definitions).map(([name, schema]) => [name, strict(schema)]));
  let written = 0;
  for (const [name, definition] of Object.entries(openapi.definitions)) {
    const kinds = isObject(definition) ? definition['x-kubernetes-group-version-kind'] : undefined;
    if (!Array.isArray(kinds)) continue;
    const root = strictDefinitions[name]!;
    const definitions = Object.fromEntries([...reachable(root, strictDefinitions)].map((ref) => [ref, strictDefinitions[ref]!]));
    for (const gvk of kinds) {
      if (!isObject(gvk)) continue;
      const apiVersion = gvk.group ? `${String(gvk.group)}/${String(gvk.version)}` : String(gvk.version);
      writeFileSync(path.join(dir, schemaFileName(String(gvk.kind), apiVersion)), JSON.stringify({ ...(root as JsonObject), definitions }));
      written += 1;
    }
  }
  return written;
}

/** Writes the schema of every version of a CustomResourceDefinition into `dir`, kubeconform's way. */
export function writeCrdSchemas(crd: { spec: { group: string; names: { kind: string }; versions: Array<{ name: string; schema?: { openAPIV3Schema?: Json } }> } }, dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (const version of crd.spec.versions) {
    const schema = version.schema?.openAPIV3Schema;
    if (schema === undefined) continue;
    writeFileSync(path.join(dir, schemaFileName(crd.spec.names.kind, `${crd.spec.group}/${version.name}`)), JSON.stringify(strict(schema)));
  }
}
