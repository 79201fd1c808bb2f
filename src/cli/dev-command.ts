/**
 * `uhlp dev <definitions-dir> [--port N] [--host H]`: the core on embedded
 * defaults, in dev mode. `uhlp serve` is the same core without the developer
 * conveniences; `uhlp start` runs it in the background. Both print the URL once
 * every pool is warm; SIGINT/SIGTERM (or an exit message on the spine socket)
 * stop them cleanly, with no sandbox process left behind. `uhlp dev` records
 * where it listens in its data directory, as `uhlp start` does, so that
 * `uhlp status`, `stop` and the client commands find it.
 */
import { loadConfig, type CoreConfig } from '../config.js';
import type { RunningCore } from '../core/start-core.js';
import type { CommandSpec } from './command-spec.js';
import { parseCommandLine, usageError } from './command-line.js';
import { CORE_FLAGS, CORE_NOTES, REGISTRY_FLAGS } from './core-flags.js';
import { EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK } from './exit-codes.js';
import { exitCodeOf } from './run-command.js';
import { clearRuntimeState, isProcessAlive, readRuntimeState, writeRuntimeState } from './runtime-state.js';

const FLAGS = { ...CORE_FLAGS, ...REGISTRY_FLAGS };

export const DEV_COMMAND: CommandSpec<typeof FLAGS> = {
  name: 'dev',
  summary: 'Run the core in the foreground on embedded defaults, in dev mode; Ctrl-C stops it and every sandbox',
  usage: ['<definitions-dir> [flags]', '--registry kubernetes [--namespace NS]... [flags]'],
  positionals: { min: 0, max: 1 },
  flags: FLAGS,
  examples: ['uhlp dev examples', 'uhlp dev examples --port 9080 --driver docker', 'UHLP_LLM_BASE_URL=http://127.0.0.1:11434/v1 uhlp dev my-apps --state redis://127.0.0.1:6379'],
  notes: [
    'A definitions directory holds apps/<appId>/app.yaml (docs/apps.md); the core serves its commits.',
    'Prints "uhlp is ready at <url>" once every pool is warm, then "operator routes at <url>" (the console, uhlp queues, optimize and mcp token: UHLP_OPERATOR_PORT, the port + 1 by default), and records both in <data-dir>/runtime.json.',
    ...CORE_NOTES,
  ],
};

export const SERVE_COMMAND: CommandSpec<typeof FLAGS> = {
  ...DEV_COMMAND,
  name: 'serve',
  summary: 'Run the core without dev conveniences (what uhlp start and a container run); refuses unisolated process sandboxes',
  examples: ['uhlp serve my-apps --host 0.0.0.0 --state redis://127.0.0.1:6379', 'uhlp serve --registry kubernetes --namespace shop --driver pod'],
  notes: CORE_NOTES,
};

/** Said once a core serves scripts that nothing contains but Node's permission model. */
const UNISOLATED_BANNER = [
  '',
  '!!! UNSAFE: sandboxes are NOT isolated on this host (bubblewrap cannot run here).',
  '!!! Scripts can reach the network and other processes of this machine.',
  '!!! Install bubblewrap (apt-get install bubblewrap) or use --driver docker; see docs/security.md.',
  '',
].join('\n');

/** How long `uhlp dev` waits for warm pools before it serves anyway. */
const READY_WAIT_MS = 60_000;
/** A failed start has closed what it opened; should anything still hold the process, it exits this much later all the same. */
const FAILED_START_EXIT_MS = 500;

export function devCommand(argv: string[]): Promise<number> {
  return runCore(DEV_COMMAND, argv, { devMode: true });
}

export function serveCommand(argv: string[]): Promise<number> {
  return runCore(SERVE_COMMAND, argv, { devMode: false });
}

async function runCore(spec: CommandSpec<typeof FLAGS>, argv: string[], mode: { devMode: boolean }): Promise<number> {
  const line = parseCommandLine(spec, argv);
  if (line.help !== undefined) {
    process.stdout.write(line.help);
    return EXIT_OK;
  }
  const { values, positionals } = line;
  if (positionals.length === 0 && values.registry !== 'kubernetes') throw usageError(spec, 'name a definitions directory (it holds apps/<appId>/app.yaml), or --registry kubernetes');
  // The environment is the process's: config.ts reads it.
  const config = loadConfig(positionals[0], values, undefined, mode);
  if (mode.devMode) {
    const previous = readRuntimeState(config.dataDir);
    if (previous !== undefined && previous.core.pid !== process.pid && isProcessAlive(previous.core.pid)) {
      process.stderr.write(`uhlp: a core already runs on ${config.dataDir} (pid ${previous.core.pid}, ${previous.url}); stop it (uhlp stop --data-dir ${config.dataDir}) or give another --data-dir\n`);
      return EXIT_FAILURE;
    }
  }
  // The core's modules load once the command line and the settings are read: --help and a bad flag answer at once.
  const { startCore } = await import('../core/start-core.js');
  if (config.driver === 'docker') {
    const { buildImages } = await import('../images/build-images.js');
    const { formatBuiltImages } = await import('../images/images-report.js');
    // Images are built locally (no registry); this is a no-op when their inputs did not change.
    const built = await buildImages({ onProgress: (text) => process.stderr.write(`${text}\n`) });
    process.stderr.write(`${formatBuiltImages(built)}\n`);
  }
  let requestStop: (reason: string) => void = () => undefined;
  let core: RunningCore;
  try {
    // In dev mode the std-body host runs as the core's child; `uhlp start` runs it as its own process.
    core = await startCore(config, { onExitRequest: () => requestStop('spine exit'), stdBodyChild: mode.devMode });
  } catch (error) {
    setTimeout(() => process.exit(exitCodeOf(error)), FAILED_START_EXIT_MS).unref();
    throw error;
  }

  let stopping = false;
  const stopped = new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      if (stopping) {
        core.logger.warn({ signal }, 'second signal: exiting now');
        process.exit(EXIT_INTERRUPTED);
      }
      stopping = true;
      core.logger.info({ signal }, 'stopping');
      core.close().then(
        () => resolve(EXIT_OK),
        (error: Error) => {
          core.logger.error({ err: error }, 'stop failed');
          resolve(EXIT_FAILURE);
        },
      );
    };
    requestStop = stop;
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });

  try {
    await core.whenReady(READY_WAIT_MS);
  } catch (error) {
    core.logger.warn({ err: (error as Error).message, readiness: core.sandboxes.readiness() }, 'serving before every pool is warm');
  }
  if (!stopping) {
    if (mode.devMode) recordDevCore(config, core);
    const apps = [...core.registry.snapshot.apps.keys()];
    if (core.sandboxes.isolation === 'none') process.stderr.write(UNISOLATED_BANNER);
    // One write: `uhlp start` reads both lines from the log.
    process.stdout.write(`uhlp is ready at ${core.url} (apps: ${apps.join(', ') || 'none'})\noperator routes at ${core.operatorUrl}\n`);
    if (core.console !== undefined) process.stdout.write(`console at ${core.console.url}\n`);
    for (const hint of startHints(config, core)) process.stderr.write(`${hint}\n`);
  }
  const code = await stopped;
  if (mode.devMode) forgetDevCore(config);
  return code;
}

/** `uhlp dev` in `<data-dir>/runtime.json`, as `uhlp start` records its processes. */
function recordDevCore(config: CoreConfig, core: RunningCore): void {
  writeRuntimeState(config.dataDir, {
    version: 1,
    mode: 'dev',
    startedAt: new Date().toISOString(),
    definitionsDir: config.definitionsDir,
    socketPath: config.spineSocket,
    url: core.url,
    operatorUrl: core.operatorUrl,
    core: { pid: process.pid, command: [process.execPath, ...process.argv.slice(1)], log: '' },
    stdBody: { pid: core.stdBodyPid ?? 0, command: [], log: '' },
  });
}

/** Clears the record when it is still this core's (a `uhlp stop` may have cleared it already). */
function forgetDevCore(config: CoreConfig): void {
  if (readRuntimeState(config.dataDir)?.core.pid === process.pid) clearRuntimeState(config.dataDir);
}

/** What a newcomer needs to hear once the core serves: no apps, held-back files, LLM routes with nothing to answer them. */
export function startHints(config: CoreConfig, core: Pick<RunningCore, 'registry'>): string[] {
  const hints: string[] = [];
  const snapshot = core.registry.snapshot;
  if (config.registry === 'git' && snapshot.apps.size === 0) {
    hints.push(`hint: no app is served from ${config.definitionsDir}: an app is apps/<appId>/app.yaml there, committed (the core serves commits and reloads on each); see docs/apps.md`);
  }
  if (snapshot.problems.length > 0) {
    const files = [...new Set(snapshot.problems.map((problem) => problem.file))];
    hints.push(`hint: ${files.join(', ')} ${files.length === 1 ? 'is' : 'are'} not served: ${snapshot.problems[0]!.path} ${snapshot.problems[0]!.reason}${snapshot.problems.length > 1 ? ` (and ${snapshot.problems.length - 1} more problems: the log and /readyz list them)` : ''}`);
  }
  const llmApps = [...snapshot.apps.values()].filter((app) => [...app.components.values()].some((component) => component.handler !== 'JIT' || component.llm !== undefined));
  if (llmApps.length > 0 && config.llm.baseUrl === undefined && config.llm.scriptFile === undefined) {
    hints.push(
      `hint: ${llmApps.map((app) => app.id).join(', ')} ${llmApps.length === 1 ? 'has' : 'have'} LLM components and no model answers them (they answer 500 UHLP_LLM_NO_SCRIPTED_ANSWER): ` +
        'set UHLP_LLM_BASE_URL to an OpenAI-compatible server (UHLP_LLM_MODELS maps model names), or UHLP_LLM_SCRIPT_FILE to scripted answers, or put llm-answers.yaml in the definitions directory',
    );
  } else if (llmApps.length > 0 && config.llm.baseUrl === undefined && config.llm.scriptFileSetting !== undefined) {
    hints.push(`LLM components answer from the scripted answers in ${config.llm.scriptFile} (${config.llm.scriptFileSetting}); UHLP_LLM_BASE_URL names a model server instead`);
  }
  return hints;
}
