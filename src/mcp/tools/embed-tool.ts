/**
 * `core.llm.embed`: embeddings of up to 64 texts, from the core's embeddings
 * endpoint (OpenAI-compatible) or, without one, the local deterministic
 * embedding; the answer names which (`model`, `source`). The llm-orchestrator
 * indexes lazy skills with it. Needs the llm capability; remote calls are
 * recorded in the turn's evidence.
 */
import { Type } from '@sinclair/typebox';
import { isUhlpError } from '../../shared/errors.js';
import { localEmbedder } from '../../llm/embedder.js';
import { requireCapability } from '../capability-guard.js';
import { defineTool } from '../tool-definition.js';

export const llmEmbed = defineTool({
  name: 'core.llm.embed',
  description: 'Embeds texts as vectors (cosine similarity compares them). Answers {model, source: "openai-compatible"|"local", vectors}.',
  capability: 'llm',
  inputSchema: Type.Object({ texts: Type.Array(Type.String({ maxLength: 8192 }), { minItems: 1, maxItems: 64 }) }, { additionalProperties: false }),
  async run(args, { grant, services, signal }) {
    requireCapability(grant.capabilities, 'llm');
    const embedder = services.embedder ?? localEmbedder;
    const started = performance.now();
    const record = (status: string, model?: string): void => {
      if (embedder.source === 'local') return;
      grant.calls.recordExternal({ kind: 'embeddings', target: embedder.source, status, duration_ms: Math.round((performance.now() - started) * 1000) / 1000, ...(model !== undefined ? { model } : {}) });
    };
    try {
      const embeddings = await embedder.embed(args.texts, signal);
      record('ok', embeddings.model);
      return { content: { model: embeddings.model, source: embeddings.source, dimensions: embeddings.vectors[0]?.length ?? 0, vectors: embeddings.vectors } };
    } catch (error) {
      record(isUhlpError(error) ? error.code : 'error');
      throw error;
    }
  },
});
