/**
 * The files of an app directory that no sandbox may write, whatever the app's
 * `state` capability says: those that decide what the app may do, and the
 * generated code the optimization oracle proved. Today the
 * validator reads exactly one file per app, `app.yaml` (its capabilities,
 * routes, hosts and pools); any file the core starts reading for such a
 * decision belongs here too. Git's own files (`.gitattributes`, `.gitmodules`)
 * change how the repository is read and are refused as well.
 */

/** The file the validator reads for each app. */
export const APP_FILE = 'app.yaml';
/**
 * Where the optimization oracle commits generated code: it serves a promoted
 * component, after it was proven on held-back samples; a sandbox that could
 * write it would serve unproven code in its place.
 */
export const GENERATED_DIR = 'generated';

/**
 * Why `appPath` (normalized, app-relative) can never be written from a sandbox,
 * or undefined. Compared without regard to case: on a case-insensitive file
 * system `App.YAML` is `app.yaml`.
 */
export function protectedPathReason(appPath: string): string | undefined {
  const lower = appPath.toLowerCase();
  if (lower === APP_FILE) return `${APP_FILE} decides the app's capabilities, routes, hosts and pools`;
  if (lower === GENERATED_DIR || lower.startsWith(`${GENERATED_DIR}/`)) return `${GENERATED_DIR}/ holds code the optimization oracle proved and committed; only the oracle writes it`;
  if (lower.split('/').some((segment) => segment.startsWith('.git'))) return 'Git metadata (.git*) decides how the repository is read';
  return undefined;
}
