/**
 * The variables an LLM component's templates see, built from the /execute
 * request (and nothing else: templates reach no other state):
 *
 * | name      | value |
 * | --------- | ----- |
 * | `params`  | the route's path parameters (`{}` when none) |
 * | `query`   | the query parameters; a repeated key is a list |
 * | `headers` | the request headers, names in lower case |
 * | `body`    | HTTP and callbacks: the body parsed as JSON when its content type is JSON (`application/json`, `*+json`) and it parses, else its text; queue messages and triggers: their payload; cron and internal events: null |
 * | `request` | the whole `requestData` of the contract |
 * | `config`  | the app's configuration values |
 * | `session` | `{id, turn}`: the session and turn of this execution (null outside a session) |
 * | `app`     | `{id, revision, deploymentMode}` |
 * | `component` | `{id}` |
 *
 * The variables are frozen, all the way down: a template cannot change what
 * another part of the turn (the prompt header, a second render) sees.
 */
import type { ExecuteRequest, RequestData } from './execute-contract.js';
import { isJsonContentType } from './json-content-type.js';

export type TemplateVariables = Readonly<Record<string, unknown>>;

export function templateVariables(request: ExecuteRequest): TemplateVariables {
  const { requestData, context } = request;
  const http = requestData.httpDetails;
  const variables = {
    params: http?.pathParameters ?? {},
    query: http?.queryParameters ?? {},
    headers: http?.headers ?? requestData.callbackDetails?.headers ?? {},
    body: requestBody(requestData),
    request: requestData,
    config: context.configuration,
    session: { id: context.sessionId ?? null, turn: context.turnNumber ?? null },
    app: { id: context.appId, revision: context.taskDetails?.revision ?? null, deploymentMode: context.applicationInfo.deploymentMode },
    component: { id: context.componentId },
  };
  return deepFreeze(variables);
}

/** The body as templates see it (see the table above). */
export function requestBody(data: RequestData): unknown {
  const carrier = data.httpDetails ?? data.callbackDetails;
  if (carrier) {
    const text = bodyText(carrier);
    if (isJsonContentType(carrier.headers['content-type'])) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        // A body that says JSON and is not: the template gets the text as it came.
      }
    }
    return text;
  }
  if (data.queueDetails) return data.queueDetails.payload;
  if (data.triggerDetails) return data.triggerDetails.payload;
  return null;
}

/** The body's bytes as they came: UTF-8 text, or base64 of bytes that are not. */
export function bodyBytes(carrier: { body: string; bodyEncoding: 'utf8' | 'base64' }): Buffer {
  return Buffer.from(carrier.body, carrier.bodyEncoding === 'base64' ? 'base64' : 'utf8');
}

function bodyText(carrier: { body: string; bodyEncoding: 'utf8' | 'base64' }): string {
  return carrier.bodyEncoding === 'base64' ? bodyBytes(carrier).toString('utf8') : carrier.body;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
