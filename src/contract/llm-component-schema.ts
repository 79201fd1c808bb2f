/**
 * The LLM component's part of the AppDefinition schema (apps/schema/ holds the
 * rest): the core validates apps with it and sends a component's block in
 * `taskDetails.llm`, and the llm-orchestrator reads the same block. One schema,
 * so the two cannot drift.
 */
import { Type, type Static } from '@sinclair/typebox';

/** DNS-1123 label: the appId and pool names become resource names (SandboxPool objects, containers, pods). */
export const NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const Name = (description: string) => Type.String({ pattern: NAME_PATTERN, minLength: 1, maxLength: 63, description });

/**
 * How the optimization oracle treats an LLM component (docs/oracle.md): it
 * samples (inputs, output) pairs, and when the component is hot and stable asks
 * for generated JIT code, proves it on held-back samples in a JIT sandbox, and
 * promotes it through a Git commit (auto) or leaves a branch (suggest), then
 * shadows, canaries and rolls it back on live disagreement.
 */
export const OptimizeSpec = Type.Object(
  {
    mode: Type.Union([Type.Literal('off'), Type.Literal('suggest'), Type.Literal('auto')], {
      default: 'off',
      description: 'off: not sampled; suggest: a passing candidate is committed to the branch uhlp/optimize/<app>/<component> for a human to merge; auto: it is committed to the served branch.',
    }),
    minSamples: Type.Integer({ minimum: 4, maximum: 100000, default: 50, description: 'Distinct inputs sampled before code is asked for.' }),
    agreement: Type.Number({
      minimum: 0.5,
      maximum: 1,
      default: 0.99,
      description: 'Share of held-back samples (and of live comparisons) the code must answer exactly as the LLM did (canonical JSON); 1 - agreement is the disagreement rate that refuses or rolls back.',
    }),
    shadowRequests: Type.Integer({ minimum: 1, maximum: 1000000, default: 200, description: 'Live comparisons in shadow (the LLM answers, the code is compared) before the canary.' }),
    canaryPercent: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Share of requests the code answers during the canary, each compared with the LLM.' }),
    canaryRequests: Type.Integer({ minimum: 1, maximum: 1000000, default: 200, description: 'Live comparisons in the canary before the code answers all requests.' }),
    auditPercent: Type.Number({ minimum: 0, maximum: 100, default: 1, description: 'Share of the requests the code answers once promoted to full that are still compared with the LLM.' }),
    minRepeats: Type.Integer({
      minimum: 1,
      maximum: 100000,
      default: 5,
      description: 'Inputs seen again (with a fresh answer, not a cached one) before the outputs count as stable: each must have given the same output.',
    }),
    minRequestsPerMinute: Type.Number({ minimum: 0, maximum: 1000000, default: 1, description: 'The component is hot, and worth code, at this many sampled requests per minute.' }),
    maxSamples: Type.Integer({ minimum: 4, maximum: 10000, default: 500, description: 'Samples kept per component and revision (a reservoir: a uniform sample of every input seen).' }),
    holdout: Type.Number({ minimum: 0.1, maximum: 0.9, default: 0.3, description: 'Share of samples held back: the code is judged on them and never sees them.' }),
    minCoverage: Type.Number({ minimum: 0, maximum: 1, default: 0.8, description: 'Share of held-back samples the code must answer itself (not decline with ctx.fallback()).' }),
    maxAttempts: Type.Integer({ minimum: 1, maximum: 10, default: 3, description: 'Candidates asked for per revision; each failed one is re-asked with the disagreeing samples.' }),
    maxCodegenTokens: Type.Integer({ minimum: 1000, maximum: 10000000, default: 100000, description: 'Tokens code generation may spend per revision, all attempts together.' }),
    pool: Type.Optional(Name('The pool (runner: jit) that verifies and serves the code; the first jit pool of the app when omitted.')),
  },
  { additionalProperties: false },
);
export type OptimizeSpec = Static<typeof OptimizeSpec>;

/**
 * An LLM-interpreted component: the llm-orchestrator renders its templates
 * (nunjucks, Jinja2 syntax) read through core.state.getDefinitionFileContent,
 * calls core.llm.generate, validates the answer and re-asks with the errors.
 */
export const LlmComponentSpec = Type.Object(
  {
    prompt: Type.String({ minLength: 1, description: 'User message template (nunjucks / Jinja2 syntax), relative to the app directory.' }),
    system: Type.Optional(Type.String({ minLength: 1, description: 'System message template, relative to the app directory.' })),
    model: Type.Optional(Type.String({ minLength: 1, description: "One of the llm capability's models; its first when omitted." })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2, description: "Sampling temperature; the provider's default when omitted." })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000, description: "Completion tokens per call; clamped by the llm capability's maxTokens." })),
    outputSchema: Type.Optional(
      Type.Union([Type.String({ minLength: 1 }), Type.Object({}, { additionalProperties: true })], {
        description:
          'The JSON Schema (2020-12) the answer must satisfy: a file relative to the app directory, or the schema inline. The answer is then JSON (a fenced ```json block is accepted); without it the answer is {"text": ...}.',
        'x-kubernetes-preserve-unknown-fields': true,
      }),
    ),
    maxAttempts: Type.Integer({ minimum: 1, maximum: 10, default: 3, description: 'Answers that fail the schema are re-asked, with the errors, up to this many attempts in all.' }),
    tools: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: "MCP tools the model may call (OpenAI tool calling); each must be allowed by the app's capabilities.",
    }),
    maxToolCalls: Type.Integer({ minimum: 0, maximum: 100, default: 8, description: 'Tool calls one turn may make; past it the turn fails with UHLP_LLM_TOOL_LOOP_LIMIT.' }),
    respond: Type.Union([Type.Literal('generic'), Type.Literal('httpResponse')], {
      default: 'generic',
      description: 'generic: the output is the JSON answer; httpResponse: the output must be {statusCode, headers?, body} and is proxied.',
    }),
    cache: Type.Optional(
      Type.Object(
        { ttlSeconds: Type.Integer({ minimum: 1, maximum: 30 * 86400, description: 'How long an answer is reused for the same rendered request.' }) },
        { additionalProperties: false, description: 'Exact-match answer cache; only used at temperature 0.' },
      ),
    ),
    header: Type.Boolean({
      default: false,
      description: 'Prepend a header block (session_id, turn_number, declared inputs and outputs, context_as_of, work_order_id) to the user message.',
    }),
    optimize: Type.Optional(OptimizeSpec),
  },
  { additionalProperties: false },
);
export type LlmComponentSpec = Static<typeof LlmComponentSpec>;

/** The optimize block with every default, or undefined when the component is not optimized (`off` or absent). */
export function activeOptimize(llm: LlmComponentSpec | undefined): OptimizeSpec | undefined {
  const optimize = llm?.optimize;
  return optimize !== undefined && optimize.mode !== 'off' ? optimize : undefined;
}
