/**
 * The offline LLM provider: answers from a file of canned answers, so that
 * apps, tests and demos run with no model server. The first entry whose
 * `match` (substring) or `regex` is found in the conversation wins; otherwise
 * the `default` answers; with no default the call fails with
 * UHLP_LLM_NO_SCRIPTED_ANSWER. The file is YAML or JSON (JSON is YAML):
 *
 * ```yaml
 * answers:
 *   - match: "weather"             # case-sensitive substring
 *     answer: "It is sunny."
 *   - regex: "^translate"          # JavaScript regular expression
 *     flags: "im"
 *     answer: { "lang": "fr" }     # non-string answers are sent as JSON text
 * default: "I do not know."
 * ```
 *
 * A bare list of entries is accepted too (no default).
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { UhlpError } from '../errors.js';
import { type LlmGenerateRequest, type LlmGenerateResult, type LlmProvider, normalizeRequest } from './llm-provider.js';

export interface ScriptedEntry {
  /** Matches when the conversation text contains this substring. */
  readonly match?: string;
  /** Matches when this expression finds the conversation text. */
  readonly regex?: RegExp;
  readonly answer: string;
}

export interface Script {
  readonly entries: readonly ScriptedEntry[];
  /** Answer when no entry matches. @defaultValue none: the call fails */
  readonly default?: string;
}

/** Model name reported when a request names none. */
export const SCRIPTED_MODEL = 'scripted';

export function createScriptedProvider(script: Script): LlmProvider {
  return {
    kind: 'scripted',
    defaultModel: SCRIPTED_MODEL,
    async generate(request: LlmGenerateRequest): Promise<LlmGenerateResult> {
      if (request.signal?.aborted === true) throw request.signal.reason;
      const normalized = normalizeRequest(request, SCRIPTED_MODEL);
      // Every message's content is searched, in order, one per line: templates put
      // instructions in system messages and the data in user messages.
      const conversation = normalized.messages.map((message) => message.content).join('\n');
      const entry = script.entries.find((candidate) =>
        candidate.regex !== undefined ? candidate.regex.test(conversation) : conversation.includes(candidate.match ?? ''),
      );
      const text = entry?.answer ?? script.default;
      if (text === undefined) {
        throw new UhlpError('UHLP_LLM_NO_SCRIPTED_ANSWER', 'no scripted answer matches the prompt and the script has no default', {
          promptStart: conversation.slice(0, 200),
        });
      }
      return { text, model: normalized.model, usage: { prompt: estimateTokens(conversation), completion: estimateTokens(text) } };
    },
  };
}

/** Reads and checks a script file, then builds the provider. */
export async function loadScriptedProvider(filePath: string): Promise<LlmProvider> {
  let text: string;
  try {
    text = await readFile(filePath, 'utf8');
  } catch (error) {
    throw new UhlpError('UHLP_LLM_SCRIPT_INVALID', `cannot read scripted answers file ${filePath}`, { file: filePath }, { cause: error });
  }
  return createScriptedProvider(parseScript(text, filePath));
}

/** Parses a script file's text; throws UHLP_LLM_SCRIPT_INVALID naming the entry at fault. */
export function parseScript(text: string, source: string): Script {
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (error) {
    throw scriptError(source, 'file is not valid YAML or JSON', undefined, error);
  }
  const root = Array.isArray(value) ? { answers: value } : value;
  if (typeof root !== 'object' || root === null) throw scriptError(source, 'file must hold an object with "answers" or a list of entries');
  const { answers, default: fallback } = root as { answers?: unknown; default?: unknown };
  if (answers !== undefined && !Array.isArray(answers)) throw scriptError(source, '"answers" must be a list', 'answers');
  const entries = (answers ?? []).map((raw: unknown, index: number) => parseEntry(raw, `answers[${index}]`, source));
  if (entries.length === 0 && fallback === undefined) throw scriptError(source, 'the script has no answers and no default', 'answers');
  return { entries, ...(fallback !== undefined && fallback !== null ? { default: answerText(fallback) } : {}) };
}

function parseEntry(raw: unknown, field: string, source: string): ScriptedEntry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw scriptError(source, 'each entry must be an object', field);
  const { match, regex, flags, answer } = raw as Record<string, unknown>;
  if ((match === undefined) === (regex === undefined)) throw scriptError(source, 'each entry needs exactly one of "match" and "regex"', field);
  if (answer === undefined || answer === null) throw scriptError(source, 'each entry needs an "answer"', `${field}.answer`);
  if (match !== undefined) {
    if (typeof match !== 'string' || match === '') throw scriptError(source, '"match" must be a non-empty string', `${field}.match`);
    return { match, answer: answerText(answer) };
  }
  if (typeof regex !== 'string' || (flags !== undefined && typeof flags !== 'string')) {
    throw scriptError(source, '"regex" and "flags" must be strings', `${field}.regex`);
  }
  // "g" and "y" make RegExp.test stateful across calls; they are dropped.
  const cleanFlags = (flags ?? '').replace(/[gy]/g, '');
  try {
    return { regex: new RegExp(regex, cleanFlags), answer: answerText(answer) };
  } catch (error) {
    throw scriptError(source, `"regex" does not compile: ${(error as Error).message}`, `${field}.regex`);
  }
}

function answerText(answer: unknown): string {
  return typeof answer === 'string' ? answer : JSON.stringify(answer);
}

function scriptError(source: string, message: string, field?: string, cause?: unknown): UhlpError {
  return new UhlpError(
    'UHLP_LLM_SCRIPT_INVALID',
    `scripted answers ${source}: ${message}`,
    { file: source, ...(field !== undefined ? { field } : {}) },
    cause === undefined ? undefined : { cause },
  );
}

/**
 * A rough token count (four characters a token, OpenAI's rule of thumb) so that
 * offline runs still exercise token metrics and budgets.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
