/**
 * When a request's body is JSON by its own account: a Content-Type of
 * `application/json`, or `application/<anything>+json`, parameters aside. The
 * body is passed on as text whatever it is; this says when the core and the
 * runners read it as JSON.
 */
export function isJsonContentType(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json' || (type !== undefined && type.startsWith('application/') && type.endsWith('+json'));
}
