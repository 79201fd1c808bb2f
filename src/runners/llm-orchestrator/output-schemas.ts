/**
 * The output schema of an LLM component, compiled once per app revision:
 * inline in the component, or a JSON file of the app read through MCP. A
 * compiled schema is found again by its source (the file's path, or the inline
 * schema's JSON), never by the component alone. It is
 * compiled by the same ajv setup (JSON Schema 2020-12, standard formats) the
 * core uses to check it when the app loads (src/contract/output-schema.ts).
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { compileOutputSchema } from '../../contract/output-schema.js';
import type { ToolsClient } from '../kit/tools-client.js';
import { DefinitionFileError, type DefinitionFiles } from './definition-files.js';
import { LlmOutputSchemaInvalidError } from '../../shared/runner-errors.js';

/** Revisions whose compiled schemas are kept at once. */
const KEPT_REVISIONS = 4;

export interface CompiledOutputSchema {
  /** The schema as JSON, for `responseSchema`. */
  readonly schema: Record<string, unknown>;
  readonly validate: ValidateFunction;
}

export interface SchemaScope {
  readonly appId: string;
  readonly revision: string;
  readonly tools: ToolsClient;
}

export class OutputSchemas {
  /** `<app>\0<revision>` -> the schema's source -> compiled schema. */
  private readonly revisions = new Map<string, Map<string, Promise<CompiledOutputSchema>>>();

  constructor(private readonly files: DefinitionFiles) {}

  /** The component's compiled schema; throws LlmOutputSchemaInvalidError. */
  get(outputSchema: string | Record<string, unknown>, scope: SchemaScope): Promise<CompiledOutputSchema> {
    const key = `${scope.appId}\0${scope.revision}`;
    let sources = this.revisions.get(key);
    if (sources === undefined) {
      sources = new Map();
      this.revisions.set(key, sources);
      for (const old of this.revisions.keys()) {
        if (this.revisions.size <= KEPT_REVISIONS) break;
        this.revisions.delete(old);
      }
    }
    const source = typeof outputSchema === 'string' ? `file:${outputSchema}` : `inline:${JSON.stringify(outputSchema)}`;
    let compiled = sources.get(source);
    if (compiled === undefined) {
      compiled = this.compile(outputSchema, scope);
      sources.set(source, compiled);
      // Only a schema that compiled is kept; a read that failed is tried again next time.
      compiled.catch(() => sources.delete(source));
    }
    return compiled;
  }

  private async compile(outputSchema: string | Record<string, unknown>, scope: SchemaScope): Promise<CompiledOutputSchema> {
    const file = typeof outputSchema === 'string' ? outputSchema : undefined;
    const fail = (cause: string): never => {
      throw new LlmOutputSchemaInvalidError(`the output schema${file ? ` ${file}` : ''} ${cause}`, { ...(file ? { file } : {}), cause });
    };
    let schema: unknown = outputSchema;
    if (file !== undefined) {
      let text: string;
      try {
        text = await this.files.read(scope.appId, scope.revision, file, scope.tools);
      } catch (error) {
        if (error instanceof DefinitionFileError) return fail(`cannot be read: ${error.message}`);
        throw error;
      }
      try {
        schema = JSON.parse(text);
      } catch (error) {
        return fail(`is not JSON: ${(error as Error).message}`);
      }
    }
    const { validate, problem } = compileOutputSchema(schema);
    if (!validate) return fail(`is not a JSON Schema: ${problem}`);
    return { schema: schema as Record<string, unknown>, validate };
  }
}
