/**
 * The jit-runner's executor: imports the component's script from the mounted
 * revision (script-loader.ts) and calls its function with the request data and
 * the context, `ctx.tools` bound to the execution's token and `ctx.workspace`
 * as absolute paths in the sandbox's writable tree. Code generated from an LLM
 * component is called with that component's template variables and may decline
 * an input (generated-code.ts).
 */
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DefinitionFile, ExecuteRequest } from '../../contract/execute-contract.js';
import type { Executor } from '../kit/executor.js';
import { ExecutionTools } from '../kit/tools-client.js';
import { CandidateModules, declineInput, generatedCodeEvent, readCandidateTask } from './generated-code.js';
import { ScriptLoader, type ComponentFunction, type ScriptRef } from './script-loader.js';
import { errorResult, resultFromThrown, resultFromValue } from '../kit/script-result.js';
import { scriptPlace, type ScriptPlace } from '../kit/script-stack.js';
import { UhlpError } from '../../shared/errors.js';
import { ExecuteBadRequestError, ScriptLoadFailedError, ScriptNotFoundError } from '../../shared/runner-errors.js';

export interface JitExecutorOptions {
  /** The app's revisions, `<root>/<revision>/<app files>` (read-only). */
  readonly definitionsRoot: string;
  /**
   * The sandbox's writable tree; each execution's `context.workspace` names its
   * directories in it. @defaultValue none: executions get no workspace
   */
  readonly workDir?: string;
  /**
   * `definitionsRoot` is a writable cache, not a mount: a script missing there is
   * read through `core.state.getDefinitionFileContent` (with the execution's token,
   * bound to its revision) and written there before it is imported. Pods use it:
   * they share no file system with the core. A script the core sent with the
   * request (`definitionFiles`) is kept without that round trip. Only the script
   * file itself is fetched; a script that imports sibling files needs the mount.
   * @defaultValue false
   */
  readonly definitionsViaMcp?: boolean;
  /** Called with each script kept in the cache, once written (the runner's walk of its tree records it). @defaultValue none */
  readonly kept?: (file: string) => void;
}

const READ_TOOL = 'core.state.getDefinitionFileContent';
/** The revision of the warm-up script: all zeros, which no commit id is. */
const WARM_UP_REVISION = '0'.repeat(40);

export function createJitExecutor(options: JitExecutorOptions): Executor {
  const loader = new ScriptLoader(options.definitionsRoot);
  const candidates = new CandidateModules();

  /** The execution's directories as absolute paths inside the work tree; none when either is missing or leaves it. */
  function workspaceOf(sent: { tmpDir: string; outputDir: string } | undefined): { tmpDir: string; outputDir: string } | undefined {
    const root = options.workDir;
    if (!root || !sent) return undefined;
    const tmpDir = path.resolve(root, sent.tmpDir);
    const outputDir = path.resolve(root, sent.outputDir);
    const inside = (dir: string): boolean => dir.startsWith(path.resolve(root) + path.sep);
    return inside(tmpDir) && inside(outputDir) ? { tmpDir, outputDir } : undefined;
  }

  /**
   * The script's function. In a cache (`definitionsViaMcp`) a script the core sent along is kept
   * unless it is there already (one exists check: no failed load and its error first); one neither
   * kept nor sent is read through MCP.
   */
  async function loadScript(ref: ScriptRef, sentFiles: readonly DefinitionFile[] | undefined, tools: ExecutionTools): Promise<ComponentFunction> {
    if (!options.definitionsViaMcp || loader.isLoaded(ref)) return loader.load(ref);
    const sent = sentFiles?.find((file) => file.path === ref.script);
    if (sent !== undefined) {
      const file = loader.resolve(ref);
      if (!existsSync(file)) keepScript(file, Buffer.from(sent.content, 'utf8'), options.kept);
      return loader.load(ref);
    }
    return loader.load(ref).catch(async (error: unknown) => {
      if (!(error instanceof ScriptNotFoundError)) throw error;
      await fetchScript(loader.resolve(ref), ref.script, ref.revision, tools, options.kept);
      return loader.load(ref);
    });
  }

  /** A revision's app directory as its scripts' stacks name it (a file URL) and as messages may (its path). */
  const places = new Map<string, ScriptPlace>();
  function placeOf(revision: string): ScriptPlace {
    let place = places.get(revision);
    if (place === undefined) {
      const appDir = path.resolve(options.definitionsRoot, revision);
      const root = path.resolve(options.definitionsRoot);
      place = scriptPlace([`${pathToFileURL(appDir).href}/`, `${appDir}${path.sep}`, `${pathToFileURL(root).href}/`, `${root}${path.sep}`]);
      if (places.size >= 64) places.delete(places.keys().next().value as string);
      places.set(revision, place);
    }
    return place;
  }

  const execute: Executor = async (request, tools) => {
    const task = request.context.taskDetails;
    if (!task || task.handler !== 'JIT' || !task.script) {
      return errorResult(new ExecuteBadRequestError('context.taskDetails must name a JIT script'));
    }
    // A candidate of the optimization oracle under verification: its source and one sample's inputs.
    const candidate = readCandidateTask(task.oracle);
    if (candidate !== undefined && 'problem' in candidate) return errorResult(new ExecuteBadRequestError(candidate.problem));
    const ref = { revision: task.revision, script: task.script, exportName: task.function };
    // A script's first load (kept from the core or read through MCP, then imported) is reported as metrics.script_load_ms.
    const loadStarted = candidate === undefined && !loader.isLoaded(ref) ? performance.now() : undefined;
    let fn;
    try {
      fn = candidate !== undefined ? await candidates.load(candidate.source) : await loadScript(ref, request.definitionFiles, tools);
    } catch (error) {
      // Only the loaders throw registry errors here (script-loader.ts, generated-code.ts): each is the execution's answer,
      // and when an import failed, Node's message names the sandbox's paths: they are made relative.
      if (error instanceof ScriptLoadFailedError && candidate === undefined) return errorResult(new ScriptLoadFailedError(placeOf(task.revision).message(error.message), error.details));
      if (error instanceof UhlpError) return errorResult(error);
      throw error;
    }
    const scriptLoadMs = loadStarted === undefined ? undefined : Math.round((performance.now() - loadStarted) * 1000) / 1000;
    const workspace = workspaceOf(request.context.workspace);
    // Temporary files of the script (and of anything it uses) go to the turn's own directory.
    // With concurrency above 1 executions share the process environment: the last one set wins.
    if (workspace) process.env.TMPDIR = process.env.TEMP = process.env.TMP = workspace.tmpDir;
    // Code generated from an llm block (which the core sends along) maps the block's template variables, and may decline.
    const generated = task.llm !== undefined;
    const event = candidate !== undefined ? candidate.inputs : generated ? generatedCodeEvent(request) : request.requestData;
    // Scripts get the context as sent, with `workspace` as absolute paths and `tools` (ctx.tools.call) bound to this execution's token.
    let value: unknown;
    const runStarted = performance.now();
    try {
      value = await fn(event, {
        ...request.context,
        ...(workspace ? { workspace } : {}),
        tools: { call: (name: string, args?: Record<string, unknown>) => tools.call(name, args) },
        ...(generated ? { fallback: declineInput } : {}),
      });
    } catch (thrown) {
      // Where the script threw, in its own files (a candidate's source has no file: none).
      return resultFromThrown(thrown, candidate === undefined ? placeOf(task.revision) : undefined);
    }
    const result = resultFromValue(value);
    // For the core's trace: the script's own run, and its first load when this execution did it (offsets from the
    // request's arrival, which the runner server's client knows).
    const timings =
      tools instanceof ExecutionTools
        ? {
            run: { start_ms: tools.offset(runStarted), duration_ms: Math.round((performance.now() - runStarted) * 1000) / 1000 },
            ...(loadStarted !== undefined && scriptLoadMs !== undefined ? { script_load: { start_ms: tools.offset(loadStarted), duration_ms: scriptLoadMs } } : {}),
          }
        : undefined;
    if (timings === undefined && scriptLoadMs === undefined) return result;
    return { ...result, metrics: { ...result.metrics, ...(timings !== undefined ? { timings } : {}), ...(scriptLoadMs !== undefined ? { script_load_ms: scriptLoadMs } : {}) } };
  };
  // A pod's first script is kept in the cache and imported: its warm-up is an execution of a script
  // of its own (at a revision no commit has), sent along as the core sends a pod's first script.
  if (options.definitionsViaMcp) execute.warmUpRequest = warmUpRequest();
  return execute;
}

function warmUpRequest(): ExecuteRequest {
  return {
    requestId: 'warm-up',
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'warm-up', triggerEvent: 'warm-up', payload: {} } },
    context: {
      appId: 'warm-up',
      componentId: 'warm-up',
      // Never called: the script uses no tool.
      mcp_endpoint: 'http://127.0.0.1:9/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'production' },
      taskDetails: { handler: 'JIT', revision: WARM_UP_REVISION, script: 'warm-up.js', function: 'default' },
    },
    definitionFiles: [{ path: 'warm-up.js', content: 'export default () => ({ warm: true });\n' }],
  };
}

/** Reads the script through MCP at the execution's revision and keeps it at `file` (written whole, then renamed: a concurrent import never sees half). */
async function fetchScript(file: string, script: string, revision: string, tools: ExecutionTools, kept: ((file: string) => void) | undefined): Promise<void> {
  let answer: Record<string, unknown>;
  try {
    answer = await tools.call(READ_TOOL, { path: script });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'UHLP_DEFINITION_FILE_NOT_FOUND') {
      throw new ScriptNotFoundError(`script "${script}" does not exist in revision ${revision.slice(0, 12)}`);
    }
    throw new ScriptLoadFailedError(`script "${script}" could not be read from the core: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (answer.revision !== revision || typeof answer.content !== 'string') {
    throw new ScriptLoadFailedError(`the core answered script "${script}" for another revision or without content`);
  }
  keepScript(file, answer.encoding === 'base64' ? Buffer.from(answer.content, 'base64') : Buffer.from(answer.content, 'utf8'), kept);
}

/**
 * Writes a script into the cache whole, then renames it: a concurrent import never sees half.
 * Synchronous: three calls on one small file cost less on the event loop than three trips to
 * libuv's thread pool, and this is on a pod's first request.
 */
function keepScript(file: string, bytes: Buffer, kept: ((file: string) => void) | undefined): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.part`;
  writeFileSync(partial, bytes, { mode: 0o444 });
  renameSync(partial, file);
  kept?.(file);
}
