/**
 * The console API from the page: every request carries the `x-uhlp-console`
 * header (the core refuses API requests without it), answers are JSON, and a
 * failure is an ApiError with the core's stable code. A run's live stream is
 * read with fetch() too (EventSource cannot send the header).
 */
export const API = './api';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export async function api<T>(path: string, init: { method?: string; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const response = await fetch(`${API}${path}`, {
    method: init.method ?? 'GET',
    headers: { 'x-uhlp-console': '1', accept: 'application/json', ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    credentials: 'same-origin',
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    ...(init.signal !== undefined ? { signal: init.signal } : {}),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!response.ok) {
    const body = (json ?? {}) as { code?: string; message?: string; details?: unknown };
    throw new ApiError(response.status, body.code ?? `HTTP_${response.status}`, body.message ?? text.slice(0, 200), body.details);
  }
  return json as T;
}

/** Query string of the defined values. */
export function query(values: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value !== undefined && value !== '') params.set(key, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** Reads server-sent events from `path` until `signal` aborts or the stream ends. */
export async function streamEvents(path: string, onEvent: (event: string, data: unknown) => void, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${API}${path}`, { headers: { 'x-uhlp-console': '1', accept: 'text/event-stream' }, credentials: 'same-origin', signal });
  if (!response.ok || response.body === null) throw new ApiError(response.status, `HTTP_${response.status}`, 'the stream could not be opened');
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) onEvent(event, JSON.parse(data.join('\n')));
    }
  }
}
