/**
 * The runtime document's result contract mapped onto the /execute answer: an
 * object with `statusCode` is an HTTP response (`headers` map[string]string,
 * `body` string, `isBase64Encoded`); anything else (a non-object, or an object
 * without `statusCode`) is answered 200 with its JSON as the body. A thrown
 * error becomes an error result as for JIT scripts: its string `code` kept,
 * UHLP_SCRIPT_EXCEPTION otherwise (with its frames of function.js).
 */
import type { ErrorData, HttpResponseData } from '../../contract/execute-contract.js';
import { errorResult, type ScriptResult } from '../kit/script-result.js';
import { ScriptBadResultError, ScriptExceptionError } from '../../shared/runner-errors.js';
import type { ActivationResult } from './isolate-runtime.js';
import type { ScriptPlace } from '../kit/script-stack.js';

/** `place` names the bundle's files in a stack (scriptPlace of bundleStackPrefix): a script exception keeps its frames of function.js. */
export function resultOfActivation(result: ActivationResult, place?: ScriptPlace): ScriptResult {
  if (result.kind === 'unserializable') return errorResult(new ScriptBadResultError('the handler returned a value that is not JSON-serializable'));
  if (result.kind === 'thrown') {
    const { thrown } = result;
    if (thrown.code === undefined) {
      const answer = errorResult(new ScriptExceptionError(place === undefined ? thrown.message : place.message(thrown.message)));
      const stack = place?.stackOf(thrown);
      if (stack !== undefined) (answer.data as ErrorData).stack = stack;
      return answer;
    }
    const data: ErrorData = { code: thrown.code, message: thrown.message };
    if (thrown.status !== undefined && Number.isInteger(thrown.status)) data.status = thrown.status;
    if (thrown.details !== undefined) data.details = thrown.details;
    return { resultType: 'error', data };
  }
  const value = result.value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'statusCode' in value) {
    const response = value as Record<string, unknown>;
    const statusCode = response['statusCode'];
    if (typeof statusCode !== 'number' || !Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) {
      return errorResult(new ScriptBadResultError(`statusCode must be an integer 100-599, got ${JSON.stringify(statusCode)}`));
    }
    const headers: Record<string, string> = {};
    const given = response['headers'];
    if (typeof given === 'object' && given !== null && !Array.isArray(given)) {
      for (const [name, header] of Object.entries(given as Record<string, unknown>)) if (header !== null && header !== undefined) headers[name] = String(header);
    }
    const data: HttpResponseData = { statusCode, headers, bodyEncoding: response['isBase64Encoded'] === true ? 'base64' : 'utf8' };
    const body = response['body'];
    if (typeof body === 'string') data.body = body;
    else if (body !== undefined && body !== null) {
      data.body = JSON.stringify(body);
      if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json; charset=utf-8';
    }
    return { resultType: 'httpResponse', data };
  }
  return {
    resultType: 'httpResponse',
    data: { statusCode: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(value ?? null), bodyEncoding: 'utf8' },
  };
}
