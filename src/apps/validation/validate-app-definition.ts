/**
 * Validates one AppDefinition document: first against the TypeBox schema (with
 * defaults applied), then the references and rules a schema cannot express.
 * Every problem names the file, the JSON path and the reason, so that a broken
 * app can be fixed from the log line alone.
 */
import { Value } from '@sinclair/typebox/value';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import path from 'node:path';
import { AppDefinitionDocument } from '../schema/app-definition-schema.js';
import { gitSourceProblems } from '../git/git-source.js';
import { compileRoutePattern, RoutePatternError } from '../../sources/http/route-pattern.js';
import { declaredPathProblem } from '../../execution/declared-outputs.js';
import { fallbackProblems, llmComponentProblems } from './validate-llm-component.js';
import { secretProblems } from './validate-secrets.js';
import { isFederatedToolName, mcpServerProblems, type AppSecretCheck } from './validate-mcp-servers.js';
import { csComponentProblems } from './validate-cs-component.js';
import { uiProblems } from './validate-ui.js';
import { sourceRouteProblems } from './validate-source-route.js';
import { flowProblems } from './validate-flow.js';
import { schemaErrorReason } from '../../shared/schema-error-reason.js';
import { pathGlobProblem } from '../../shared/path-glob.js';

const ROUTE_KINDS = ['http', 'cron', 'queue', 'callback', 'trigger'] as const;
import { workflowComponentProblems } from './validate-workflow-component.js';
import { findTool } from '../../mcp/tool-catalog.js';

export interface DefinitionProblem {
  /** File path relative to the definitions directory. */
  file: string;
  /** JSON pointer of the value at fault; `/` for the whole document. */
  path: string;
  reason: string;
}

/** Paths the core answers itself; no app may take them as its prefix. */
export const RESERVED_PATH_PREFIXES = ['/healthz', '/readyz', '/metrics', '/mcp', '/_uhlp'] as const;

const checkDocument = TypeCompiler.Compile(AppDefinitionDocument);

export type ValidationResult =
  | { ok: true; document: AppDefinitionDocument }
  | { ok: false; problems: DefinitionProblem[] };

export interface ValidateOptions {
  /** The file, relative to the definitions directory, e.g. `apps/shop/app.yaml`. */
  file: string;
  /** The app directory name: the appId the file must declare. */
  appDirName: string;
  /** Tells whether an app-relative file exists in the revision. */
  fileExists(appRelativePath: string): boolean;
  /** Reads an app-relative file of the revision (output schemas are checked); undefined when it cannot. */
  readFile?(appRelativePath: string): string | undefined;
  /**
   * Whether the app's own MCP secrets hold a secret (and key): remote servers'
   * secretRefs are checked against it. @defaultValue not checked (readers that hold no secrets)
   */
  hasSecret?: AppSecretCheck;
  /**
   * The operator's UHLP_LLM_ALLOW_PRIVATE: with it, an app's model endpoint
   * given as a loopback or private IP literal is judged at load too.
   * @defaultValue not known: only metadata and link-local literals are refused here
   */
  llmAllowPrivate?: readonly string[];
}

export function validateAppDefinition(raw: unknown, options: ValidateOptions): ValidationResult {
  const { file } = options;
  const document = Value.Default(AppDefinitionDocument, structuredClone(raw));
  if (!checkDocument.Check(document)) {
    const problems: DefinitionProblem[] = [];
    for (const error of checkDocument.Errors(document)) {
      problems.push({ file, path: error.path || '/', reason: schemaErrorReason(error) });
      if (problems.length >= 20) break;
    }
    return { ok: false, problems: dedupeByPath(problems) };
  }
  const problems = semanticProblems(document, options);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, document };
}

function semanticProblems(doc: AppDefinitionDocument, options: ValidateOptions): DefinitionProblem[] {
  const { file } = options;
  const problems: DefinitionProblem[] = [];
  const add = (at: string, reason: string): void => void problems.push({ file, path: at, reason });
  const { spec } = doc;

  if (doc.metadata.name !== options.appDirName) {
    add('/metadata/name', `must equal the app directory name "${options.appDirName}"`);
  }

  const prefix = spec.ingress.pathPrefix;
  if (prefix !== undefined) {
    if (prefix.length > 1 && prefix.endsWith('/')) add('/spec/ingress/pathPrefix', 'must not end with "/"');
    const reserved = RESERVED_PATH_PREFIXES.find((r) => prefix === r || prefix.startsWith(`${r}/`));
    if (reserved) add('/spec/ingress/pathPrefix', `"${reserved}" is reserved for the core`);
  }

  const pools = new Map<string, number>();
  const runners = new Map(spec.pools.map((pool) => [pool.name, pool.runner]));
  spec.pools.forEach((pool, i) => {
    if (pools.has(pool.name)) add(`/spec/pools/${i}/name`, `duplicate pool name "${pool.name}"`);
    pools.set(pool.name, i);
    if (pool.minWarm > pool.maxSize) add(`/spec/pools/${i}/minWarm`, `minWarm ${pool.minWarm} is over maxSize ${pool.maxSize}`);
  });

  const components = new Set<string>();
  spec.components.forEach((component, i) => {
    const at = `/spec/components/${i}`;
    if (components.has(component.id)) add(`${at}/id`, `duplicate component id "${component.id}"`);
    components.add(component.id);
    if (!pools.has(component.pool)) add(`${at}/pool`, `pool "${component.pool}" is not declared in spec.pools`);
    else {
      // JIT scripts run in the jit-runner (JavaScript) or the python runner (.py), cs-js bundles in the csjs runner;
      // prompts and workflows in the llm-orchestrator.
      const python = component.handler === 'JIT' && component.cs === undefined && component.jit !== undefined && component.jit.script.endsWith('.py');
      const wanted = component.handler === 'JIT' ? (component.cs !== undefined ? 'csjs' : python ? 'python' : 'jit') : 'llm';
      if (runners.get(component.pool) !== wanted) {
        const what = python ? 'JIT component with a Python script' : `${component.handler} component`;
        add(`${at}/pool`, `a ${what} runs in a pool with runner: ${wanted}; pool "${component.pool}" has runner: ${runners.get(component.pool)}`);
      }
    }
    if (component.handler === 'LLM') for (const [where, reason] of llmComponentProblems(spec, component, at, options)) add(where, reason);
    if (component.handler === 'WORKFLOW') problems.push(...workflowComponentProblems(spec, component, at, options));
    for (const [where, reason] of fallbackProblems(spec, component, at, options)) add(where, reason);
    if (component.flow !== undefined) for (const [where, reason] of flowProblems(component.flow, undefined)) add(`${at}/flow/${where}`, reason);
    const handlerKey = { JIT: 'jit', LLM: 'llm', WORKFLOW: 'workflow' }[component.handler] as 'jit' | 'llm' | 'workflow';
    if (component.cs !== undefined) for (const [where, reason] of csComponentProblems(component, at)) add(where, reason);
    else if (component[handlerKey] === undefined) add(`${at}/${handlerKey}`, `required for handler ${component.handler}`);
    component.declaredOutputs?.forEach((declared, j) => {
      const problem = declaredPathProblem(declared.path);
      if (problem !== undefined) add(`${at}/declaredOutputs/${j}/path`, `"${declared.path}" ${problem}`);
    });
    if (component.handler === 'JIT' && component.jit) {
      const script = component.jit.script;
      const normalized = path.posix.normalize(script);
      if (path.posix.isAbsolute(script) || normalized.startsWith('../') || normalized === '..') {
        add(`${at}/jit/script`, `"${script}" leaves the app directory`);
      } else if (!/\.(m?js|py)$/.test(script)) {
        add(`${at}/jit/script`, `"${script}" must be a .js or .mjs ES module, or a .py Python module`);
      } else if (!options.fileExists(normalized)) {
        add(`${at}/jit/script`, `"${script}" does not exist in the app directory`);
      }
    }
  });

  for (const [where, reason] of mcpServerProblems(spec, options.fileExists, options.hasSecret)) add(where, reason);
  for (const [where, reason] of secretProblems(spec, options.hasSecret, options.llmAllowPrivate)) add(where, reason);
  const state = spec.capabilities?.state;
  for (const field of ['write', 'forbidden'] as const) {
    // A glob the schema takes but the matcher cannot compile would otherwise fail the app's first write.
    state?.[field]?.forEach((glob, i) => {
      const problem = pathGlobProblem(glob);
      if (problem !== undefined) add(`/spec/capabilities/state/${field}/${i}`, `"${glob.slice(0, 100)}" ${problem}`);
    });
  }
  for (const [where, reason] of uiProblems(spec)) add(where, reason);

  const riskNames = new Set<string>();
  spec.tools?.forEach((tool, i) => {
    if (findTool(tool.name) === undefined && !isFederatedToolName(spec, tool.name)) add(`/spec/tools/${i}/name`, `no tool named "${tool.name}"`);
    if (riskNames.has(tool.name)) add(`/spec/tools/${i}/name`, `${tool.name} is listed twice`);
    riskNames.add(tool.name);
  });

  const seenRoutes = new Set<string>();
  const seenSources = new Set<string>();
  const componentPools = new Map(spec.components.map((c) => [c.id, spec.pools.find((p) => p.name === c.pool)]));
  spec.routes.forEach((route, i) => {
    const at = `/spec/routes/${i}`;
    if (!components.has(route.component)) add(`${at}/component`, `component "${route.component}" is not declared in spec.components`);
    const kinds = ROUTE_KINDS.filter((kind) => route[kind] !== undefined);
    if (kinds.length !== 1) {
      add(at, kinds.length === 0 ? `must declare one source (${ROUTE_KINDS.join(', ')})` : `declares ${kinds.join(' and ')}; a route has one source`);
      return;
    }
    if (route.flow !== undefined) {
      const parameters = route.http !== undefined ? routeParameters(route.http.path) : undefined;
      for (const [where, reason] of flowProblems(route.flow, parameters)) add(`${at}/flow/${where}`, reason);
    }
    if (!route.http) {
      const pool = componentPools.get(route.component);
      for (const [where, reason] of sourceRouteProblems(route, pool)) add(`${at}/${where}`, reason);
      const identity = route.queue ? `queue ${route.queue.name}` : route.cron ? `cron ${route.cron.jobId}` : route.callback ? `callback ${route.callback.name}` : `trigger ${route.trigger!.event} ${route.component}`;
      if (seenSources.has(identity)) add(`${at}/${kinds[0]}`, `duplicate route ${identity}`);
      seenSources.add(identity);
      return;
    }
    try {
      compileRoutePattern(route.http.path);
    } catch (error) {
      if (error instanceof RoutePatternError) add(`${at}/http/path`, error.message);
      else throw error;
    }
    const key = `${route.http.method} ${route.http.path}`;
    if (seenRoutes.has(key)) add(`${at}/http`, `duplicate route ${key}`);
    seenRoutes.add(key);
  });

  // The Git source is handed to git: only URLs, refs and paths that cannot act as options or local access.
  if (spec.source?.git) {
    for (const problem of gitSourceProblems(spec.source.git)) add(`/spec/source/git/${problem.field}`, `${problem.code}: ${problem.message}`);
  }
  return problems;
}

/** The parameter names of an HTTP path pattern; an empty set when the pattern does not compile (reported on its own). */
function routeParameters(source: string): ReadonlySet<string> {
  try {
    return new Set(compileRoutePattern(source).segments.flatMap((segment) => (segment.kind === 'param' ? [segment.name] : [])));
  } catch (error) {
    if (error instanceof RoutePatternError) return new Set();
    throw error;
  }
}

function dedupeByPath(problems: DefinitionProblem[]): DefinitionProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => (seen.has(p.path) ? false : (seen.add(p.path), true)));
}
