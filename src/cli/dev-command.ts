/**
 * `uhlp dev <definitions-dir> [--port N] [--host H]`: the core on embedded
 * defaults, in dev mode. `uhlp serve` is the same core without the developer
 * conveniences; `uhlp start` runs it in the background. Both print the URL once
 * every pool is warm; SIGINT/SIGTERM (or an exit message on the spine socket)
 * stop them cleanly, with no sandbox process left behind.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { startCore } from '../core/start-core.js';
import { buildImages } from '../images/build-images.js';
import { formatBuiltImages } from '../images/images-report.js';

const CORE_FLAGS = '<definitions-dir>|--registry kubernetes [--namespace NS]... [--driver process|docker] [--unsafe-process-sandboxes] [--port N] [--host H] [--data-dir D] [--state memory|redis://...] [--pull REMOTE] [--ledger files|off] [--ledger-durability async|sync|fsync] [--ledger-retention SPEC] [--log-level L]';
export const DEV_USAGE = `uhlp dev ${CORE_FLAGS}`;
export const SERVE_USAGE = `uhlp serve ${CORE_FLAGS}`;

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

export function devCommand(argv: string[]): Promise<number> {
  return runCore(argv, { devMode: true, usage: DEV_USAGE });
}

export function serveCommand(argv: string[]): Promise<number> {
  return runCore(argv, { devMode: false, usage: SERVE_USAGE });
}

async function runCore(argv: string[], mode: { devMode: boolean; usage: string }): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'log-level': { type: 'string' },
      driver: { type: 'string' },
      state: { type: 'string' },
      ledger: { type: 'string' },
      'ledger-durability': { type: 'string' },
      'ledger-retention': { type: 'string' },
      pull: { type: 'string' },
      registry: { type: 'string' },
      namespace: { type: 'string', multiple: true },
      'unsafe-process-sandboxes': { type: 'boolean' },
    },
  });
  if (positionals.length > 1 || (positionals.length === 0 && values.registry !== 'kubernetes')) throw new Error(`usage: ${mode.usage}`);
  // The environment is the process's: config.ts reads it.
  const config = loadConfig(positionals[0], values, undefined, { devMode: mode.devMode });
  if (config.driver === 'docker') {
    // Images are built locally (no registry); this is a no-op when their inputs did not change.
    const built = await buildImages({ onProgress: (line) => process.stderr.write(`${line}\n`) });
    process.stderr.write(`${formatBuiltImages(built)}\n`);
  }
  let requestStop: (reason: string) => void = () => undefined;
  // In dev mode the std-body host runs as the core's child; `uhlp start` runs it as its own process.
  const core = await startCore(config, { onExitRequest: () => requestStop('spine exit'), stdBodyChild: mode.devMode });

  let stopping = false;
  const stopped = new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      if (stopping) {
        core.logger.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      stopping = true;
      core.logger.info({ signal }, 'stopping');
      core.close().then(
        () => resolve(0),
        (error: Error) => {
          core.logger.error({ err: error }, 'stop failed');
          resolve(1);
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
    const apps = [...core.registry.snapshot.apps.keys()];
    if (core.sandboxes.isolation === 'none') process.stderr.write(UNISOLATED_BANNER);
    process.stdout.write(`uhlp is ready at ${core.url} (apps: ${apps.join(', ') || 'none'})\n`);
    if (core.console !== undefined) process.stdout.write(`console at ${core.console.url}\n`);
  }
  return stopped;
}
