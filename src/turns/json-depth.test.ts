import { describe, expect, it } from 'vitest';
import { checkTurnInputDepth, MAX_JSON_DEPTH, nestsDeeper } from './json-depth.js';

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const httpData = (body: string, contentType: string, encoding: 'utf8' | 'base64' = 'utf8'): string =>
  JSON.stringify({
    httpDetails: {
      body: encoding === 'base64' ? Buffer.from(body).toString('base64') : body,
      bodyEncoding: encoding,
      headers: { 'content-type': contentType },
      method: 'POST',
      path: '/x',
      pathParameters: {},
      queryParameters: {},
      routePattern: '/x',
    },
    source: 'http',
  });
const queueData = (payload: string): string =>
  `{"delivery":{"attempt":1,"invocationId":"i"},"queueDetails":{"messageId":"1-0","payload":${payload},"queueName":"q"},"source":"queue"}`;
const refusal = (requestDataJson: string): unknown => {
  try {
    checkTurnInputDepth(requestDataJson);
    return undefined;
  } catch (error) {
    return error;
  }
};

describe('nestsDeeper', () => {
  it.each([
    ['a scalar', '1', 0, false],
    ['a flat object at 1', '{"a":1}', 1, false],
    ['an object in an array past 1', '[{"a":1}]', 1, true],
    ['brackets inside strings, escaped quotes included', '["[[[[\\"[[[", "{{{"]', 1, false],
    ['a backslash at the end of a string', '["a\\\\", ["b"]]', 1, true],
    ['exactly the limit', nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH, false],
    ['one past the limit', nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH, true],
    ['300,000 levels', nested(300_000), MAX_JSON_DEPTH, true],
    ['siblings do not add up', '[[[]],[[]],[[]]]', 3, false],
    ['text as long as the limit', '[[[', 3, false],
    ['the shortest text past the limit', '[[[[', 3, true],
  ])('%s', (_name, text, limit, expected) => {
    expect(nestsDeeper(text, limit)).toBe(expected);
  });
});

describe('checkTurnInputDepth', () => {
  it.each([
    ['a JSON body at the limit', httpData(nested(MAX_JSON_DEPTH), 'application/json'), undefined],
    ['a JSON body past it', httpData(nested(MAX_JSON_DEPTH + 1), 'application/json; charset=utf-8'), 'body'],
    ['a +json body past it, sent as base64', httpData(nested(MAX_JSON_DEPTH + 1), 'application/problem+json', 'base64'), 'body'],
    ['a 300,000-deep JSON body', httpData(nested(300_000), 'application/json'), 'body'],
    ['a text body that only looks deep: not JSON by its own account', httpData(nested(MAX_JSON_DEPTH + 1), 'text/plain'), undefined],
    ['a queue payload at the limit', queueData(nested(MAX_JSON_DEPTH)), undefined],
    ['a queue payload past it', queueData(nested(MAX_JSON_DEPTH + 3)), 'payload'],
    ['a payload with a "content-type" key of its own', queueData(`{"content-type":"application/json","body":"${'['.repeat(600)}"}`), undefined],
  ])('%s', (_name, requestDataJson, field) => {
    const error = refusal(requestDataJson);
    if (field === undefined) expect(error).toBeUndefined();
    else expect(error).toMatchObject({ code: 'UHLP_JSON_TOO_DEEP', statusCode: 400, details: { field, maxDepth: MAX_JSON_DEPTH } });
  });
});
