/**
 * The flags of the commands that run a core (`uhlp dev`, `serve`, `start`),
 * written once: each names the variable it overrides (config.ts reads both) and
 * its default.
 */
import type { FlagSpec } from './command-spec.js';

export const CORE_FLAGS = {
  port: { type: 'string', value: 'N', help: 'Port to listen on; 0 picks a free one (UHLP_PORT; default 8080)' },
  host: { type: 'string', value: 'H', help: 'Address to listen on (UHLP_HOST; default 127.0.0.1)' },
  'data-dir': { type: 'string', value: 'D', help: 'Revisions, ledgers, sockets and runtime.json (UHLP_DATA_DIR; default ./.uhlp)' },
  driver: { type: 'string', value: 'process|docker|pod', help: 'How sandboxes run (UHLP_DRIVER; default process: child processes in bubblewrap)' },
  state: { type: 'string', value: 'memory|redis://...', help: 'Runtime state: sessions, kv, queues, runs (UHLP_STATE; default memory, lost on restart)' },
  pull: { type: 'string', value: 'REMOTE', help: 'git pull --ff-only REMOTE at start (failing the start when it cannot), then every UHLP_GIT_PULL_INTERVAL_MS (30000) (UHLP_GIT_PULL_REMOTE)' },
  ledger: { type: 'string', value: 'files|off', help: 'Turn ledgers under the data directory, or none (UHLP_LEDGER; default files)' },
  'ledger-durability': { type: 'string', value: 'async|sync|fsync', help: "When an answer may leave relative to its turn's ledger entries (UHLP_LEDGER_DURABILITY; default async)" },
  'ledger-retention': { type: 'string', value: 'SPEC', help: 'plane=maxAge/maxSize,... or none (UHLP_LEDGER_RETENTION; default *=24h/2Gi in dev, none otherwise)' },
  'log-level': { type: 'string', value: 'L', help: 'fatal, error, warn, info, debug, trace or silent (UHLP_LOG_LEVEL; default info)' },
} as const satisfies Record<string, FlagSpec>;

/** Where apps come from; `uhlp dev` and `serve` take it, `uhlp start` serves a directory. */
export const REGISTRY_FLAGS = {
  registry: { type: 'string', value: 'git|kubernetes', help: 'Apps from a definitions directory (git) or from AppDefinitions the operator marked Ready (UHLP_REGISTRY; default git)' },
  namespace: { type: 'string', multiple: true, value: 'NS', help: 'With --registry kubernetes: a namespace to serve, repeatable (UHLP_NAMESPACES; default all)' },
  'unsafe-process-sandboxes': {
    type: 'boolean',
    help: 'Run process sandboxes without bubblewrap when it cannot run here (UHLP_UNSAFE_PROCESS_SANDBOXES; on in dev, loudly; serve refuses without it)',
  },
} as const satisfies Record<string, FlagSpec>;

/** Lines every core command's help ends with. */
export const CORE_NOTES = [
  'Every flag has a UHLP_* variable (flags win); the README lists the others (LLM, ledger key, console, pods).',
  'LLM components answer from UHLP_LLM_BASE_URL (a model server), else UHLP_LLM_SCRIPT_FILE, else the',
  "definitions directory's llm-answers.yaml (scripted answers, offline).",
  'Exit: 0 stopped cleanly; 64 a bad flag, setting or definitions directory (the message names it); 1 any other failure.',
] as const;
