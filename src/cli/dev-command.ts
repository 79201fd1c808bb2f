/**
 * `uhlp dev <definitions-dir> [--port N] [--host H]`: the core on embedded
 * defaults. Prints the URL once every pool is warm; SIGINT/SIGTERM stop it
 * cleanly, with no sandbox process left behind.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { startCore } from '../core/start-core.js';

export const DEV_USAGE = 'uhlp dev <definitions-dir> [--port N] [--host H] [--data-dir D] [--log-level L]';

/** How long `uhlp dev` waits for warm pools before it serves anyway. */
const READY_WAIT_MS = 60_000;

export async function devCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'log-level': { type: 'string' },
      driver: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new Error(`usage: ${DEV_USAGE}`);
  const config = loadConfig(positionals[0], values);
  const core = await startCore(config);

  let stopping = false;
  const stopped = new Promise<number>((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
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
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

  try {
    await core.whenReady(READY_WAIT_MS);
  } catch (error) {
    core.logger.warn({ err: (error as Error).message, readiness: core.sandboxes.readiness() }, 'serving before every pool is warm');
  }
  if (!stopping) {
    const apps = [...core.registry.snapshot.apps.keys()];
    process.stdout.write(`uhlp is ready at ${core.url} (apps: ${apps.join(', ') || 'none'})\n`);
  }
  return stopped;
}
