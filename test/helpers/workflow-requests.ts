/** A POST to a workflow route, in a stored session or none, and what the tests read of its answer. */
import type { Redis } from 'ioredis';
import { lastPrompt, type OpenAiTestServer, type RecordedRequest } from './openai-test-server.js';
import { waitFor } from './wait-for.js';

export interface WorkflowAnswer {
  readonly status: number;
  readonly runId: string | null;
  readonly sessionId: string | null;
  /** The JSON body, or `{text}` when it was not JSON. */
  readonly json: Record<string, any>;
}

/** An answer's JSON body, or `{text}` when it is not JSON. */
export async function jsonOrText(response: Response): Promise<Record<string, any>> {
  const text = await response.text();
  try {
    return JSON.parse(text) as Record<string, any>;
  } catch {
    return { text };
  }
}

/** `session`: `'new'` opens a stored session, an id continues one, none is the app's ambient session. */
export async function sendToWorkflow(url: string, body: unknown, session?: string): Promise<WorkflowAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(session === undefined ? {} : session === 'new' ? { 'x-uhlp-session': 'new' } : { 'x-uhlp-session-id': session }) },
    body: JSON.stringify(body),
  });
  const json = await jsonOrText(response);
  return { status: response.status, runId: response.headers.get('x-uhlp-run-id'), sessionId: response.headers.get('x-uhlp-session-id'), json };
}

/** A run started by `sendToWorkflow` and caught at its model call. */
export interface RunAtModelCall {
  readonly runId: string;
  readonly answer: Promise<WorkflowAnswer>;
  /** The provider's record of the run's call. */
  readonly call: () => RecordedRequest | undefined;
}

/**
 * Sends `{text}` to a workflow route and waits until its new run is listed
 * active (`<prefix>runs:active` in Redis) and the test provider has its model
 * call, whose prompt carries `text`.
 */
export async function startAtModelCall(options: { readonly redis: Redis; readonly prefix: string; readonly llm: OpenAiTestServer; readonly url: string; readonly text: string; readonly session?: string; readonly timeoutMs?: number }): Promise<RunAtModelCall> {
  const { redis, prefix, llm, text } = options;
  const before = new Set(await redis.zrange(`${prefix}runs:active`, '0', '-1'));
  const answer = sendToWorkflow(options.url, { text }, options.session);
  let runId: string | undefined;
  await waitFor(
    async () => {
      runId = (await redis.zrange(`${prefix}runs:active`, '0', '-1')).find((id) => !before.has(id));
      return runId !== undefined && llm.requests.some((request) => lastPrompt(request).includes(text));
    },
    { timeoutMs: options.timeoutMs ?? 30_000, what: `the run of "${text}" to reach its model call` },
  );
  return { runId: runId!, answer, call: () => llm.requests.find((request) => lastPrompt(request).includes(text)) };
}
