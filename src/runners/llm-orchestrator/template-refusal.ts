/**
 * A refusal of the template sandbox at render time, and where the render was
 * when it was refused. nunjucks keeps a position per compiled function and
 * reports it from whichever function's catch an error reaches, which after an
 * include, import or extends belongs to another template (or to nunjucks' own
 * empty template of `include … ignore missing`, which reports none). So the
 * compiled code tells this module where it is as every lookup, call, filter,
 * `in` and `is` starts (template-sandbox.ts), and a refusal takes the place
 * from here as it is made: rendering is synchronous, so that is where it was
 * thrown.
 */

/** A place in a template: 1-based line and column. */
export interface RenderPosition {
  readonly templateName: string;
  readonly line: number;
  readonly column: number;
}

let position: RenderPosition | undefined;

/** Called by compiled templates (0-based, as nunjucks counts). */
export function markRenderPosition(templateName: string, line: number, column: number): void {
  position = { templateName, line: line + 1, column: column + 1 };
}

/** A render starts with no position. */
export function startRenderPositions(): void {
  position = undefined;
}

/** Where the render is now, if it has reached a lookup, call or filter. */
export function currentRenderPosition(): RenderPosition | undefined {
  return position;
}

/** A refusal of the template sandbox at render time (UHLP_PROMPT_TEMPLATE_INVALID). */
export class TemplateSandboxError extends Error {
  /** Where the render was refused; undefined outside a render. */
  readonly position: RenderPosition | undefined = position;

  constructor(message: string) {
    super(message);
    this.name = 'TemplateSandboxError';
  }
}
