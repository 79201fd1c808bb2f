/**
 * `manifest.json` of a cs-js function (`cs.function.script.v1`): the runtime,
 * the entry and handler, the limits the invoker enforces (wall time, isolate
 * memory, activations at once) and the capabilities the `cs` host object
 * grants. The control plane checks it when a version is published, and the
 * invoker checks it again before every first run of a bundle: a bundle put in
 * the store by other means is refused the same way. Unknown keys are refused:
 * a capability the invoker does not know must not be silently ignored.
 */
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { UhlpError } from '../../shared/errors.js';
import { wildcardMatch } from '../../shared/wildcard-match.js';

export const MANIFEST_SCHEMA_ID = 'cs.function.script.v1';

/** A topic pattern: letters, digits and `._:-`, with `*` for any run of characters. */
export const TOPIC_PATTERN_SYNTAX = '^[A-Za-z0-9*][A-Za-z0-9._:*-]{0,199}$';

export const FunctionManifest = Type.Object(
  {
    schema: Type.Literal(MANIFEST_SCHEMA_ID),
    runtime: Type.Literal('cs-js'),
    entry: Type.Literal('function.js', { description: 'The module of the bundle that holds the handler.' }),
    handler: Type.String({ pattern: '^[A-Za-z_$][A-Za-z0-9_$]{0,63}$', default: 'default', description: 'The export called with (event, ctx).' }),
    limits: Type.Object(
      {
        timeoutMs: Type.Integer({ minimum: 1, maximum: 900_000, default: 3000, description: 'Wall time of one activation: deadline_ms = now + timeoutMs.' }),
        memoryMb: Type.Integer({ minimum: 8, maximum: 4096, default: 64, description: "Heap budget of the activation's isolate, MiB." }),
        maxConcurrency: Type.Integer({ minimum: 1, maximum: 1000, default: 1, description: 'Activations of this version at once per replica.' }),
      },
      { additionalProperties: false, default: {} },
    ),
    capabilities: Type.Object(
      {
        kv: Type.Optional(
          Type.Object(
            {
              prefixes: Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { minItems: 1, maxItems: 64 }),
              ops: Type.Array(Type.Union([Type.Literal('get'), Type.Literal('set'), Type.Literal('del')]), { minItems: 1, maxItems: 3 }),
            },
            { additionalProperties: false },
          ),
        ),
        codeq: Type.Optional(
          Type.Object(
            { publishTopics: Type.Array(Type.String({ pattern: TOPIC_PATTERN_SYNTAX }), { minItems: 1, maxItems: 64 }) },
            { additionalProperties: false },
          ),
        ),
        http: Type.Optional(
          Type.Object(
            {
              allowHosts: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { minItems: 1, maxItems: 64 }),
              timeoutMs: Type.Integer({ minimum: 1, maximum: 60_000, default: 5000, description: 'Ceiling of one fetch; a call may ask for less.' }),
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);
export type FunctionManifest = Static<typeof FunctionManifest>;

const check = TypeCompiler.Compile(FunctionManifest);

/**
 * The manifest of `text` with defaults applied, frozen; UHLP_FN_MANIFEST_INVALID
 * names the field at fault (`limits.memoryMb`, `capabilities.kv.ops.1`).
 */
export function parseManifest(text: string): FunctionManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UhlpError('UHLP_FN_MANIFEST_INVALID', `manifest.json is not JSON: ${(error as Error).message}`, { field: 'manifest.json' });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new UhlpError('UHLP_FN_MANIFEST_INVALID', 'manifest.json must be a JSON object', { field: 'manifest.json' });
  }
  const value = Value.Default(FunctionManifest, structuredClone(raw));
  if (!check.Check(value)) {
    const first = check.Errors(value).First();
    const field = first?.path.replace(/^\//, '').replaceAll('/', '.') || 'manifest.json';
    throw new UhlpError('UHLP_FN_MANIFEST_INVALID', `manifest.json: ${field}: ${first?.message ?? 'invalid'}`, { field });
  }
  return deepFreeze(value);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/**
 * Whether `topic` matches a manifest's topic pattern: `*` stands for any run of
 * characters (dots included). Matched without a regular expression (an app's
 * pattern of many stars would backtrack on a client's topic): wildcard-match.ts.
 */
export function topicMatches(topic: string, pattern: string): boolean {
  return wildcardMatch(topic, pattern);
}
