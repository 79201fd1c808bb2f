/**
 * The offline LLM provider: answers from a file of canned replies, so that
 * apps, tests and demos run with no model server. The first entry whose
 * `match` (substring) or `regex` is found in the conversation (every message's
 * content, one per line) wins; otherwise the `default` answers; with no default
 * the call fails with UHLP_LLM_NO_SCRIPTED_ANSWER. The file is YAML or JSON
 * (JSON is YAML):
 *
 * ```yaml
 * answers:
 *   - match: "weather"             # case-sensitive substring
 *     answer: "It is sunny."
 *   - regex: "^translate"          # JavaScript regular expression
 *     flags: "im"
 *     answer: { "lang": "fr" }     # non-string answers are sent as JSON text
 *   - match: "visits"              # the model calls a tool instead of answering
 *     toolCalls:
 *       - { name: core_kv_get, arguments: { key: "ctr:visits" } }   # arguments: an object, or JSON text as is
 *   - match: "triage"
 *     sequence:                    # successive matching calls get successive replies; the last repeats
 *       - answer: "not JSON at all"             # e.g. an answer that fails the schema,
 *       - answer: { "priority": "high" }        # then a valid one
 *   - match: "weather in"
 *     sequence:
 *       - toolCalls: [{ name: get_weather, arguments: '{"city":"Paris"}' }]
 *       - answer: "Sunny in Paris."
 *         finishReason: stop       # optional: stop, or tool_calls with toolCalls; any string (length, ...)
 * default: "I do not know."        # a reply too: a string, or {answer, toolCalls, finishReason}
 * ```
 *
 * A bare list of entries is accepted too (no default). A reply has `answer`,
 * `toolCalls`, or both (text alongside tool calls). The place in a sequence is
 * kept per entry by the provider, across every app and request of the core,
 * from its start: a test that scripts a sequence gives its entry a `match` of
 * its own. Tool call ids are `call_1`, `call_2`, ... in the order they are made.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { UhlpError } from '../shared/errors.js';
import {
  estimateTokens,
  type LlmGenerateRequest,
  type LlmGenerateResult,
  type LlmProvider,
  normalizeRequest,
  TOOL_NAME_PATTERN,
} from './llm-provider.js';

/** A tool call of a reply; the provider gives it an id. */
export interface ScriptedToolCall {
  readonly name: string;
  /** The JSON text the "model" wrote (need not be valid JSON: scripts can test broken arguments). */
  readonly arguments: string;
}

/** One scripted completion: text, tool calls, or both. */
export interface ScriptedReply {
  readonly answer?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** @defaultValue `tool_calls` with tool calls, else `stop` */
  readonly finishReason?: string;
}

export interface ScriptedEntry {
  /** Matches when the conversation text contains this substring. */
  readonly match?: string;
  /** Matches when this expression finds the conversation text. */
  readonly regex?: RegExp;
  /** Shorthand for one reply with this text. */
  readonly answer?: string;
  /** The replies of successive matching calls; the last repeats. @defaultValue `[{answer}]` */
  readonly sequence?: readonly ScriptedReply[];
}

export interface Script {
  readonly entries: readonly ScriptedEntry[];
  /** Reply when no entry matches. @defaultValue none: the call fails */
  readonly default?: string | ScriptedReply;
}

/** Model name reported when a request names none. */
export const SCRIPTED_MODEL = 'scripted';

export function createScriptedProvider(script: Script): LlmProvider {
  const replies = new Map<ScriptedEntry, readonly ScriptedReply[]>();
  for (const entry of script.entries) {
    const sequence = entry.sequence ?? (entry.answer !== undefined ? [{ answer: entry.answer }] : []);
    if (sequence.length === 0) throw new UhlpError('UHLP_LLM_SCRIPT_INVALID', 'a scripted entry needs an answer or a sequence', {});
    replies.set(entry, sequence);
  }
  const fallback: ScriptedReply | undefined = typeof script.default === 'string' ? { answer: script.default } : script.default;
  const calls = new Map<ScriptedEntry, number>();
  let toolCallIds = 0;

  return {
    kind: 'scripted',
    defaultModel: SCRIPTED_MODEL,
    async generate(request: LlmGenerateRequest): Promise<LlmGenerateResult> {
      if (request.signal?.aborted === true) throw request.signal.reason;
      const normalized = normalizeRequest(request, SCRIPTED_MODEL);
      // Every message's content is searched, in order, one per line: templates put
      // instructions in system messages and the data in user messages.
      const conversation = normalized.messages.map((message) => message.content ?? '').join('\n');
      const entry = script.entries.find((candidate) =>
        candidate.regex !== undefined ? candidate.regex.test(conversation) : conversation.includes(candidate.match ?? ''),
      );
      let reply = fallback;
      if (entry !== undefined) {
        const sequence = replies.get(entry)!;
        const made = calls.get(entry) ?? 0;
        calls.set(entry, made + 1);
        reply = sequence[Math.min(made, sequence.length - 1)];
      }
      if (reply === undefined) {
        throw new UhlpError('UHLP_LLM_NO_SCRIPTED_ANSWER', 'no scripted answer matches the prompt and the script has no default', {
          promptStart: conversation.slice(0, 200),
        });
      }
      const toolCalls = (reply.toolCalls ?? []).map((call) => ({ id: `call_${++toolCallIds}`, name: call.name, arguments: call.arguments }));
      const text = reply.answer ?? null;
      // A stream of the canned text word by word, as a model would produce it.
      if (text !== null && request.onDelta !== undefined) for (const piece of text.match(/\S+\s*|\s+/g) ?? []) request.onDelta(piece);
      const written = (text ?? '') + toolCalls.map((call) => call.name + call.arguments).join('');
      return {
        text,
        toolCalls,
        finishReason: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
        model: normalized.model,
        usage: { prompt: estimateTokens(conversation), completion: estimateTokens(written) },
      };
    },
  };
}

/** Reads and checks a script file, then builds the provider. */
export async function loadScriptedProvider(filePath: string): Promise<LlmProvider> {
  let text: string;
  try {
    text = await readFile(filePath, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : ((error as NodeJS.ErrnoException).code ?? (error as Error).message);
    throw new UhlpError('UHLP_LLM_SCRIPT_INVALID', `cannot read scripted answers file ${filePath}: ${why}`, { file: filePath }, { cause: error });
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
  if (entries.length === 0 && (fallback === undefined || fallback === null)) throw scriptError(source, 'the script has no answers and no default', 'answers');
  if (fallback === undefined || fallback === null) return { entries };
  const reply = typeof fallback === 'object' && !Array.isArray(fallback) ? parseReply(fallback, 'default', source) : { answer: answerText(fallback) };
  return { entries, default: reply };
}

function parseEntry(raw: unknown, field: string, source: string): ScriptedEntry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw scriptError(source, 'each entry must be an object', field);
  const { match, regex, flags, sequence, ...reply } = raw as Record<string, unknown>;
  if ((match === undefined) === (regex === undefined)) throw scriptError(source, 'each entry needs exactly one of "match" and "regex"', field);
  let replies: ScriptedReply[];
  if (sequence !== undefined) {
    if (Object.keys(reply).length > 0) throw scriptError(source, 'an entry has a "sequence" or a reply ("answer", "toolCalls"), not both', field);
    if (!Array.isArray(sequence) || sequence.length === 0) throw scriptError(source, '"sequence" must be a non-empty list of replies', `${field}.sequence`);
    replies = sequence.map((item: unknown, index) => parseReply(item, `${field}.sequence[${index}]`, source));
  } else {
    if (reply['answer'] === undefined && reply['toolCalls'] === undefined) throw scriptError(source, 'each entry needs an "answer", "toolCalls" or a "sequence"', `${field}.answer`);
    replies = [parseReply(reply, field, source)];
  }
  if (match !== undefined) {
    if (typeof match !== 'string' || match === '') throw scriptError(source, '"match" must be a non-empty string', `${field}.match`);
    return { match, sequence: replies };
  }
  if (typeof regex !== 'string' || (flags !== undefined && typeof flags !== 'string')) {
    throw scriptError(source, '"regex" and "flags" must be strings', `${field}.regex`);
  }
  // "g" and "y" make RegExp.test stateful across calls; they are dropped.
  const cleanFlags = (flags ?? '').replace(/[gy]/g, '');
  try {
    return { regex: new RegExp(regex, cleanFlags), sequence: replies };
  } catch (error) {
    throw scriptError(source, `"regex" does not compile: ${(error as Error).message}`, `${field}.regex`);
  }
}

const REPLY_KEYS = new Set(['answer', 'toolCalls', 'finishReason']);

function parseReply(raw: unknown, field: string, source: string): ScriptedReply {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw scriptError(source, 'a reply must be an object with "answer" and/or "toolCalls"', field);
  const record = raw as Record<string, unknown>;
  const unknown = Object.keys(record).find((key) => !REPLY_KEYS.has(key));
  if (unknown !== undefined) throw scriptError(source, `unknown key "${unknown}" (a reply has answer, toolCalls, finishReason)`, `${field}.${unknown}`);
  const { answer, toolCalls, finishReason } = record;
  if ((answer === undefined || answer === null) && toolCalls === undefined) throw scriptError(source, 'a reply needs an "answer" or "toolCalls"', `${field}.answer`);
  if (finishReason !== undefined && (typeof finishReason !== 'string' || finishReason === '')) {
    throw scriptError(source, '"finishReason" must be a non-empty string', `${field}.finishReason`);
  }
  let calls: ScriptedToolCall[] | undefined;
  if (toolCalls !== undefined) {
    if (!Array.isArray(toolCalls) || toolCalls.length === 0) throw scriptError(source, '"toolCalls" must be a non-empty list', `${field}.toolCalls`);
    calls = toolCalls.map((call: unknown, index) => parseToolCall(call, `${field}.toolCalls[${index}]`, source));
  }
  return {
    ...(answer !== undefined && answer !== null ? { answer: answerText(answer) } : {}),
    ...(calls !== undefined ? { toolCalls: calls } : {}),
    ...(typeof finishReason === 'string' ? { finishReason } : {}),
  };
}

function parseToolCall(raw: unknown, field: string, source: string): ScriptedToolCall {
  const record = (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  const { name, arguments: args } = record;
  if (typeof name !== 'string' || !TOOL_NAME_PATTERN.test(name)) throw scriptError(source, `a tool call needs a "name" matching ${TOOL_NAME_PATTERN.source}`, `${field}.name`);
  if (args !== undefined && (typeof args !== 'object' || args === null) && typeof args !== 'string') {
    throw scriptError(source, '"arguments" is an object, or the JSON text as a string', `${field}.arguments`);
  }
  return { name, arguments: args === undefined ? '{}' : typeof args === 'string' ? args : JSON.stringify(args) };
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
