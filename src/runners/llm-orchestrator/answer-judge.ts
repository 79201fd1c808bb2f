/**
 * Judges a model's final answer: the output the component answers with, or
 * the errors the model is re-asked with.
 *
 * - With an output schema the answer must be JSON (the whole text, or the first
 *   fenced ```json block that parses) valid against it.
 * - With `respond: httpResponse` the output must also be an HTTP response:
 *   `{statusCode, headers?, body}`, a final status (200-599), header names that
 *   are tokens and values without line breaks.
 * - Without either the output is `{"text": answer}`.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';

export type Verdict = { readonly output: unknown } | { readonly errors: readonly string[] };

export interface JudgeOptions {
  /** The compiled output schema, when the component has one. */
  readonly validate?: ValidateFunction;
  readonly respond: 'generic' | 'httpResponse';
}

/** Errors reported to the model (and to the client) at most. */
const MAX_ERRORS = 20;

export function judgeAnswer(text: string | null, options: JudgeOptions): Verdict {
  if (!options.validate && options.respond === 'generic') return { output: { text: text ?? '' } };
  if (text === null || text.trim() === '') return { errors: ['the answer is empty; answer with JSON'] };
  const parsed = answerJson(text);
  if ('problem' in parsed) return { errors: [parsed.problem] };
  const errors: string[] = [];
  if (options.validate && !options.validate(parsed.value)) {
    for (const error of options.validate.errors ?? []) errors.push(describeError(error));
  }
  if (options.respond === 'httpResponse') errors.push(...httpResponseProblems(parsed.value));
  return errors.length > 0 ? { errors: errors.slice(0, MAX_ERRORS) } : { output: parsed.value };
}

/** The message a re-ask appends after the model's answer. */
export function feedbackMessage(errors: readonly string[]): string {
  return [
    'Your answer is not valid:',
    ...errors.map((error) => `- ${error}`),
    'Answer again with only the corrected JSON value.',
  ].join('\n');
}

/** The JSON value of an answer: its whole text, or a fenced ``` block of it. */
export function answerJson(text: string): { value: unknown } | { problem: string } {
  const whole = parse(text.trim());
  if ('value' in whole) return whole;
  for (const block of text.matchAll(/```[ \t]*(?:json|JSON)?[ \t]*\r?\n([\s\S]*?)```/g)) {
    const fenced = parse(block[1]!.trim());
    if ('value' in fenced) return fenced;
  }
  return { problem: `the answer is not JSON (${whole.problem}); answer with a JSON value only` };
}

function parse(text: string): { value: unknown } | { problem: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

interface AjvError {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

function describeError(error: AjvError): string {
  const where = error.instancePath || '/';
  const extra = typeof error.params['additionalProperty'] === 'string' ? ` (${error.params['additionalProperty']})` : '';
  const allowed = Array.isArray(error.params['allowedValues']) ? ` (${(error.params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')})` : '';
  return `${where}: ${error.message ?? 'is invalid'}${extra}${allowed}`;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// eslint-disable-next-line no-control-regex
const LINE_SAFE = /^[^\u0000-\u0008\u000a-\u001f\u007f]*$/;

function httpResponseProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return ['/: an HTTP response is an object {statusCode, headers?, body}'];
  const response = value as Record<string, unknown>;
  const problems: string[] = [];
  const status = response['statusCode'];
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) problems.push('/statusCode: must be an integer from 200 to 599');
  if (!('body' in response)) problems.push("/: must have required property 'body'");
  const headers = response['headers'];
  if (headers !== undefined) {
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) problems.push('/headers: must be an object of header names to strings');
    else {
      for (const [name, header] of Object.entries(headers)) {
        const values = Array.isArray(header) ? header : [header];
        if (!TOKEN.test(name)) problems.push(`/headers: "${name}" is not a header name`);
        else if (!values.every((v) => typeof v === 'string' && LINE_SAFE.test(v))) problems.push(`/headers/${name}: must be a string without line breaks`);
      }
    }
  }
  return problems;
}
