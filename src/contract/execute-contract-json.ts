/**
 * The /execute contract as the python runner reads it: execute-contract.json
 * next to its files (the build writes it, scripts/copy-python-runner.mjs), made
 * here from the one TypeBox source so that the Python checker
 * (src/runners/python/execute_contract.py) never holds a copy kept by hand.
 */
import { DETAILS_FOR_SOURCE, EXECUTE_PATH, ExecuteRequest, REQUEST_ID_HEADER, TRACE_ID_HEADER } from './execute-contract.js';
import { TREE_TOP_DIRS, WALK_MAX_BYTES, WALK_MAX_FILES } from '../shared/work-tree-walk.js';
import { MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_STACK_CHARS, MAX_ERROR_STACK_FRAMES } from './error-stack.js';

/** The file's name in the python runner's directory. */
export const EXECUTE_CONTRACT_JSON = 'execute-contract.json';

/**
 * The file's text: the request schema, the details each source requires, the path, the request id and trace id headers, the
 * bounds of an error's stack and message, and the rules of the work tree's walk (src/shared/work-tree-walk.ts).
 */
export function executeContractJson(): string {
  const detailsForSource = Object.fromEntries(Object.entries(DETAILS_FOR_SOURCE).filter(([, details]) => details !== undefined));
  const errorBounds = { stackFrames: MAX_ERROR_STACK_FRAMES, stackChars: MAX_ERROR_STACK_CHARS, messageChars: MAX_ERROR_MESSAGE_CHARS };
  const workTreeWalk = { topDirs: TREE_TOP_DIRS, maxFiles: WALK_MAX_FILES, maxBytes: WALK_MAX_BYTES };
  return `${JSON.stringify({ executePath: EXECUTE_PATH, requestIdHeader: REQUEST_ID_HEADER, traceIdHeader: TRACE_ID_HEADER, request: ExecuteRequest, detailsForSource, errorBounds, workTreeWalk }, null, 1)}\n`;
}
