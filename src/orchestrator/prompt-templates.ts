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
 * Every file is checked before nunjucks sees it: it must parse, compile and
 * pass the template sandbox (template-sandbox.ts). A failure names the file, the
 * line (1-based, when nunjucks knows it) and the cause: PromptTemplateError.
 */
import path from 'node:path';
import type nunjucks from 'nunjucks';
import type { ToolsClient } from '../runner/tools-client.js';
import { DefinitionFileError, type DefinitionFiles, appRelativePath } from './definition-files.js';
import { createSandboxedEnvironment, nunjucksInternals, templateProblem, withLookupObserver, type LookupObserver, type TemplateNode } from './template-sandbox.js';

/** Distinct files one revision's templates may use, includes and imports included. */
export const MAX_TEMPLATE_FILES = 256;
/** Revisions whose compiled templates are kept at once (per app). */
const KEPT_REVISIONS = 4;

/** A template that cannot be read, checked or rendered (UHLP_PROMPT_TEMPLATE_ERROR). */
export class PromptTemplateError extends Error {
  constructor(
    /** The app-relative file at fault. */
    readonly file: string,
    /** 1-based; null when nunjucks does not say. */
    readonly line: number | null,
    readonly reason: string,
  ) {
    super(`${file}${line !== null ? `:${line}` : ''}: ${reason}`);
    this.name = 'PromptTemplateError';
  }
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

type Source = { src: string } | { problem: PromptTemplateError } | { missing: string };

/** The templates of one revision of one app: their sources, checks and one nunjucks environment. */
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
  private readonly env: nunjucks.Environment;

  constructor(private readonly files: DefinitionFiles) {
    const loader = {
      isRelative: (name: string): boolean => name.startsWith('./') || name.startsWith('../'),
      resolve: (from: string, to: string): string => path.posix.join(path.posix.dirname(from), to),
      getSource: (name: string): nunjucks.LoaderSource | null => {
        const relative = appRelativePath(name);
        const key = 'path' in relative ? relative.path : name;
        const source = this.sources.get(key);
        if (source === undefined) {
          if ('path' in relative) this.wanted.add(key);
          else this.sources.set(key, { missing: `"${name}" ${relative.problem}` });
          return null;
        }
        return 'src' in source ? { src: source.src, path: key, noCache: false } : null;
      },
    };
    // nunjucks takes null for "no such template"; its type declarations do not say so.
    this.env = createSandboxedEnvironment(loader as unknown as nunjucks.ILoader);
  }

  async render(file: string, variables: Record<string, unknown>, scope: RenderScope, observer?: LookupObserver): Promise<string> {
    const root = appRelativePath(file);
    if ('problem' in root) throw new PromptTemplateError(file, null, `"${file}" ${root.problem}`);
    await this.read([root.path], scope);
    const first = this.sources.get(root.path)!;
    if ('problem' in first) throw first.problem;
    if ('missing' in first) throw new PromptTemplateError(root.path, null, first.missing);

    for (;;) {
      const outcome = await this.renderOnce(root.path, variables, observer);
      const unread = [...this.wanted].filter((name) => !this.sources.has(name));
      if (unread.length > 0) {
        if (this.sources.size + unread.length > MAX_TEMPLATE_FILES) {
          throw new PromptTemplateError(root.path, null, `the templates use more than ${MAX_TEMPLATE_FILES} files`);
        }
        // Each round reads at least one new file: the loop ends within MAX_TEMPLATE_FILES rounds.
        await this.read(unread, scope);
        continue;
      }
      if ('text' in outcome) return outcome.text;
      throw this.explain(outcome.error, root.path);
    }
  }

  private renderOnce(file: string, variables: Record<string, unknown>, observer: LookupObserver | undefined): Promise<{ text: string } | { error: Error }> {
    return new Promise((resolve) => {
      try {
        // The callback form: nunjucks reports some errors of included templates
        // asynchronously, which the synchronous form would throw out of reach.
        withLookupObserver(observer, () => this.env.render(file, variables, (error, text) => resolve(error ? { error } : { text: text ?? '' })));
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
      if (!error.permanent) throw new PromptTemplateError(name, null, `cannot be read: ${error.message}`);
      this.settle(name, { missing: error.message });
      return;
    }
    src = src.replace(/\r?\n$/, '');
    const problem = this.check(name, src);
    this.settle(name, problem ? { problem } : { src });
  }

  private settle(name: string, source: Source): void {
    this.sources.set(name, source);
    this.wanted.delete(name);
  }

  /** Why `src` cannot be used as the template `name`, or undefined. */
  private check(name: string, src: string): PromptTemplateError | undefined {
    const options = (this.env as unknown as { opts: object }).opts;
    let tree: TemplateNode;
    try {
      tree = nunjucksInternals.parser.parse(src, [], options);
    } catch (error) {
      return compileError(name, error);
    }
    const filters = (this.env as unknown as { filters: Record<string, unknown> }).filters;
    const problem = templateProblem(tree, (filter) => Object.hasOwn(filters, filter));
    if (problem) return new PromptTemplateError(name, problem.line ?? null, problem.cause);
    try {
      nunjucksInternals.compiler.compile(src, [], [], name, options);
    } catch (error) {
      return compileError(name, error);
    }
    return undefined;
  }

  /** The file, line and cause of a render error, from what nunjucks put in its message. */
  private explain(error: Error, root: string): PromptTemplateError {
    // nunjucks prefixes the message with "(file) [Line n, Column m]" for each
    // template the error passed through, innermost last (1-based: see hardenNunjucksRuntime).
    const frames = [...error.message.matchAll(/\(([^\n]*?)\)(?: \[Line (\d+)(?:, Column \d+)?\])?\n/g)];
    const innermost = frames[frames.length - 1];
    const file = innermost?.[1] && this.sources.has(innermost[1]) ? innermost[1] : root;
    const lines = error.message.split('\n');
    const cause = (lines[lines.length - 1] ?? '').trim().replace(/^(?:[A-Za-z]*Error|Template render error): /, '');

    const notFound = /^template not found: (.*)$/.exec(cause);
    if (notFound) {
      const name = notFound[1]!;
      const relative = appRelativePath(name);
      const source = this.sources.get('path' in relative ? relative.path : name);
      // A file that was found but failed its check: that file's own error.
      if (source && 'problem' in source) return source.problem;
      const why = source && 'missing' in source ? source.missing : 'no such file';
      return new PromptTemplateError(file, this.lineNaming(file, name), `template not found: ${name}: ${why}`);
    }
    const line = innermost?.[2] !== undefined ? Number(innermost[2]) : null;
    return new PromptTemplateError(file, line, cause || error.message);
  }

  /** The line of `file` whose include, import, from or extends names `target` (nunjucks does not say). */
  private lineNaming(file: string, target: string): number | null {
    const source = this.sources.get(file);
    if (!source || !('src' in source)) return null;
    const stack: TemplateNode[] = [nunjucksInternals.parser.parse(source.src, [], (this.env as unknown as { opts: object }).opts)];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (['Include', 'Import', 'FromImport', 'Extends'].includes(node.typename)) {
        const named = node['template'] as TemplateNode | undefined;
        if (named?.typename === 'Literal' && node.lineno !== undefined) {
          const value = String(named.value);
          const resolved = value.startsWith('./') || value.startsWith('../') ? path.posix.join(path.posix.dirname(file), value) : value;
          if (value === target || resolved === target) return node.lineno + 1;
        }
      }
      for (const field of node.fields ?? []) {
        const child = node[field];
        for (const item of Array.isArray(child) ? child : [child]) {
          if (typeof item === 'object' && item !== null && typeof (item as TemplateNode).typename === 'string') stack.push(item as TemplateNode);
        }
      }
    }
    return null;
  }
}

/** A parse or compile error of `file`: nunjucks gives these lines 1-based. */
function compileError(file: string, error: unknown): PromptTemplateError {
  const thrown = error as { message?: unknown; lineno?: unknown };
  const message = typeof thrown?.message === 'string' ? thrown.message : String(error);
  return new PromptTemplateError(file, typeof thrown?.lineno === 'number' ? thrown.lineno : null, message);
}
