/**
 * `core.llm.generate`: one completion through the core's LLM service, within
 * the app's llm capability (its models, its maxTokens ceiling, its daily token
 * budget). The conversation may carry tool calls and tool results, offer
 * function tools and ask for structured output; the answer is the model's text
 * and/or tool calls. The shapes are the contract between the core and the
 * llm-orchestrator runner (docs/mcp.md).
 */
import { Type } from '@sinclair/typebox';
import type { LlmMessage, LlmResponseSchema, LlmToolSpec } from '../../contract/llm-messages.js';
import { MAX_TOOLS } from '../../llm/llm-provider.js';
import { checkLlm, requireCapability } from '../capability-guard.js';
import type { StreamSink } from '../mcp-token-service.js';
import { defineTool } from '../tool-definition.js';

/** OpenAI's rule for function names, which the orchestrator's mapping of MCP names (core_kv_get) follows. */
const FunctionName = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' });
const ToolCall = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 256 }), name: FunctionName, arguments: Type.String({ description: 'The JSON text the model wrote.' }) },
  { additionalProperties: false },
);
/** Longest cache TTL a call may ask: a week. */
const MAX_CACHE_TTL_SECONDS = 7 * 86_400;

/**
 * One object for every role rather than a union per role: a union's error says
 * only "Expected union value", while normalizeRequest names what a role lacks
 * (`messages[2].toolCallId: a tool message needs the toolCallId it answers`).
 */
const Message = Type.Object(
  {
    role: Type.String({ enum: ['system', 'user', 'assistant', 'tool'], description: 'system | user | assistant | tool' }),
    content: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'A string; null only for an assistant message with toolCalls.' })),
    toolCalls: Type.Optional(Type.Array(ToolCall, { description: 'assistant only: the calls the model made.' })),
    toolCallId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'tool only: the id of the call this message answers.' })),
  },
  { additionalProperties: false },
);

export const llmGenerate = defineTool({
  name: 'core.llm.generate',
  description:
    'Generates a completion. Give `prompt` or `messages` (with `system` placed first); offer `tools` and ask for a `responseSchema`. ' +
    'Answers {text, toolCalls, finishReason, model, usage, cached}. Model, maxTokens and the daily token budget are limited by the llm capability.',
  capability: 'llm',
  inputSchema: Type.Object(
    {
      model: Type.Optional(Type.String({ minLength: 1, description: 'One of the capability models; the first when omitted.' })),
      system: Type.Optional(Type.String({ minLength: 1, description: 'A system message placed first.' })),
      prompt: Type.Optional(Type.String({ minLength: 1, description: 'One user message; or give messages.' })),
      messages: Type.Optional(Type.Array(Message, { minItems: 1 })),
      maxTokens: Type.Optional(Type.Integer({ minimum: 1, description: "Clamped to the capability's maxTokens." })),
      temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
      tools: Type.Optional(
        Type.Array(
          Type.Object(
            { name: FunctionName, description: Type.Optional(Type.String()), parameters: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of the arguments.' }) },
            { additionalProperties: false },
          ),
          { maxItems: MAX_TOOLS, description: 'Functions offered to the model, OpenAI style.' },
        ),
      ),
      responseSchema: Type.Optional(
        Type.Object(
          { name: FunctionName, schema: Type.Record(Type.String(), Type.Unknown()) },
          { additionalProperties: false, description: 'Ask for structured output where the provider supports it; the caller still validates.' },
        ),
      ),
      cacheTtlSeconds: Type.Optional(
        Type.Integer({ minimum: 1, maximum: MAX_CACHE_TTL_SECONDS, description: 'Exact-match answer cache of the whole request; used only when temperature is 0.' }),
      ),
      stream: Type.Optional(
        Type.Object(
          {
            id: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$', description: 'The named output stream.' }),
            node: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The workflow node (or component) the text is of.' })),
            contentType: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e][\\x20-\\x7e]*$' })),
          },
          {
            additionalProperties: false,
            description: "Forward the model's text to the client's event stream as the provider produces it (NODE_STREAM chunks); ignored when the client asked for no stream.",
          },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services, signal }) {
    const capability = requireCapability(grant.capabilities, 'llm');
    const { model, maxTokens } = checkLlm(capability, args.model, args.maxTokens);
    const answer = await services.llm.generate(
      {
        model,
        maxTokens,
        signal,
        ...(args.system !== undefined ? { system: args.system } : {}),
        ...(args.prompt !== undefined ? { prompt: args.prompt } : {}),
        ...(args.messages !== undefined ? { messages: args.messages as LlmMessage[] } : {}),
        ...(args.temperature !== undefined ? { temperature: args.temperature } : {}),
        ...(args.tools !== undefined ? { tools: args.tools as LlmToolSpec[] } : {}),
        ...(args.responseSchema !== undefined ? { responseSchema: args.responseSchema as LlmResponseSchema } : {}),
        ...(args.stream !== undefined && grant.stream !== undefined ? { onDelta: deltaSink(grant.stream, args.stream) } : {}),
      },
      {
        appId: grant.appId,
        componentId: grant.componentId,
        ...(capability.tokensPerDay !== undefined ? { tokensPerDay: capability.tokensPerDay } : {}),
        ...(args.cacheTtlSeconds !== undefined ? { cacheTtlSeconds: args.cacheTtlSeconds } : {}),
        record: (call) => grant.calls.recordExternal(call),
      },
    );
    const usage = { prompt: answer.usage.prompt, completion: answer.usage.completion };
    return {
      content: {
        text: answer.text,
        toolCalls: answer.toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments })),
        finishReason: answer.finishReason,
        model: answer.model,
        usage,
        cached: answer.cached,
      },
      usage,
    };
  },
});

/** Sends each piece of text to the execution's stream, as the stream argument names it. */
function deltaSink(sink: StreamSink, stream: { id: string; node?: string; contentType?: string }): (text: string) => void {
  return (text) => sink.delta(stream.id, stream.node, text, stream.contentType);
}
