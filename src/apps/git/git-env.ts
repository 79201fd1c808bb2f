/**
 * The environment Git commands of the definitions store run with: the process
 * environment without Git's own variables (which could point a command at another
 * repository, index or config) and without the editor, pager and askpass hooks
 * that simple-git refuses to pass on. Callers add exactly what they need.
 */
const DROPPED = new Set(['EDITOR', 'VISUAL', 'PAGER', 'PREFIX', 'SSH_ASKPASS']);

export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    const upper = key.toUpperCase();
    if (value === undefined || DROPPED.has(upper) || upper.startsWith('GIT_')) continue;
    env[key] = value;
  }
  // Paths from callers are literal file names, never pathspec patterns.
  return { ...env, GIT_LITERAL_PATHSPECS: '1', GIT_TERMINAL_PROMPT: '0', ...extra };
}
