/**
 * What flow expressions (flow-expression.ts) read of a turn: its request data,
 * as every source writes it. An HTTP request gives its path parameters,
 * headers, query and JSON body; a delivery (queue, cron, callback, trigger)
 * gives its payload as the body (a callback its headers and JSON body, a cron
 * run its details). A body that is not JSON reads as missing.
 */
import type { FlowEventView } from './flow-expression.js';

export function flowEventViewOf(requestDataJson: string): FlowEventView {
  const data = JSON.parse(requestDataJson) as Record<string, unknown>;
  const http = data['httpDetails'] as
    | { pathParameters?: unknown; headers?: unknown; queryParameters?: unknown; body?: unknown; bodyEncoding?: unknown }
    | undefined;
  if (http !== undefined && http !== null && typeof http === 'object') {
    return { params: http.pathParameters, headers: http.headers, query: http.queryParameters, body: jsonBody(http.body, http.bodyEncoding) };
  }
  const delivered = (data['queueDetails'] ?? data['triggerDetails']) as { payload?: unknown } | undefined;
  if (delivered !== undefined && delivered !== null && typeof delivered === 'object') return { body: delivered.payload };
  const callback = data['callbackDetails'] as { headers?: unknown; body?: unknown; bodyEncoding?: unknown } | undefined;
  if (callback !== undefined && callback !== null && typeof callback === 'object') return { headers: callback.headers, body: jsonBody(callback.body, callback.bodyEncoding) };
  return { body: data['cronDetails'] };
}

function jsonBody(body: unknown, encoding: unknown): unknown {
  if (typeof body !== 'string' || body === '' || encoding !== 'utf8') return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}
