/**
 * What the code-generation model is asked, and how its answer is read. It is
 * shown the component's templates, its output schema, the tools it may call
 * and a training split of the samples (inputs -> output), and asked for one ES
 * module `export default async function (event, ctx)` that maps the same
 * inputs to the same output. It is told that it is judged on samples it never
 * sees, so a lookup table of the ones it sees fails, and that `ctx.fallback()`
 * hands an input it cannot answer with certainty back to the LLM.
 *
 * A failed candidate is re-asked in the same conversation with the samples it
 * got wrong (expected and got) as feedback.
 */
import type { LlmMessage } from '../contract/llm-messages.js';
import type { LlmDefinition } from './llm-definition.js';
import type { OracleSample } from './oracle-sample.js';

/** In the system message of every code-generation call: servers (and tests) tell them apart from a component's calls by it. */
export const CODEGEN_MARKER = 'uhlp-oracle-codegen';
/** The longest module accepted. */
export const MAX_MODULE_CHARS = 64 * 1024;
/** Disagreeing samples shown as feedback at most. */
export const MAX_FEEDBACK_SAMPLES = 5;

export interface CodegenRequest {
  readonly appId: string;
  readonly componentId: string;
  readonly definition: LlmDefinition;
  /** The tools the code may call through ctx.tools (the component's). */
  readonly tools: readonly string[];
  readonly training: readonly OracleSample[];
}

/** A sample the candidate answered wrongly, as feedback. */
export interface Disagreement {
  readonly inputs: Record<string, unknown>;
  readonly expected: unknown;
  /** What the code answered, or what went wrong (an error, a timeout, a refused tool). */
  readonly got: unknown;
}

const SYSTEM = `${CODEGEN_MARKER}
You replace an LLM prompt by JavaScript that gives the same answers. Write one ES module:

  export default async function (event, ctx) { ... return output; }

- event holds the template variables the prompt was rendered with: params, query, headers, body,
  config, session, app, component, request. The samples show the parts the templates read.
- Return the JSON output the prompt's answers have; it must pass the output schema.
- Parameterize, do not specialize: your module is judged only on held-back samples you never see.
  A table of the samples shown here will fail. Find the rule the template and the answers follow.
- When an input is outside what the rule covers with certainty, return ctx.fallback(): the LLM answers it.
  Declining is better than a wrong answer; declining everything is a failure too.
- No network, no files, no timers, no randomness, no clock: the same event gives the same output.
- Tools: only the ones listed, through await ctx.tools.call(name, args); any other call refuses the module.
Answer with the module alone, in one \`\`\`js fenced block.`;

export function codegenMessages(request: CodegenRequest): LlmMessage[] {
  const parts: string[] = [`Component: ${request.appId}/${request.componentId}`];
  for (const [file, text] of request.definition.templates) parts.push(`Template ${file}:\n\`\`\`jinja\n${text}\n\`\`\``);
  parts.push(`Output JSON Schema:\n\`\`\`json\n${JSON.stringify(request.definition.schema ?? {}, null, 2)}\n\`\`\``);
  parts.push(request.tools.length > 0 ? `Tools the module may call: ${request.tools.join(', ')}.` : 'The module may call no tools.');
  const shown = request.training.map((sample) => ({ event: sample.inputs, output: sample.output }));
  parts.push(`Samples (event -> output), ${shown.length} of them:\n\`\`\`json\n${JSON.stringify(shown, null, 1)}\n\`\`\``);
  return [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

/** The user message that re-asks after a failed candidate. */
export function feedbackMessage(summary: string, disagreements: readonly Disagreement[]): LlmMessage {
  const shown = disagreements.slice(0, MAX_FEEDBACK_SAMPLES);
  const examples = shown.length > 0 ? `\n\nSamples it got wrong (event, expected, got):\n\`\`\`json\n${JSON.stringify(shown, null, 1)}\n\`\`\`` : '';
  return {
    role: 'user',
    content: `Your module was refused: ${summary}.${examples}\n\nWrite the whole module again, in one \`\`\`js fenced block. Fix the rule; do not add these samples as special cases.`,
  };
}

/** The module in a model's answer: the first js fenced block, or the whole text when it is a module. */
export function extractModule(text: string | null): { source: string } | { problem: string } {
  if (text === null || text.trim() === '') return { problem: 'the answer has no text' };
  const fenced = /```(?:js|javascript|mjs|ts|typescript)?[^\S\n]*\n([\s\S]*?)```/.exec(text);
  const source = (fenced ? fenced[1]! : text).trim();
  if (source.length > MAX_MODULE_CHARS) return { problem: `the module is over ${MAX_MODULE_CHARS} characters` };
  if (!/\bexport\s+default\b/.test(source)) return { problem: 'the answer holds no module with a default export' };
  return { source: `${source}\n` };
}
