/**
 * The Content-Security-Policy headers of the console's page and of the views'
 * sandbox page.
 *
 * The console's page runs only its own script and style files (no inline
 * script or style, no eval), talks only to its own origin, frames only the
 * sandbox origin, and may not be framed itself. Data is never HTML on it
 * (run data, model output and app errors are attacker-controlled): it is
 * rendered as text, and a payload that got past that still could not run.
 *
 * The sandbox page (outer iframe of a view) carries the policy the view's
 * resource declares, built as MCP Apps (SEP-1865) says: a restrictive default
 * when it declares nothing, and never an origin it did not declare. The view
 * itself is an `srcdoc` document of the sandbox page, which it inherits the
 * policy from, so the view cannot lift it.
 */
import { CSP_ORIGIN_PATTERN, type UiCspSpec } from '../apps/schema/ui-schema.js';

/** The console page's policy; `sandboxOrigin` is the only origin it may frame. */
export function consolePageCsp(sandboxOrigin: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    `frame-src ${sandboxOrigin}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

const ORIGIN = new RegExp(CSP_ORIGIN_PATTERN);

/** Only origins of the schema's form reach a policy (a definition was validated; this holds whatever the caller passes). */
function origins(list: readonly string[] | undefined): string[] {
  return (list ?? []).filter((origin) => typeof origin === 'string' && ORIGIN.test(origin));
}

/**
 * The sandbox page's policy for a view whose resource declares `csp` (none:
 * the extension's restrictive default). `frameAncestors` are the console
 * origins that may embed the sandbox page.
 */
export function sandboxPageCsp(csp: UiCspSpec | undefined, frameAncestors: readonly string[]): string {
  const resources = origins(csp?.resourceDomains);
  const connect = origins(csp?.connectDomains);
  const frames = origins(csp?.frameDomains);
  const bases = origins(csp?.baseUriDomains);
  const list = (base: string, extra: readonly string[]): string => [base, ...extra].join(' ');
  return [
    "default-src 'none'",
    list("script-src 'self' 'unsafe-inline'", resources),
    list("style-src 'self' 'unsafe-inline'", resources),
    list("img-src 'self' data:", resources),
    list("font-src 'self'", resources),
    list("media-src 'self' data:", resources),
    connect.length > 0 ? `connect-src ${connect.join(' ')}` : "connect-src 'none'",
    frames.length > 0 ? `frame-src ${frames.join(' ')}` : "frame-src 'none'",
    "object-src 'none'",
    bases.length > 0 ? `base-uri ${bases.join(' ')}` : "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors.length > 0 ? frameAncestors.join(' ') : "'none'"}`,
  ].join('; ');
}

/** The iframe `sandbox` of a view (the inner frame): scripts and forms, an opaque origin of its own, nothing else. */
export const VIEW_SANDBOX = 'allow-scripts allow-forms';
/** The iframe `sandbox` of the sandbox page (the outer frame), as the extension requires: on its own origin. */
export const PROXY_SANDBOX = 'allow-scripts allow-same-origin';
