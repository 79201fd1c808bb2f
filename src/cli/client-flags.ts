/**
 * The flags of the commands that talk to a running core (`uhlp queues`, `runs`,
 * `optimize`, `mcp token`): where the core is (core-target.ts; the operator
 * commands talk to its operator listener), and JSON output.
 */
import type { FlagSpec } from './command-spec.js';

export const URL_FLAG = {
  type: 'string',
  value: 'URL',
  help: "The core's URL (UHLP_URL; default: the core uhlp dev or uhlp start recorded in the data directory, else http://127.0.0.1:8080)",
} as const satisfies FlagSpec;

/** The same for the commands of operator routes (`queues`, `optimize`, `mcp token`): the core's operator listener. */
export const OPERATOR_URL_FLAG = {
  type: 'string',
  value: 'URL',
  help: "The core's operator URL (UHLP_OPERATOR_URL; default: the one uhlp dev or uhlp start recorded in the data directory, else http://127.0.0.1:8081)",
} as const satisfies FlagSpec;

export const DATA_DIR_FLAG = {
  type: 'string',
  value: 'D',
  help: 'The data directory where uhlp dev or uhlp start recorded the core (UHLP_DATA_DIR; default ./.uhlp)',
} as const satisfies FlagSpec;

export const JSON_FLAG = { type: 'boolean', help: 'Print the answer as JSON' } as const satisfies FlagSpec;
