/**
 * The environment Git commands of the definitions store run with: the process
 * environment (config.ts's hostEnvironment(); Git commands run from the core,
 * the operator and the CLI alike, with no CoreConfig at hand) without Git's own variables (which could point a command at another
 * repository, index or config) and without the editor, pager and askpass hooks
 * that simple-git refuses to pass on. Callers add exactly what they need.
 */
import { hostEnvironment } from '../../config.js';

const DROPPED = new Set(['EDITOR', 'VISUAL', 'PAGER', 'PREFIX', 'SSH_ASKPASS']);

export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(hostEnvironment())) {
    const upper = key.toUpperCase();
    if (DROPPED.has(upper) || upper.startsWith('GIT_')) continue;
    env[key] = value;
  }
  // Paths from callers are literal file names, never pathspec patterns.
  return { ...env, GIT_LITERAL_PATHSPECS: '1', GIT_TERMINAL_PROMPT: '0', ...extra };
}
