/**
 * The MCP tools an LLM component lists (`llm.tools`) as functions offered to
 * the model: their argument schemas come from the core's `tools/list` for the
 * execution's app, and their names are mapped to function names (tool-names.ts).
 * A listed tool the core does not list for the app (its capabilities do not
 * allow it) is not offered: the model cannot call what it cannot see, and a
 * call of an unknown function goes back to the model as an error.
 *
 * The listing is kept per app revision: capabilities are part of the revision.
 */
import type { ListedTool, McpToolsClient } from '../kit/tools-client.js';
import type { LlmToolSpec } from '../../contract/llm-messages.js';
import { ToolNames } from './tool-names.js';

/** Revisions whose listings are kept at once. */
const KEPT_REVISIONS = 4;

export interface OfferedTools {
  readonly functions: readonly LlmToolSpec[];
  readonly names: ToolNames;
}

export const NO_TOOLS: OfferedTools = { functions: [], names: new ToolNames([]) };

export class ModelTools {
  private readonly listings = new Map<string, Promise<ListedTool[]>>();

  /** The functions to offer for `wanted` (MCP tool names, in the component's order). */
  async offer(wanted: readonly string[], scope: { readonly appId: string; readonly revision: string; readonly tools: McpToolsClient }): Promise<OfferedTools> {
    if (wanted.length === 0) return NO_TOOLS;
    const listed = new Map((await this.listing(scope)).map((tool) => [tool.name, tool]));
    const offered = wanted.filter((name) => listed.has(name));
    const names = new ToolNames(offered);
    const functions = offered.map((name): LlmToolSpec => {
      const tool = listed.get(name)!;
      return { name: names.functionOf(name)!, parameters: tool.inputSchema, ...(tool.description !== undefined ? { description: tool.description } : {}) };
    });
    return { functions, names };
  }

  private listing(scope: { readonly appId: string; readonly revision: string; readonly tools: McpToolsClient }): Promise<ListedTool[]> {
    const key = `${scope.appId}\0${scope.revision}`;
    let listing = this.listings.get(key);
    if (listing === undefined) {
      listing = scope.tools.listTools();
      this.listings.set(key, listing);
      // A listing that failed is asked for again next time.
      listing.catch(() => this.listings.delete(key));
      for (const old of this.listings.keys()) {
        if (this.listings.size <= KEPT_REVISIONS) break;
        this.listings.delete(old);
      }
    }
    return listing;
  }
}
