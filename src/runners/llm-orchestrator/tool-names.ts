/**
 * MCP tool names (`core.kv.get`) as function names a model may call
 * (`core_kv_get`): OpenAI-style function names match ^[A-Za-z0-9_-]{1,64}$.
 * Every other character becomes `_`, long names are cut, and names that would
 * collide get a numbered suffix, so the mapping is one to one and can be read
 * back from the model's calls.
 */
const FUNCTION_NAME_LENGTH = 64;
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether a model's call names a function as functions are named (a model may write `core.kv.get` anyway). */
export function isFunctionName(name: string): boolean {
  return FUNCTION_NAME.test(name);
}

/** The function name of `name`, before collisions are resolved. */
export function functionName(name: string): string {
  const mapped = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, FUNCTION_NAME_LENGTH);
  return mapped === '' ? '_' : mapped;
}

/** Both directions of the mapping of a set of MCP tool names. */
export class ToolNames {
  private readonly toFunction = new Map<string, string>();
  private readonly toTool = new Map<string, string>();

  constructor(tools: Iterable<string>) {
    for (const tool of tools) {
      if (this.toFunction.has(tool)) continue;
      let candidate = functionName(tool);
      for (let n = 2; this.toTool.has(candidate); n++) {
        const suffix = `_${n}`;
        candidate = functionName(tool).slice(0, FUNCTION_NAME_LENGTH - suffix.length) + suffix;
      }
      this.toFunction.set(tool, candidate);
      this.toTool.set(candidate, tool);
    }
  }

  functionOf(tool: string): string | undefined {
    return this.toFunction.get(tool);
  }

  /** The MCP tool a function name the model called stands for; undefined for a name that was not offered. */
  toolOf(fn: string): string | undefined {
    return this.toTool.get(fn);
  }
}
