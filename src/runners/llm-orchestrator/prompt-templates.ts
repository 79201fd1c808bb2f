/**
 * Renders an LLM component's templates (nunjucks, Jinja2 syntax) with files
 * read through MCP: `{% include "prompts/preamble.njk" %}`, `{% import %}`,
 * `{% from %}` and `{% extends %}` name app-relative paths (or paths relative
 * to the including template when they start with ./ or ../), read at the
 * execution's revision.
 *
 * nunjucks asks its loader for files while it renders, synchronously; MCP
 * answers asynchronously. So a render runs on the files read so far, the
 * loader notes every file it was asked for and did not have, those are read,
 * and the render runs again, until it asks for nothing new. Rendering has no
 * side effects (the variables are frozen), so running it again is safe; after
 * the first request of a revision every file is at hand and a render runs once.
 *
 * As in Jinja2 (keep_trailing_newline off), one line break at the end of a
 * file is not part of the template: an included file does not add an empty line.
 *
 * Every file is compiled once, through the template sandbox
 * (template-sandbox.ts), when it is read: nunjucks gets the compiled code, never
 * the text, whether the file is the one rendered or one it includes, imports or
 * extends. A failure names the file, the line and column (1-based, when known)
 * and the cause: PromptTemplateError, whose code says whether the sandbox
 * refused the template (UHLP_PROMPT_TEMPLATE_INVALID: it does not parse, or
 * leaves the grammar, or did what templates may not at render time) or the
 * render failed (UHLP_PROMPT_TEMPLATE_ERROR: a file missing or unreadable, an
 * error while rendering).
 */
import path from 'node:path';
import type nunjucks from 'nunjucks';
import type { ToolsClient } from '../kit/tools-client.js';
import { PromptTemplateFailedError, PromptTemplateInvalidError } from '../../shared/runner-errors.js';
import { DefinitionFileError, type DefinitionFiles, appRelativePath } from './definition-files.js';
import type { TemplateNode } from './template-grammar.js';
import { compileTemplate, createSandboxedEnvironment, nunjucksInternals, withLookupObserver, type LookupObserver, type RenderError, type TemplateCode } from './template-sandbox.js';
import { startRenderPositions, TemplateSandboxError } from './template-refusal.js';

/** Distinct files one revision's templates may use, includes and imports included. */
export const MAX_TEMPLATE_FILES = 256;
/** Revisions whose compiled templates are kept at once (per app). */
const KEPT_REVISIONS = 4;

/** Why a template failed: refused by the sandbox, or failed to read or render. */
export type PromptTemplateErrorCode = PromptTemplateInvalidError['code'] | PromptTemplateFailedError['code'];

/** A template that cannot be read, is refused, or fails to render. */
export class PromptTemplateError extends Error {
  constructor(
    readonly code: PromptTemplateErrorCode,
    /** The app-relative file at fault. */
    readonly file: string,
    /** 1-based; null when nunjucks does not say. */
    readonly line: number | null,
    readonly reason: string,
    /** 1-based; null when nunjucks does not say. */
    readonly column: number | null = null,
  ) {
    super(`${file}${line !== null ? `:${line}${column !== null ? `:${column}` : ''}` : ''}: ${reason}`);
    this.name = 'PromptTemplateError';
  }

  /** The error's `details` as the orchestrator answers them. */
  details(): { file: string; line: number | null; column: number | null; cause: string } {
    return { file: this.file, line: this.line, column: this.column, cause: this.reason };
  }

  /** The registry error an LLM task (or a workflow's LLM step) fails with for this template. */
  toTaskError(): PromptTemplateInvalidError | PromptTemplateFailedError {
    const message = `prompt template ${this.message}`;
    return this.code === 'UHLP_PROMPT_TEMPLATE_INVALID' ? new PromptTemplateInvalidError(message, this.details()) : new PromptTemplateFailedError(message, this.details());
  }
}

/** A read or render failure (UHLP_PROMPT_TEMPLATE_ERROR). */
function failed(file: string, line: number | null, reason: string): PromptTemplateError {
  return new PromptTemplateError('UHLP_PROMPT_TEMPLATE_ERROR', file, line, reason);
}

/** Where a render reads files: the app, its revision, and the execution's MCP client. */
export interface RenderScope {
  readonly appId: string;
  readonly revision: string;
  readonly tools: ToolsClient;
}

export class PromptTemplates {
  private readonly engines = new Map<string, RevisionTemplates>();

  constructor(private readonly files: DefinitionFiles) {}

  /**
   * Renders the app file `file` with `variables`; throws PromptTemplateError.
   * `observer` sees every variable the render looks up (template-inputs.ts).
   */
  render(file: string, variables: Record<string, unknown>, scope: RenderScope, observer?: LookupObserver): Promise<string> {
    const key = `${scope.appId}\0${scope.revision}`;
    let engine = this.engines.get(key);
    if (engine === undefined) {
      engine = new RevisionTemplates(this.files);
      this.engines.set(key, engine);
      for (const old of this.engines.keys()) {
        if (this.engines.size <= KEPT_REVISIONS) break;
        this.engines.delete(old);
      }
    }
    return engine.render(file, variables, scope, observer);
  }
}

type Source = { src: string; code: TemplateCode } | { problem: PromptTemplateError } | { missing: string };

/**
 * The templates of one revision of one app: their sources and compiled code.
 * Each render gets a nunjucks environment of its own over them.
 */
class RevisionTemplates {
  private readonly sources = new Map<string, Source>();
  /**
   * Files a render asked for that are not read yet. Shared by the renders of the
   * revision that run at once (one runner serves several executions): a name
   * leaves it only once it is read, so no render loses another's request.
   */
  private readonly wanted = new Set<string>();
  /** Reads under way, so that renders asking for the same file at once read it once. */
  private readonly reading = new Map<string, Promise<void>>();

  constructor(private readonly files: DefinitionFiles) {}

  /** A loader for one render's environment (nunjucks keeps its cache on the loader): it hands out compiled code only. */
  private loader(): nunjucks.ILoader {
    const loader = {
      isRelative: (name: string): boolean => name.startsWith('./') || name.startsWith('../'),
      resolve: (from: string, to: string): string => path.posix.join(path.posix.dirname(from), to),
      getSource: (name: string): unknown => {
        const relative = appRelativePath(name);
        const key = 'path' in relative ? relative.path : name;
        const source = this.sources.get(key);
        if (source === undefined) {
          if ('path' in relative) this.wanted.add(key);
          else this.sources.set(key, { missing: `"${name}" ${relative.problem}` });
          return null;
        }
        return 'code' in source ? { src: { type: 'code', obj: source.code }, path: key, noCache: false } : null;
      },
    };
    // nunjucks takes null for "no such template" and compiled code as a source; its type declarations say neither.
    return loader as unknown as nunjucks.ILoader;
  }

  async render(file: string, variables: Record<string, unknown>, scope: RenderScope, observer?: LookupObserver): Promise<string> {
    const root = appRelativePath(file);
    if ('problem' in root) throw failed(file, null, `"${file}" ${root.problem}`);
    await this.read([root.path], scope);
    const first = this.sources.get(root.path)!;
    if ('problem' in first) throw first.problem;
    if ('missing' in first) throw failed(root.path, null, first.missing);

    for (;;) {
      const outcome = await this.renderOnce(root.path, variables, observer);
      const unread = [...this.wanted].filter((name) => !this.sources.has(name));
      if (unread.length > 0) {
        if (this.sources.size + unread.length > MAX_TEMPLATE_FILES) {
          throw failed(root.path, null, `the templates use more than ${MAX_TEMPLATE_FILES} files`);
        }
        // Each round reads at least one new file: the loop ends within MAX_TEMPLATE_FILES rounds.
        await this.read(unread, scope);
        continue;
      }
      if ('text' in outcome) return outcome.text;
      throw this.explain(outcome.error, root.path);
    }
  }

  private renderOnce(file: string, variables: Record<string, unknown>, observer: LookupObserver | undefined): Promise<{ text: string } | { error: RenderError }> {
    return new Promise((resolve) => {
      try {
        // The callback form: nunjucks reports some errors of included templates
        // asynchronously, which the synchronous form would throw out of reach.
        const env = createSandboxedEnvironment(this.loader());
        startRenderPositions();
        withLookupObserver(observer, () => env.render(file, variables, (error, text) => resolve(error ? { error } : { text: text ?? '' })));
      } catch (error) {
        resolve({ error: error instanceof Error ? error : new Error(String(error)) });
      }
    });
  }

  /** Reads and checks `names`; a failure that may pass is thrown, the others are kept as the file's state. */
  private async read(names: readonly string[], scope: RenderScope): Promise<void> {
    await Promise.all(
      names.map((name) => {
        if (this.sources.has(name)) return undefined;
        let reading = this.reading.get(name);
        if (reading === undefined) {
          reading = this.readOne(name, scope).finally(() => this.reading.delete(name));
          this.reading.set(name, reading);
        }
        return reading;
      }),
    );
  }

  private async readOne(name: string, scope: RenderScope): Promise<void> {
    let src: string;
    try {
      src = await this.files.read(scope.appId, scope.revision, name, scope.tools);
    } catch (error) {
      if (!(error instanceof DefinitionFileError)) throw error;
      if (!error.permanent) throw failed(name, null, `cannot be read: ${error.message}`);
      this.settle(name, { missing: error.message });
      return;
    }
    src = src.replace(/\r?\n$/, '');
    const compiled = compileTemplate(src, name);
    if ('problem' in compiled) {
      const { line, column, cause } = compiled.problem;
      this.settle(name, { problem: new PromptTemplateError('UHLP_PROMPT_TEMPLATE_INVALID', name, line, cause, column) });
    } else this.settle(name, { src, code: compiled.code });
  }

  private settle(name: string, source: Source): void {
    this.sources.set(name, source);
    this.wanted.delete(name);
  }

  /** The file, position and cause of a render error. */
  private explain(error: RenderError, root: string): PromptTemplateError {
    // nunjucks prefixes the message with "(file) [Line n, Column m]" for the
    // templates the error passed through: the rendered one, and included ones.
    const frames = [...error.message.matchAll(/\(([^\n]*?)\)(?: \[Line (\d+)(?:, Column (\d+))?\])?\n/g)];
    const innermost = frames[frames.length - 1];
    const named = error.templateName ?? innermost?.[1];
    const file = named !== undefined && this.sources.has(named) ? named : root;
    const lines = error.message.split('\n');
    const cause = error.cause instanceof Error ? error.cause.message : (lines[lines.length - 1] ?? '').trim().replace(/^(?:[A-Za-z]*Error|Template render error): /, '');

    const notFound = /^template not found: (.*)$/.exec(cause);
    if (notFound) {
      const name = notFound[1]!;
      const relative = appRelativePath(name);
      const source = this.sources.get('path' in relative ? relative.path : name);
      // A file that was found but failed its check: that file's own error.
      if (source && 'problem' in source) return source.problem;
      const why = source && 'missing' in source ? source.missing : 'no such file';
      const at = this.positionNaming(file, name);
      return new PromptTemplateError('UHLP_PROMPT_TEMPLATE_ERROR', file, at?.line ?? null, `template not found: ${name}: ${why}`, at?.column ?? null);
    }
    // The sandbox refused something the template did while rendering: a refusal
    // like the grammar's, placed where it was made.
    if (error.cause instanceof TemplateSandboxError) {
      const at = error.cause.position;
      const where = at !== undefined && this.sources.has(at.templateName) ? at.templateName : file;
      return new PromptTemplateError('UHLP_PROMPT_TEMPLATE_INVALID', where, at?.line ?? null, cause, at?.column ?? null);
    }
    const position = (value: unknown, fallback: string | undefined): number | null => (typeof value === 'number' && value > 0 ? value : fallback !== undefined ? Number(fallback) : null);
    return new PromptTemplateError('UHLP_PROMPT_TEMPLATE_ERROR', file, position(error.lineno, innermost?.[2]), cause || error.message, position(error.colno, innermost?.[3]));
  }

  /** Where in `file` an include, import, from or extends names `target` (nunjucks does not say). */
  private positionNaming(file: string, target: string): { line: number; column: number } | null {
    const source = this.sources.get(file);
    if (!source || !('src' in source)) return null;
    const stack: TemplateNode[] = [nunjucksInternals.parser.parse(source.src)];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (['Include', 'Import', 'FromImport', 'Extends'].includes(node.typename)) {
        const named = node['template'] as TemplateNode | undefined;
        if (named?.typename === 'Literal' && node.lineno !== undefined) {
          const value = String(named.value);
          const resolved = value.startsWith('./') || value.startsWith('../') ? path.posix.join(path.posix.dirname(file), value) : value;
          if (value === target || resolved === target) return { line: node.lineno + 1, column: (node.colno ?? 0) + 1 };
        }
      }
      for (const field of Object.keys(node)) {
        const child = node[field];
        for (const item of Array.isArray(child) ? child : [child]) {
          if (typeof item === 'object' && item !== null && typeof (item as TemplateNode).typename === 'string') stack.push(item as TemplateNode);
        }
      }
    }
    return null;
  }
}
