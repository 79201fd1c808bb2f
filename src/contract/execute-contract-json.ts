/**
 * The /execute contract as the python runner reads it: execute-contract.json
 * next to its files (the build writes it, scripts/copy-python-runner.mjs), made
 * here from the one TypeBox source so that the Python checker
 * (src/runners/python/execute_contract.py) never holds a copy kept by hand.
 */
import { DETAILS_FOR_SOURCE, EXECUTE_PATH, ExecuteRequest, REQUEST_ID_HEADER } from './execute-contract.js';

/** The file's name in the python runner's directory. */
export const EXECUTE_CONTRACT_JSON = 'execute-contract.json';

/** The file's text: the request schema, the details each source requires, the path and the request id header. */
export function executeContractJson(): string {
  const detailsForSource = Object.fromEntries(Object.entries(DETAILS_FOR_SOURCE).filter(([, details]) => details !== undefined));
  return `${JSON.stringify({ executePath: EXECUTE_PATH, requestIdHeader: REQUEST_ID_HEADER, request: ExecuteRequest, detailsForSource }, null, 1)}\n`;
}
