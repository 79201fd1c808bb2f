import { describe, expect, it } from 'vitest';
import type { RunError } from '../../../contract/workflow/run-view.js';
import { InternalError } from '../../../shared/errors.js';
import { LlmOutputInvalidError } from '../../../shared/runner-errors.js';
import { WorkflowRejectedError } from '../../../shared/workflow-errors.js';
import { ToolCallError } from '../../kit/tools-client.js';
import { DefinitionFileError } from '../definition-files.js';
import { asRunError } from './run-errors.js';

describe("a step's failure as the run's error", () => {
  it.each<[string, unknown, RunError]>([
    ['a registry error, with its status', new WorkflowRejectedError('no', { node: 'a' }), { code: 'UHLP_WORKFLOW_REJECTED', message: 'no', status: 409, details: { node: 'a' } }],
    ['a registry error without details', new LlmOutputInvalidError('bad'), { code: 'UHLP_LLM_OUTPUT_INVALID', message: 'bad', status: 502 }],
    ['a refusal of the core as it came', new ToolCallError('UHLP_CAPABILITY_DENIED', 'denied', 403, { capability: 'kv' }), { code: 'UHLP_CAPABILITY_DENIED', message: 'denied', status: 403, details: { capability: 'kv' } }],
    ['a refusal of the core without a status, as a failed call', new ToolCallError('APP_CODE', 'failed'), { code: 'APP_CODE', message: 'failed', status: 502 }],
    ['another coded error, as an internal failure', new DefinitionFileError('a.md', 'gone', true, 'UHLP_DEFINITION_FILE_NOT_FOUND'), { code: 'UHLP_DEFINITION_FILE_NOT_FOUND', message: 'gone', status: 500 }],
    ['an error without a code, saying nothing of it', new TypeError('x is undefined'), { code: 'UHLP_INTERNAL', message: 'the workflow step failed', status: 500 }],
    ['something thrown that is no error', 'boom', { code: 'UHLP_INTERNAL', message: 'the workflow step failed', status: 500 }],
  ])('keeps %s', (_name, error, expected) => {
    expect(asRunError(error)).toEqual(expected);
  });

  it('cuts a message to 4096 characters', () => {
    expect(asRunError(new InternalError('m'.repeat(5000))).message).toHaveLength(4096);
    expect(asRunError(new ToolCallError('X', 'm'.repeat(5000), 500)).message).toHaveLength(4096);
  });
});
