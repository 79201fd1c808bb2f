/**
 * A fake MCP client for the orchestrator's unit tests: app files served as
 * core.state.getDefinitionFileContent serves them, a scripted
 * core.llm.generate, other tools answered by a handler, and a log of calls.
 */
import { ToolCallError, type ListedTool, type McpToolsClient } from '../../src/runners/kit/tools-client.js';
import { READ_TOOL } from '../../src/runners/llm-orchestrator/definition-files.js';

export const FAKE_REVISION = '0123456789abcdef0123456789abcdef01234567';

export interface FakeToolsOptions {
  /** App files by app-relative path. */
  readonly files?: Readonly<Record<string, string>>;
  /** Answers of core.llm.generate (or of any tool), given its arguments. */
  readonly tools?: Readonly<Record<string, (args: Record<string, unknown>) => Record<string, unknown> | Promise<Record<string, unknown>>>>;
  /** What tools/list answers. */
  readonly listed?: readonly ListedTool[];
}

export class FakeTools implements McpToolsClient {
  readonly calls: Array<{ name: string; args: Record<string, unknown> }> = [];
  listings = 0;

  constructor(private readonly options: FakeToolsOptions = {}) {}

  async call(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    this.calls.push({ name, args: structuredClone(args) });
    if (name === READ_TOOL) {
      const file = String(args['path']);
      const content = this.options.files?.[file];
      if (content === undefined) throw ToolCallError.of('UHLP_DEFINITION_FILE_NOT_FOUND', `no file "${file}" in app test at ${FAKE_REVISION.slice(0, 12)}`, { path: file });
      return { content, encoding: 'utf8', revision: FAKE_REVISION };
    }
    const handler = this.options.tools?.[name];
    if (handler === undefined) throw ToolCallError.of('UHLP_MCP_CALL_FAILED', `${name}: unknown tool`);
    return handler(args);
  }

  async listTools(): Promise<ListedTool[]> {
    this.listings++;
    return [...(this.options.listed ?? [])];
  }

  /** The calls of one tool, in order. */
  callsOf(name: string): Array<Record<string, unknown>> {
    return this.calls.filter((call) => call.name === name).map((call) => call.args);
  }
}
