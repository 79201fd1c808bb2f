/**
 * What an LLM component's answers depend on besides its inputs: its llm block
 * (without `optimize`, which decides nothing about an answer) and the files it
 * names — the prompt and system templates, every file they include or import,
 * and the output schema. Their hash is the component's llm revision: samples
 * and candidates belong to one, so editing a prompt starts the oracle over,
 * while a commit that touches another component (or the oracle's own
 * promotion, which changes the handler and not the llm block) does not.
 *
 * The same files are what code generation is shown.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { LlmComponentSpec } from '../apps/schema/app-definition-schema.js';
import { canonicalJson } from '../shared/canonical-json.js';

/** Template files followed per component; a prompt that includes more is hashed by those only. */
const MAX_TEMPLATE_FILES = 64;

/** Reads an app-relative file at the revision being looked at; undefined when it does not exist. */
export type AppFileReader = (appPath: string) => Promise<string | undefined>;

export interface LlmDefinition {
  /** Hex hash of the llm block and its files. */
  readonly revision: string;
  /** The template files (prompt first, then system, then includes), app-relative path to text. */
  readonly templates: ReadonlyMap<string, string>;
  /** The output schema (read from its file when it is a path). */
  readonly schema: Record<string, unknown> | undefined;
}

export async function readLlmDefinition(llm: LlmComponentSpec, read: AppFileReader): Promise<LlmDefinition> {
  const templates = new Map<string, string>();
  const queue = [llm.prompt, ...(llm.system !== undefined ? [llm.system] : [])];
  while (queue.length > 0 && templates.size < MAX_TEMPLATE_FILES) {
    const file = path.posix.normalize(queue.shift()!);
    if (templates.has(file) || file.startsWith('../') || path.posix.isAbsolute(file)) continue;
    const text = await read(file);
    if (text === undefined) continue;
    templates.set(file, text);
    for (const named of namedTemplates(text)) {
      queue.push(named.startsWith('./') || named.startsWith('../') ? path.posix.join(path.posix.dirname(file), named) : named);
    }
  }
  let schema: Record<string, unknown> | undefined;
  let schemaText: string | undefined;
  if (typeof llm.outputSchema === 'string') {
    schemaText = await read(llm.outputSchema);
    try {
      schema = schemaText === undefined ? undefined : (JSON.parse(schemaText) as Record<string, unknown>);
    } catch {
      schema = undefined;
    }
  } else {
    schema = llm.outputSchema;
  }
  const { optimize: _optimize, ...block } = llm;
  const canonical = canonicalJson({ block, templates: Object.fromEntries(templates), schema: schemaText ?? schema ?? null });
  const revision = createHash('sha256').update(canonical).digest('hex').slice(0, 24);
  return { revision, templates, schema };
}

/** The files a template names in include, import, from and extends tags with a literal name. */
function namedTemplates(text: string): string[] {
  return [...text.matchAll(/\{%-?\s*(?:include|import|from|extends)\s+(["'])([^"'\n]{1,512})\1/g)].map((match) => match[2]!);
}
