/** A POST to a workflow route, in a stored session or none, and what the tests read of its answer. */

export interface WorkflowAnswer {
  readonly status: number;
  readonly runId: string | null;
  readonly sessionId: string | null;
  /** The JSON body, or `{text}` when it was not JSON. */
  readonly json: Record<string, any>;
}

/** `session`: `'new'` opens a stored session, an id continues one, none is the app's ambient session. */
export async function sendToWorkflow(url: string, body: unknown, session?: string): Promise<WorkflowAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(session === undefined ? {} : session === 'new' ? { 'x-uhlp-session': 'new' } : { 'x-uhlp-session-id': session }) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: Record<string, any> = {};
  try {
    json = JSON.parse(text) as Record<string, any>;
  } catch {
    json = { text };
  }
  return { status: response.status, runId: response.headers.get('x-uhlp-run-id'), sessionId: response.headers.get('x-uhlp-session-id'), json };
}
