/**
 * The files of an app directory that no sandbox may write, whatever the app's
 * `state` capability says: those that decide what the app may do. Today the
 * validator reads exactly one file per app, `app.yaml` (its capabilities,
 * routes, hosts and pools); any file the core starts reading for such a
 * decision belongs here too. Git's own files (`.gitattributes`, `.gitmodules`)
 * change how the repository is read and are refused as well.
 */

/** The file the validator reads for each app. */
export const APP_FILE = 'app.yaml';

/**
 * Why `appPath` (normalized, app-relative) can never be written from a sandbox,
 * or undefined. Compared without regard to case: on a case-insensitive file
 * system `App.YAML` is `app.yaml`.
 */
export function protectedPathReason(appPath: string): string | undefined {
  const lower = appPath.toLowerCase();
  if (lower === APP_FILE) return `${APP_FILE} decides the app's capabilities, routes, hosts and pools`;
  if (lower.split('/').some((segment) => segment.startsWith('.git'))) return 'Git metadata (.git*) decides how the repository is read';
  return undefined;
}
