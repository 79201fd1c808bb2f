/**
 * `core.llm.generate`: one completion through the core's LLM provider, with
 * the model and token ceiling of the app's llm capability.
 */
import { Type } from '@sinclair/typebox';
import type { LlmMessage } from '../../llm/llm-provider.js';
import { checkLlm, requireCapability } from '../capability-guard.js';
import { defineTool } from '../tool-definition.js';

export const llmGenerate = defineTool({
  name: 'core.llm.generate',
  description: 'Generates a completion. Give `prompt` or `messages`; model and maxTokens are limited by the llm capability.',
  capability: 'llm',
  inputSchema: Type.Object(
    {
      prompt: Type.Optional(Type.String({ minLength: 1 })),
      messages: Type.Optional(
        Type.Array(
          Type.Object(
            { role: Type.Union([Type.Literal('system'), Type.Literal('user'), Type.Literal('assistant')]), content: Type.String() },
            { additionalProperties: false },
          ),
          { minItems: 1 },
        ),
      ),
      model: Type.Optional(Type.String({ minLength: 1, description: 'One of the capability models; the first when omitted.' })),
      maxTokens: Type.Optional(Type.Integer({ minimum: 1, description: "Clamped to the capability's maxTokens." })),
      temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services, signal }) {
    const { model, maxTokens } = checkLlm(requireCapability(grant.capabilities, 'llm'), args.model, args.maxTokens);
    const result = await services.llmFor(grant.appId).generate({
      model,
      maxTokens,
      signal,
      ...(args.prompt !== undefined ? { prompt: args.prompt } : {}),
      ...(args.messages !== undefined ? { messages: args.messages as LlmMessage[] } : {}),
      ...(args.temperature !== undefined ? { temperature: args.temperature } : {}),
    });
    return {
      content: { text: result.text, model: result.model, usage: { prompt: result.usage.prompt, completion: result.usage.completion } },
      usage: result.usage,
    };
  },
});
